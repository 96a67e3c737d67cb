"""The breadth check every target's compile runs first (the registry calls it), so nothing broader than the stack's
limits is ever compiled, rendered or registered (``egress.breadth`` says how breadth is measured).

Judged, unless the stack accepts broad egress with a reason (``allowBroadEgress``):
- the role sources (``nodeSources`` ...): a source that is the internet makes every rule an open relay;
- what lands in a generated noProxy (``noProxy``, ``kkpDomain``, the pod, Service and machine networks): a ``*``, a
  name that is or covers a public suffix, or addresses beyond ``maxPublicShare`` send that traffic around the proxy;
- every destination option of the requirements the target enforces (any of them may be the one a target can
  express), together: public share per port, port span per destination, names under a public suffix. A requirement
  whose matrix entries all say ``broad: <reason>`` is accepted as it is.
The API-server allowlist is judged by its own compile (``apiServerAllowAll`` is its opt-in).
"""
from __future__ import annotations

from typing import Iterable

from ..addresses import format_ports
from ..breadth import describe_share, networks_of, public_share, public_suffix
from ..errors import EgressError
from ..flows import Accepted, Allow, Limits, judge
from ..models import Catalog, Requirement
from ..profile import PROJECT, ROLE_SOURCE_KEYS, Profile


class BreadthError(EgressError):
    """The stack allows more than its breadth limits, and nothing says why."""


_FIX = (f"narrow the destinations or ports; where a vendor row really is this wide, mark its matrix entry with broad: '<reason>'; "
        f"or accept it for this stack with {PROJECT}:allowBroadEgress: '<reason>' (the limits are {PROJECT}:maxPublicShare and maxPortSpan)")


def limits_of(profile: Profile) -> Limits:
    return Limits(max_public_share=float(profile.max_public_share), max_port_span=profile.max_port_span)


def accepted(catalog: Catalog, req: Requirement) -> bool:
    """Do all the matrix entries behind ``req`` accept it as broad?"""
    broad = _broad_ids(catalog)
    return bool(req.entry_ids) and all(i in broad for i in req.entry_ids)


def _broad_ids(catalog: Catalog) -> frozenset[str]:
    key = id(catalog)
    if _BROAD.get(key, (None,))[0] is not catalog:  # keyed by identity, kept with the catalog so the id is not reused
        _BROAD.clear()
        _BROAD[key] = (catalog, frozenset(e.id for e in catalog.entries if e.broad))
    return _BROAD[key][1]


_BROAD: dict[int, tuple[Catalog, frozenset[str]]] = {}


def _transport(protocol: str) -> str:
    return "udp" if protocol == "udp" else "tcp"


def _option_allow(req: Requirement, option, sources) -> Allow:
    entries = f"{'entry' if len(req.entry_ids) == 1 else 'entries'} {', '.join(req.entry_ids)}"
    where = f"{entries} ({req.role} -> {', '.join(option.destinations)} {option.protocol}/{format_ports(option.ports)})"
    if option.kind in ("ip", "cidr", "any"):
        return Allow(where, _transport(option.protocol), option.ports, addresses=networks_of(option.destinations), sources=sources,
                     roles=frozenset({req.role}))
    return Allow(where, _transport(option.protocol), option.ports, names=option.destinations, sources=sources, roles=frozenset({req.role}))


def requirement_allows(requirements: Iterable[Requirement]) -> list[Allow]:
    """Every destination option of every requirement, as what a rule for it would let through."""
    return [_option_allow(req, option, networks_of(req.sources)) for req in requirements for option in req.options()]


def accepted_flows(catalog: Catalog, requirements: Iterable[Requirement]) -> list[Accepted]:
    """The flows the matrix accepts as broad (entries with ``broad``), for judging what is deployed."""
    out = []
    for req in requirements:
        if accepted(catalog, req):
            for option in req.options():
                allow = _option_allow(req, option, None)
                out.append(Accepted(req.role, allow.transport, allow.ports, allow.addresses, allow.names))
    return out


def no_proxy_inputs(profile: Profile) -> list[tuple[str, str]]:
    """(setting, entry) for every stack value that lands in a generated noProxy."""
    pairs = [("noProxy", e) for e in profile.no_proxy]
    pairs += [("kkpDomain", profile.kkp_domain)] if profile.kkp_domain else []
    for key, values in (("podCidrs", profile.pod_cidrs), ("serviceCidrs", profile.service_cidrs), ("machineCidrs", profile.machine_cidrs)):
        pairs += [(key, v) for v in values]
    return pairs


def no_proxy_findings(entries: Iterable[tuple[str, str]], limits: Limits) -> list[str]:
    """What in a noProxy (``(where, entry)`` pairs) sends traffic around the proxy beyond the limits."""
    entries = list(entries)
    out = []
    for where, entry in entries:
        host = entry.strip()
        if host == "*":
            out.append(f"{where} '{entry}' sends every request around the proxy")
        elif (suffix := public_suffix(_without_port(host))) is not None:
            out.append(f"{where} '{entry}' is or covers the public suffix '{suffix}': every domain under it goes around the proxy")
    nets = networks_of(_without_port(e) for _, e in entries if e.strip() != "*")
    if public_share(nets) > limits.max_public_share:
        wide = sorted({f"{w} '{e}'" for w, e in entries if e.strip() != "*" and public_share(networks_of([_without_port(e)])) > 0})
        out.append(f"{', '.join(wide)} cover{'s' if len(wide) == 1 else ''} {describe_share(nets)} (more than maxPublicShare "
                   f"{limits.max_public_share:g}%): that traffic goes around the proxy")
    return out


def _without_port(entry: str) -> str:
    """A noProxy entry without a ':port' (Go's and curl's noProxy take 'host:port', '[v6]:port'); a bare IPv6 is left whole."""
    host, sep, port = entry.rpartition(":")
    if sep and port.isdigit() and (host.count(":") == 0 or (host.startswith("[") and host.endswith("]"))):
        return host.strip("[]")
    return entry.strip("[]") if entry.startswith("[") and entry.endswith("]") else entry


def check_breadth(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement], source: str = "") -> None:
    """Raise BreadthError with the first finding (sources, noProxy, then the requirements), naming what to fix."""
    if profile.allow_broad_egress:
        return
    limits = limits_of(profile)
    where = f"{source}: " if source else ""
    for role, key in ROLE_SOURCE_KEYS.items():
        sources = profile.role_sources(role)
        if public_share(networks_of(sources)) > limits.max_public_share:
            raise BreadthError(f"{where}{PROJECT}:{key} = {list(sources)} covers {describe_share(networks_of(sources))} (more than maxPublicShare "
                               f"{limits.max_public_share:g}%): a source that is the internet makes every rule an open relay. Fix: list the "
                               f"role's own addresses (its subnets or egress IPs), or set {PROJECT}:allowBroadEgress: '<reason>'")
    found = no_proxy_findings(((f"{PROJECT}:{key}", entry) for key, entry in no_proxy_inputs(profile)), limits)
    if found:
        raise BreadthError(f"{where}{found[0]}. Fix: list only the cluster's own networks and the domains that must not be proxied "
                           f"(e.g. '.corp.example.com'), or set {PROJECT}:allowBroadEgress: '<reason>'")
    judged = [req for req in requirements if not accepted(catalog, req)]
    found = judge(requirement_allows(judged), limits)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise BreadthError(f"{where}the stack's requirements allow more than its limits: {found[0]}{more}. Fix: {_FIX}")
