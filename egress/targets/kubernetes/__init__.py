"""Kubernetes: the allowlisting egress proxy (Squid), the cluster's own proxy settings, the API-server allowlist.

squid.py         requirements -> Squid ACLs            egress_proxy.py  the proxy's plan and squid.conf
manifests.py     the proxy's Deployment, Service, ...  cluster_proxy.py OpenShift Proxy, KKP node, AKS, kubeadm settings
openshift_checks.py  the operator's validation         api_allowlist.py KKP's apiServerAllowedIPRanges, generic Service
compile.py / render.py / evaluate.py: the target's entry points (DESIGN.md, "Targets")
"""
from __future__ import annotations

from typing import Iterable, Mapping

from ...models import ROLES, Catalog, Requirement
from ...redact import redact
from ..options import left_out_lines
from ..verdict import Verdict
from .deployed import artefacts as deployed_artefacts
from .compile import KubernetesPlan, check_deploy_settings, compile_kubernetes, enforced
from .evaluate import evaluate as evaluate_artefacts
from .render import render

NAME = "kubernetes"


def evaluate(artefacts: Mapping[str, str], requirements: Iterable[Requirement], catalog: Catalog) -> Verdict:
    """The rendered squid.conf judged against the requirements the egress proxy enforces."""
    return evaluate_artefacts(artefacts, requirements)


def left_out_notes(plan: KubernetesPlan) -> tuple:
    return tuple(plan.egress_proxy.left_out) if plan.egress_proxy else ()


def summary(plan: KubernetesPlan) -> str:
    parts = []
    if plan.egress_proxy:
        p = plan.egress_proxy
        groups = sum(1 for role, _ in p.role_sources if role not in ROLES)
        sources = f"{len(p.role_sources) - groups} role(s)" + (f" and {groups} source group(s)" if groups else "")
        parts.append(f"egress proxy: {len(p.acls)} ACLs for {sources}, {len(p.not_proxied)} requirement(s) not proxied")
    if plan.cluster_proxy:
        parts.append(f"cluster proxy: {', '.join(plan.cluster_proxy.kinds)}")
    if plan.api_allowlist:
        parts.append(f"API allowlist ({plan.api_allowlist.mode}): {len(plan.api_allowlist.effective)} range(s)")
    if plan.probe:
        parts.append(f"probe Job(s) in namespace {plan.probe[0].namespace}: {', '.join(j.name for j in plan.probe)}")
    lines = ["; ".join(parts), *left_out_lines("kubernetes", plan.egress_proxy.left_out if plan.egress_proxy else ())]
    if plan.api_allowlist:
        lines += [f"  warning: {w}" for w in plan.api_allowlist.warnings]
    reading = [j for j in plan.probe or () if j.credentials]
    if reading:
        from ...probe.job import credentials_howto

        lines.append(f"  note: {', '.join(j.name for j in reading)} read the proxy credentials from a Secret; applying the render yourself, "
                     f"create it first: {credentials_howto(reading[0].namespace)}")
    return redact("\n".join(lines))


__all__ = ["NAME", "deployed_artefacts", "KubernetesPlan", "check_deploy_settings", "compile_kubernetes", "enforced", "evaluate", "left_out_notes", "render", "summary"]
