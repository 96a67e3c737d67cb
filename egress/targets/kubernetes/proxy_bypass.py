"""Destinations the cluster must reach directly are in the noProxy its distribution really applies.

Some vendor documents say a destination must not go through the cluster-wide proxy (OpenShift on vSphere: vCenter; the
entry's ``direct`` field carries why and the citation). A stack that sets a cluster proxy is refused when the noProxy
the distribution applies would send such a destination through the proxy, judged as the cluster's Go clients judge it
(``no_proxy_match.bypass``: a CIDR entry never covers a host name, ``name:port`` covers that port only).

Which noProxy, and whose connections it governs (the roles checked):
- openshift: the Proxy's ``status.noProxy`` the network operator writes (noproxy.py); the cluster's components on the
  control plane and the nodes read it.
- kkp: the Seed datacenter's ``node.noProxy``; only the user cluster's nodes get it (the seed's own components take the
  KubermaticConfiguration's proxy, which the stack does not set).
- kubeadm: the NO_PROXY of containerd's and kubelet's environment on the worker nodes.
- aks: the stack's noProxy plus what AKS adds itself (observed values, ``proxy_path.kind_no_proxy``).
The noProxy lists and who uses each proxy (the kind's roles, and every source group: node pools) are egress/proxy_path.py's
(explain, export --for proxy), so the check and those commands never disagree: only HTTP and HTTPS use a forward proxy
(UDP, and TCP that is not HTTP, connect directly whatever noProxy says), so only those requirements are checked.
"""
from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Iterable, Optional

from ...errors import EgressError
from ...models import Catalog, Entry, Requirement
from ...no_proxy_match import bypass, split_host_port
from ...profile import Profile
from ...proxy_path import kind_no_proxy, uses_proxy

if TYPE_CHECKING:  # cluster_proxy calls this module
    from .cluster_proxy import ClusterProxyPlan

WHOSE = {"openshift": "the OpenShift Proxy's status.noProxy", "kkp": "the KKP Seed datacenter's node.noProxy",
         "kubeadm": "the nodes' NO_PROXY (containerd, kubelet)", "aks": "the AKS cluster's noProxy"}


class DirectPathError(EgressError):
    """A destination a vendor document says the cluster must reach directly would go through the cluster-wide proxy."""


def applied_no_proxy(plan: "ClusterProxyPlan", profile: Profile) -> dict[str, str]:
    """clusterProxy kind -> the noProxy that kind of cluster really applies."""
    return {kind: ",".join(kind_no_proxy(kind, plan, profile)[0]) for kind in plan.kinds}


def _direct_entry(catalog: Catalog, requirement: Requirement) -> Optional[Entry]:
    for entry_id in requirement.entry_ids:
        entry = next((e for e in catalog.entries if e.id == entry_id), None)
        if entry is not None and entry.direct is not None:
            return entry
    return None


def _named_ports(no_proxy: str) -> set[int]:
    """The ports ``name:port`` / ``ip:port`` entries name: the only ports where the answer can differ."""
    ports = set()
    for entry in no_proxy.split(","):
        split = split_host_port(entry.strip())
        if split is not None and split[1].isdigit():
            ports.add(int(split[1]))
    return ports


def proxied_port(no_proxy: str, requirement: Requirement) -> Optional[int]:
    """A port of ``requirement`` whose connection would use the proxy (the lowest), or None when all go direct. Exact for
    ranges: every port no entry names behaves alike, so one of them stands for the rest."""
    named = _named_ports(no_proxy)
    for rng in requirement.ports:
        candidates = sorted(p for p in named if rng.start <= p <= rng.end)
        unnamed = next((p for p in range(rng.start, min(rng.end, rng.start + len(named)) + 1) if p not in named), None)
        for port in sorted(candidates + ([unnamed] if unnamed is not None else [])):
            if bypass(no_proxy, requirement.destination, port) is None:
                return port
    return None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _fix(host: str, stack_no_proxy: tuple[str, ...]) -> str:
    if _is_ip(host):
        return f"add {host} (or a CIDR holding it) to egress-matrix:noProxy"
    cidrs = any("/" in entry for entry in stack_no_proxy)  # perhaps meant to hold the host's address: say why it does not
    return f"add {host} to egress-matrix:noProxy" + (" (a CIDR entry never covers a host name: the clients match the name they connect to)" if cidrs else "")


def check_direct_paths(catalog: Catalog, plan: "ClusterProxyPlan", requirements: Iterable[Requirement], profile: Profile) -> None:
    """Raise DirectPathError for the first destination (by clusterProxy kind, then requirement order) a vendor document
    says the cluster must reach directly that the kind's applied noProxy would send through the proxy."""
    requirements = [r for r in requirements if r.kind in ("fqdn", "ip") and r.protocol in ("http", "https")]
    stack_no_proxy = profile.no_proxy
    for kind, no_proxy in applied_no_proxy(plan, profile).items():
        for requirement in requirements:
            entry = _direct_entry(catalog, requirement) if uses_proxy(kind, requirement.role, profile) else None
            port = proxied_port(no_proxy, requirement) if entry is not None else None
            if entry is None or entry.direct is None or port is None:
                continue
            source = catalog.sources.get(entry.direct.citation.source)
            cited = f"{source.url if source else entry.direct.citation.source} § {entry.direct.citation.section}"
            raise DirectPathError(
                f"egress-matrix:noProxy = {list(stack_no_proxy)!r}: with clusterProxy {kind}, {requirement.destination}:{port} "
                f"(entry {entry.id}, role {requirement.role}) goes through the proxy {plan.http_proxy if requirement.protocol == 'http' else plan.https_proxy}: no entry of "
                f"{WHOSE[kind]} covers it, but it must be reached directly: {entry.direct.because} ({cited}). "
                f"Fix: {_fix(requirement.destination, stack_no_proxy)}")
