"""Render the Kubernetes plan: every object as ``kubernetes/<kind>-<name>.yaml`` (cluster-scoped: ``proxy-cluster.yaml``,
``namespace-egress-proxy.yaml``) or ``kubernetes/<kind>-<namespace>.<name>.yaml`` (namespaced:
``configmap-openshift-config.user-ca-bundle.yaml``), and ``squid.conf``.

Proxy credentials are never rendered: objects that carry them at deploy time say so in a comment.
"""
from __future__ import annotations

import json

from ...errors import EgressError
from ..options import left_out_text
from .api_allowlist import generic_service, kkp_cluster_patch
from .cluster_proxy import aks_http_proxy_config, kkp_seed_patch, kubeadm_proxy_env, openshift_proxy, openshift_trusted_ca
from .compile import KubernetesPlan
from .manifests import egress_proxy_objects
from .render_yaml import dump
from ...probe.job import probe_objects

CREDENTIALS_NOTE = "# At deploy the proxy URLs carry the credentials of the secret egress-matrix:proxyCredentials (never rendered).\n"
PATCH_NOTE = "# A server-side-apply patch of an object the platform owns: only these fields are set.\n"


def objects(plan: KubernetesPlan) -> list[tuple[dict, bool]]:
    """(object, is a patch) for everything the target applies, credentials left out."""
    out: list[tuple[dict, bool]] = []
    if plan.egress_proxy:
        out += [(o, False) for o in egress_proxy_objects(plan.egress_proxy)]
    cp = plan.cluster_proxy
    if cp:
        if "openshift" in cp.kinds:
            out.append((openshift_proxy(cp), True))
            if (ca := openshift_trusted_ca(cp)) is not None:
                out.append((ca, True))  # the installer may have created it (additionalTrustBundle)
        if (seed := kkp_seed_patch(cp)) is not None:
            out.append((seed, True))
        if (env := kubeadm_proxy_env(cp)) is not None:
            out.append((env, False))
    if plan.api_allowlist:
        allowlist = plan.api_allowlist
        out.append((kkp_cluster_patch(allowlist), True) if allowlist.mode == "kkp" else (generic_service(allowlist), False))
    out += [(o, False) for o in probe_objects(plan.probe)]
    return out


class FileNameCollision(EgressError):
    """Two objects would be written to one file: one would silently replace the other."""


def file_name(obj: dict) -> str:
    """One file per object, named so that no two objects share one: every kind rendered here is one CamelCase word (no
    '-' or '.'), and a namespace is a DNS label (no '.'; kubernetes.io, "Object Names and IDs"), so the kind ends at the
    first '-' and the namespace at the next '.'; a name may hold '-' and '.'. The old names (``<kind>-_cluster-<name>.yaml``, ``<kind>-<namespace>-<name>.yaml``) could collide: ConfigMap
    'b-c' in namespace 'a' and ConfigMap 'c' in namespace 'a-b'."""
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return f"kubernetes/{obj['kind'].lower()}-{f'{namespace}.' if namespace else ''}{meta['name']}.yaml"


def render(plan: KubernetesPlan) -> dict[str, str]:
    files: dict[str, str] = {}
    carries_credentials = bool(plan.cluster_proxy and plan.cluster_proxy.credentials)
    for obj, patch in objects(plan):
        name = file_name(obj)
        if name in files:  # kinds named alike in two API groups (one namespaced, one not): a bug here, not the user's
            meta = obj["metadata"]
            raise FileNameCollision(f"{name}: two Kubernetes objects ({obj['kind']} '{meta.get('namespace', '')}/{meta['name']}' and another) "
                                    "would be written to this one file, so one would replace the other; nothing was written. Fix: this is "
                                    "a defect of egress-matrix, not of the stack: report it with the stack file")
        header = PATCH_NOTE if patch else ""
        if carries_credentials and obj["kind"] in ("Proxy", "Seed", "Secret"):
            header += CREDENTIALS_NOTE
        files[name] = header + dump(obj)
    if plan.egress_proxy:
        files["kubernetes/squid.conf"] = plan.egress_proxy.squid_conf
        if plan.egress_proxy.not_proxied:
            files["kubernetes/not-proxied.txt"] = "".join(f"{n.requirement}: {n.reason}\n" for n in plan.egress_proxy.not_proxied)
        if plan.egress_proxy.left_out:
            files["kubernetes/left-out.txt"] = left_out_text("The egress proxy", plan.egress_proxy.left_out)
    cp = plan.cluster_proxy
    if cp and cp.openshift_status_no_proxy is not None:
        files["kubernetes/openshift-status-noproxy.txt"] = cp.openshift_status_no_proxy + "\n"
    if cp and (aks := aks_http_proxy_config(cp)) is not None:
        files["kubernetes/aks-http-proxy-config.json"] = json.dumps(aks, indent=2) + "\n"
    if plan.api_allowlist:
        a = plan.api_allowlist
        files["kubernetes/api-server-allowlist.txt"] = "".join(
            [f"mode: {a.mode}\n", f"effective loadBalancerSourceRanges: {','.join(a.effective)}\n", *(f"warning: {w}\n" for w in a.warnings)])
    return files
