"""The path each requirement takes when the cluster uses a corporate proxy it does not deploy (pure; issue 21).

For a stack with ``clusterProxy`` and a proxy URL (``httpProxy`` / ``httpsProxy``), every resolved requirement of a role
that uses the cluster proxy goes one of three ways:

- ``proxy``: through the proxy URL (shown without credentials), so the proxy must allow it;
- ``direct``: around the proxy, so the firewall must allow it: because an entry of the noProxy the distribution really
  applies matches it (Go's NO_PROXY matching, ``no_proxy_match.bypass``, naming the entry), because the protocol cannot
  traverse a forward proxy (UDP such as NTP, TCP that is not HTTP), because no proxy URL is set for plain HTTP, or because
  the role does not use the cluster proxy at all (KKP, AKS and kubeadm set the worker nodes' proxy only);
- ``unreachable``: through a proxy that inspects TLS (``proxyInspectsTls``) to a host the vendor says must not be
  inspected (the entry's ``no_tls_inspection``): it fails until the proxy exempts it (``egress export --for proxy``
  lists those hosts).

A proxy URL whose own host is inside noProxy is *not* unreachable: Go matches NO_PROXY against the request's
destination only (httpproxy ``useProxy`` is called with the request URL's host), and a client always opens its
connection to the proxy itself directly. OpenShift and the installer refuse a proxy inside the pod or service network
(``cluster_proxy._check_url``); nothing else about the proxy's own address changes a path.

The noProxy each distribution applies:
- openshift: the Proxy's ``status.noProxy`` as the network operator computes it (``noproxy.openshift_no_proxy``);
- kkp: the Seed datacenter's ``node.noProxy`` and kubeadm: ``NO_PROXY``, as ``targets/kubernetes/cluster_proxy`` builds them;
- aks: the stack's ``noProxy`` plus what AKS adds itself (``AKS_ADDED``). Microsoft documents only that
  ``effectiveNoProxy`` is "a superset of noProxy and values injected by AKS" (REST API, ManagedClusterHTTPProxyConfig);
  the values are the ones two published ``az aks show --query httpProxyConfig`` outputs list (VijayRod/demo
  container-storage/logs/http-proxy-k8s.md, f243ba80, and the same repository's proxy walkthrough), and Azure/AKS
  issue 3207 (open since 2022-09-14) reports the API server host injected. They are observed, not documented.

Wildcard destinations are judged as Go would judge any one of their hosts (a name under the suffix that no narrower
entry names); where a noProxy entry names some hosts under the suffix only, the path says it is approximate. A CIDR
destination goes direct only when one noProxy CIDR covers all of it.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Iterable, Optional

from .errors import EgressError
from .models import Catalog, NoTlsInspection, Requirement
from .no_proxy_match import bypass, go_cidr
from .profile import PROJECT, Profile
from .redact import redact_url

PROXY, DIRECT, UNREACHABLE = "proxy", "direct", "unreachable"

# Who uses each kind of cluster proxy (source groups are node pools: they use it too).
KIND_ROLES = {"openshift": ("nodes", "control-plane"), "kkp": ("nodes",), "aks": ("nodes",), "kubeadm": ("nodes",)}
KIND_LABELS = {"openshift": ("OpenShift cluster Proxy", "status.noProxy"), "kkp": ("KKP node proxy", "the datacenter's node.noProxy"),
               "aks": ("AKS HTTP proxy", "effectiveNoProxy"), "kubeadm": ("kubeadm proxy environment", "NO_PROXY")}
# What AKS adds to noProxy (observed, see above), besides the cluster's networks and its API server's host.
AKS_ADDED = ("localhost", "127.0.0.1", "konnectivity", "169.254.169.254", "168.63.129.16")
# The API server host AKS adds is the cluster's own <prefix>-<hash>.hcp.<location>.<domain>; these wildcards (the
# matrix's *-hcp rows) stand for it, so the wildcard is written into the judged list and named for what it is.
AKS_API_SERVER = {"azure-public": "*.hcp.{location}.azmk8s.io", "azure-china": "*.hcp.{location}.cx.prod.service.azk8s.cn",
                  "azure-usgov": "*.hcp.{location}.cx.aks.containerservice.azure.us"}


class ProxyPathError(EgressError):
    """The stack has no corporate proxy whose paths could be judged."""


@dataclass(frozen=True)
class Setup:
    """One cluster proxy of the stack: who uses it, the URLs (no credentials) and the noProxy it really applies."""

    kind: str
    roles: tuple[str, ...]
    http_proxy: str
    https_proxy: str
    no_proxy: tuple[str, ...]
    named: dict  # entry as written -> what it stands for, where the entry is not the user's text
    inspects_tls: bool

    @property
    def label(self) -> str:
        return KIND_LABELS[self.kind][0]

    @property
    def list_name(self) -> str:
        return KIND_LABELS[self.kind][1]


@dataclass(frozen=True)
class Path:
    """Where one destination of one requirement goes."""

    kind: str
    role: str
    destination: str
    protocol: str
    ports: str
    route: str  # PROXY, DIRECT or UNREACHABLE
    proxy: str = ""  # the proxy URL, for PROXY and UNREACHABLE
    entry: str = ""  # the noProxy entry that sends it direct
    reason: str = ""
    approximate: str = ""  # why the judgement stands for hosts it cannot list, when it does
    requirement: Optional[Requirement] = None


def setups(catalog: Catalog, profile: Profile, where: str = "") -> tuple[Setup, ...]:
    """The stack's cluster proxies that point at a proxy URL (``ProxyPathError`` when there is none; ``where``: the stack file)."""
    if not profile.cluster_proxy or not (profile.http_proxy or profile.https_proxy):
        what = (f"{PROJECT}:clusterProxy is not set" if not profile.cluster_proxy else
                f"{PROJECT}:clusterProxy = {list(profile.cluster_proxy)} but {PROJECT}:httpProxy and httpsProxy are not set")
        own = (" (the stack's own egress proxy is not a corporate proxy: its allowlist is egress render --target kubernetes)"
               if profile.egress_proxy else "")
        raise ProxyPathError(f"{where + ': ' if where else ''}stack '{profile.stack}': {what}, so there is no corporate proxy to route "
                             f"through{own}. Fix: set {PROJECT}:clusterProxy (openshift, kkp, aks or kubeadm) and {PROJECT}:httpProxy "
                             "(or httpsProxy) to the corporate proxy's URL")
    from .targets.kubernetes.cluster_proxy import compile_cluster_proxy

    plan = compile_cluster_proxy(catalog, profile, None, profile.has_secret("proxyCredentials"))  # the distributions' own checks
    http, https = redact_url(plan.http_proxy), redact_url(plan.https_proxy)
    return tuple(Setup(kind, KIND_ROLES[kind], http, https, *kind_no_proxy(kind, plan, profile), profile.proxy_inspects_tls)
                 for kind in profile.cluster_proxy)


def kind_no_proxy(kind: str, plan, profile: Profile) -> tuple[tuple[str, ...], dict[str, str]]:
    """The noProxy a kind of cluster really applies, from its ``ClusterProxyPlan``: the entries, and what an entry stands
    for where it is not the user's text (the AKS API server's wildcard). One list for explain, export and the direct check."""
    named: dict[str, str] = {}
    if kind == "openshift":
        return tuple(e for e in (plan.openshift_status_no_proxy or "").split(",") if e), named
    if kind == "kkp":
        return tuple(e for e in (plan.kkp.no_proxy if plan.kkp else "").split(",") if e), named
    if kind == "kubeadm":
        return tuple(e for e in (plan.kubeadm_no_proxy or "").split(",") if e), named
    added = [*AKS_ADDED, *profile.pod_cidrs, *profile.service_cidrs, *(profile.machine_cidrs or profile.node_sources)]
    api = AKS_API_SERVER.get(profile.cloud or "")
    if api and profile.location:
        host = api.format(location=profile.location)
        named[host] = f"AKS adds the cluster's API server host, <its name>.{host[2:]}, which {host} stands for"
        added.append(host)
    return tuple(dict.fromkeys([*plan.no_proxy, *added])), named


def uses_proxy(kind: str, role: str, profile: Profile) -> bool:
    """Does ``role`` (or source group: a node pool) use a cluster proxy of this kind?"""
    return role in KIND_ROLES[kind] or role in profile.source_groups


def _host(destination: str, kind: str) -> str:
    if kind == "url":
        return destination.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0]
    return destination


def _under(entry: str, suffix: str) -> bool:
    """A noProxy name entry that names some, not all, hosts under ``suffix`` (a wildcard's domain)."""
    name = entry.strip().lower().split(":", 1)[0].lstrip("*").lstrip(".")
    return name.endswith("." + suffix) and name != suffix


def judge(setup: Setup, destination: str, kind: str, protocol: str, port: int,
          no_inspection: Optional[NoTlsInspection] = None) -> tuple[str, str, str, str, str]:
    """(route, proxy URL, noProxy entry, reason, approximate) for one destination as the setup's clients reach it."""
    if protocol == "udp":
        return DIRECT, "", "", "UDP cannot traverse a forward proxy: HTTP CONNECT carries TCP only", ""
    if protocol == "tcp":
        return DIRECT, "", "", f"tcp/{port} is not HTTP: clients connect themselves, a forward proxy carries only HTTP and HTTPS", ""
    url = setup.http_proxy if protocol == "http" else setup.https_proxy
    if not url:
        return DIRECT, "", "", "no httpProxy is set, so plain HTTP goes direct", ""
    if kind in ("service-tag", "any"):
        return PROXY, url, "", "", f"a {kind} destination stands for addresses; which the clients reach by name cannot be known offline"
    approximate = ""
    host = _host(destination, kind)
    if kind == "cidr":
        network = ipaddress.ip_network(host, strict=False)
        found = None
        for written in setup.no_proxy:
            entry = go_cidr(written)
            if entry is None:
                continue
            if network.version == entry.version and network.subnet_of(entry):
                found = (written, f"{host} is inside noProxy CIDR {written}")
                break
            if network.version == entry.version and network.overlaps(entry):
                approximate = f"noProxy entry '{written}' covers part of {host}: those addresses go direct"
        if found:
            return DIRECT, "", found[0], found[1], ""
    else:
        matched = bypass(",".join(setup.no_proxy), host, port)
        if matched is not None:
            reason = matched.reason
            if matched.entry in setup.named:
                reason = f"{setup.named[matched.entry]}"
            return DIRECT, "", matched.entry, reason, ""
        if kind == "wildcard":
            parts = sorted(e for e in setup.no_proxy if _under(e, host[2:]))
            if parts:
                approximate = (f"judged for a host under {host[2:]}; the host{'s' if len(parts) > 1 else ''} noProxy entr"
                               f"{'ies' if len(parts) > 1 else 'y'} {', '.join(repr(p) for p in parts)} name{'' if len(parts) > 1 else 's'} go direct")
    if protocol == "https" and setup.inspects_tls and no_inspection is not None:
        return (UNREACHABLE, url, "", f"the proxy inspects TLS (proxyInspectsTls) and {destination} must not be inspected: "
                f"{no_inspection.reason}; exempt it from inspection (egress export --for proxy lists it)", approximate)
    return PROXY, url, "", "", approximate


def no_inspection_of(catalog: Catalog, req: Requirement) -> Optional[NoTlsInspection]:
    """The first entry behind ``req`` that must not be TLS-inspected, with why (vendor data, cited)."""
    for entry_id in req.entry_ids:
        try:
            entry = catalog.entry(entry_id)
        except KeyError:
            continue
        if entry.no_tls_inspection is not None:
            return entry.no_tls_inspection
    return None


def requirement_paths(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement], where: str = "") -> tuple[Path, ...]:
    """Every requirement's path through each of the stack's cluster proxies; a role no proxy serves goes direct."""
    from .addresses import format_ports

    found = setups(catalog, profile, where)
    out = []
    for req in requirements:
        ports = format_ports(req.ports)
        users = [s for s in found if uses_proxy(s.kind, req.role, profile)]
        if not users:
            kinds = ", ".join(f"{s.kind} ({'/'.join(s.roles)})" for s in found)
            out.append(Path("", req.role, req.destination, req.protocol, ports, DIRECT,
                            reason=f"role {req.role} does not use the cluster proxy (clusterProxy {kinds})", requirement=req))
            continue
        for setup in users:
            route, url, entry, reason, approximate = judge(setup, req.destination, req.kind, req.protocol, req.ports[0].start if req.ports else 443,
                                                           no_inspection_of(catalog, req))
            out.append(Path(setup.kind, req.role, req.destination, req.protocol, ports, route, url, entry, reason, approximate, req))
    return tuple(out)


def explain_lines(catalog: Catalog, profile: Profile, destination: str, kind: str, protocol: Optional[str], port: Optional[int],
                  no_inspection: Optional[NoTlsInspection] = None) -> list[str]:
    """What ``egress explain`` says of one destination per cluster proxy: via proxy X, direct because of entry Y, or not reachable.

    ``protocol`` None (no requirement names the destination): port 80 is read as HTTP and 443 (or none) as HTTPS, for a
    name and an address alike. Any other port may carry HTTPS or another TCP protocol, and the two take different paths (a
    Go client sends every https:// URL to httpsProxy whatever its port, golang/net http/httpproxy/proxy.go proxyForURL,
    094d4385; a client of another protocol connects itself), so both readings are given."""
    if not profile.cluster_proxy or not (profile.http_proxy or profile.https_proxy):
        return []
    if protocol is None and port not in (None, 80, 443):
        readings = [("https", f" as HTTPS on port {port}"), ("tcp", f" as another TCP protocol on port {port}")]
    else:
        readings = [(protocol or ("http" if port == 80 else "https"), "")]
    lines = []
    for setup in setups(catalog, profile):
        for reading, how in readings:
            route, url, entry, reason, approximate = judge(setup, destination, kind, reading, port or (80 if reading == "http" else 443),
                                                           no_inspection)
            head = f"{setup.label}: {destination}{how}"
            if route == PROXY:
                line = f"{head} goes through {url} (no entry of {setup.list_name} covers it): the proxy must allow it"
            elif route == UNREACHABLE:
                line = f"{head} is not reachable: it goes through {url}, but {reason}"
            elif entry:
                line = f"{head} goes direct, not through the proxy, because of {setup.list_name} entry '{entry}' ({reason}): the firewall must allow it"
            else:
                line = f"{head} goes direct, not through the proxy ({reason}): the firewall must allow it"
            if approximate:
                line += f" [approximate: {approximate}]"
            lines.append(line)
    return lines
