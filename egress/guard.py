"""The breadth check, run wherever a stack's requirements are built for output: ``Project.requirements`` (so every
command: render, preview, export, matrix, probe, learn, init, catalog check) and every target's compile (the registry;
the Pulumi program and the policy pack resolve without the project). Nothing broader than the stack's limits is ever
compiled, rendered, handed over or registered (``egress.breadth`` says how breadth is measured).

Judged, unless the stack accepts broad egress with a reason (``allowBroadEgress``):
- the role sources (``nodeSources`` ...): a source that is the internet makes every rule an open relay;
- what lands in a generated noProxy (``noProxy``, ``kkpDomain``, the pod, Service and machine networks): a ``*``, a
  name that is or covers a public suffix, or addresses beyond ``maxPublicShare`` send that traffic around the proxy;
- every destination option of the requirements the target enforces (any of them may be the one a target can
  express), together: public share per port, port span per destination, names under a public suffix. A requirement
  whose matrix entries all say ``broad: <reason>`` is accepted as it is.
The API-server allowlist is judged by its own compile (``apiServerAllowAll`` is its opt-in).

Own entries (a stack's entries, its registries, the catalogs it lists) are judged one by one first, and
``allowBroadEgress`` does not lift it: an own entry has no vendor document behind it, so each one that allows any
destination (``*``), addresses beyond ``maxPublicShare``, a public suffix (``com``, ``*.com``, ``*.co.uk``) or more
than ``maxPortSpan`` ports says why in its own ``broad: <reason>`` (the policy own-entries-reviewed lists those for
review). An own entry that repeats what a vendor entry of the stack already requires is reported (``duplicates``).
"""
from __future__ import annotations

from typing import Iterable

from .addresses import format_ports
from .breadth import shared_suffix, describe_share, networks_of, port_span, public_share, public_suffix
from .errors import EgressError
from .flows import Accepted, Allow, Limits, judge
from .models import Catalog, Requirement
from .profile import PROJECT, ROLE_SOURCE_KEYS, Profile


class BreadthError(EgressError):
    """The stack allows more than its breadth limits, and nothing says why."""


_FIX = (f"narrow the destinations or ports; where a vendor row really is this wide, mark its matrix entry with broad: '<reason>'; "
        f"or accept it for this stack with {PROJECT}:allowBroadEgress: '<reason>' (the limits are {PROJECT}:maxPublicShare and maxPortSpan)")
_OWN_FIX = ("narrow it to what the workload really calls (its hosts, its addresses, its ports); if it must be this wide, give the entry "
            "broad: '<reason>' (at least 10 characters; allowBroadEgress does not cover own entries), and the policy own-entries-reviewed "
            "lists it for review")


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
    given = f", from {NAME_ADDRESSES}" if option.note == NAME_ADDRESSES else ""  # the setting gave these addresses
    where = f"{entries} ({req.role} -> {', '.join(option.destinations)} {option.protocol}/{format_ports(option.ports)}{given})"
    if option.kind in ("ip", "cidr", "any"):
        return Allow(where, _transport(option.protocol), option.ports, addresses=networks_of(option.destinations), sources=sources,
                     roles=frozenset({req.role}))
    if option.kind == "service-tag":
        return Allow(where, _transport(option.protocol), option.ports, tags=option.destinations, sources=sources, roles=frozenset({req.role}))
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
                out.append(Accepted(req.role, allow.transport, allow.ports, allow.addresses, (*allow.names, *allow.tags)))
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
        elif (suffix := shared_suffix(_without_port(host))) is not None:  # as an own entry '*.github.io' is refused
            out.append(f"{where} '{entry}' covers '{suffix}', where anyone may register a name (the Public Suffix List's private "
                       "domains: hosting, tunnels, storage accounts): every such site goes around the proxy")
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
    """Raise BreadthError with the first finding (own entries, sources, noProxy, then the requirements), naming what to fix."""
    requirements = list(requirements)
    check_own_entries(catalog, profile, requirements, source)
    limits = limits_of(profile)
    where = f"{source}: " if source else ""
    if not profile.allow_broad_egress:
        for role in (*ROLE_SOURCE_KEYS, *sorted(profile.source_groups)):  # a group's rules are an open relay as much as a role's
            sources, key = profile.role_sources(role), profile.source_setting(role)
            if public_share(networks_of(sources)) > limits.max_public_share:
                raise BreadthError(f"{where}{PROJECT}:{key} = {list(sources)} covers {describe_share(networks_of(sources))} (more than maxPublicShare "
                                   f"{limits.max_public_share:g}%): a source that is the internet makes every rule an open relay. Fix: list the "
                                   f"role's own addresses (its subnets or egress IPs), or set {PROJECT}:allowBroadEgress: '<reason>'")
        found = no_proxy_findings(((f"{PROJECT}:{key}", entry) for key, entry in no_proxy_inputs(profile)), limits)
        if found:
            raise BreadthError(f"{where}{found[0]}. Fix: list only the cluster's own networks and the domains that must not be proxied "
                               f"(e.g. '.corp.example.com'), or set {PROJECT}:allowBroadEgress: '<reason>'")
    check_own_entries_together(catalog, profile, requirements, source)
    if profile.allow_broad_egress:
        return
    judged = [req for req in requirements if not accepted(catalog, req)]
    found = judge(requirement_allows(judged), limits)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise BreadthError(f"{where}the stack's requirements allow more than its limits: {found[0]}{more}. Fix: {_FIX}")


# -- own entries ------------------------------------------------------------------------------------------------------

def own_ids(catalog: Catalog) -> frozenset[str]:
    """The ids of the catalog's own entries (``catalog`` set: the stack's entries, registries, listed catalogs)."""
    key = id(catalog)
    if _OWN.get(key, (None,))[0] is not catalog:  # as _broad_ids: keyed by identity, kept with the catalog
        _OWN.clear()
        _OWN[key] = (catalog, frozenset(e.id for e in catalog.entries if e.catalog is not None))
    return _OWN[key][1]


_OWN: dict[int, tuple[Catalog, frozenset[str]]] = {}


def own_entry_origin(catalog: Catalog, profile: Profile, entry_id: str) -> str:
    """Where an own entry is written, as the stack's keys name it: the stack's entries[i], its container registries, or
    the catalog file the stack lists."""
    name, _, short = entry_id.partition("/")
    if name == "stack":
        index = next((i for i, item in enumerate(profile.entries) if item.id == short), None)
        return f"config.{PROJECT}:entries[{index}] '{short}'" if index is not None else f"config.{PROJECT}:entries '{short}'"
    if name == "registries":
        return f"config.{PROJECT}:containerRegistries"
    written = catalog.origins.get(entry_id)  # the file and line the loader read it from
    if written:
        return f"{written} of own catalog '{name}' (listed in {PROJECT}:catalogs)"
    listed = ", ".join(profile.catalogs) or "(none)"
    return f"entry '{short}' of own catalog '{name}' (its file {name}.yaml, listed in {PROJECT}:catalogs: {listed})"


# The note AWS's compile gives the addresses a stack names for a host (targets/aws/compile.py _with_stack_addresses):
# those are the setting's values, not the entry's, and the setting is what to fix.
NAME_ADDRESSES = f"{PROJECT}:awsNameAddresses"


def _option_problems(option, limits: Limits) -> list[str]:
    """Why one destination option of an own entry is wider than the guard rails ([] when it is not), each naming the
    field (or the setting that gave the value) and its value."""
    ports = f"{option.protocol}/{format_ports(option.ports)}"
    problems = []
    for destination in option.destinations:
        value = f"field 'destination' = '{destination}' ({ports})"
        if option.note == NAME_ADDRESSES:
            value = f"config.{NAME_ADDRESSES} gives '{destination}' for its host ({ports}), which"
        if option.kind == "any" or destination == "*":
            problems.append(f"{value} allows any destination")
        elif option.kind in ("ip", "cidr"):
            nets = networks_of([destination])
            if public_share(nets) > limits.max_public_share:
                problems.append(f"{value} covers {describe_share(nets)} (more than maxPublicShare {limits.max_public_share:g}%)")
        elif option.kind == "service-tag":
            problems.append(f"{value} is a service tag: every address of that cloud service, where anyone may rent one")
        elif option.kind in ("fqdn", "wildcard", "url") and (suffix := public_suffix(destination)) is not None:
            problems.append(f"{value} is or covers the public suffix '{suffix}': it allows every domain under it")
        elif option.kind == "wildcard" and (suffix := shared_suffix(destination)) is not None:
            problems.append(f"{value} covers '{suffix}', where anyone may register a name (the Public Suffix List's private "
                            "domains: hosting, tunnels, storage accounts)")
    span = port_span(option.ports)
    if span > limits.max_port_span:
        problems.append(f"field 'ports' = '{format_ports(option.ports)}' ({option.protocol} to {', '.join(option.destinations)}) opens "
                        f"{span} ports (more than maxPortSpan {limits.max_port_span})")
    return problems


def own_entry_findings(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement]) -> list[tuple[str, str]]:
    """(own entry id, problem) for each own entry without ``broad`` whose resolved destinations exceed the guard rails,
    in id order, each problem once."""
    limits = limits_of(profile)
    broad, own_entries = _broad_ids(catalog), own_ids(catalog)
    found: dict[tuple[str, str], None] = {}
    for req in requirements:
        own = [i for i in req.entry_ids if i in own_entries and i not in broad]
        if not own:
            continue
        problems = [p for option in req.options() for p in _option_problems(option, limits)]
        for entry_id in own:
            for problem in problems:
                found[(entry_id, problem)] = None
    return sorted(found)


def check_own_entries(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement], source: str = "") -> None:
    """Raise BreadthError for the first own entry wider than the guard rails that does not say why (``broad``)."""
    found = own_entry_findings(catalog, profile, requirements)
    if found:
        entry_id, problem = found[0]
        more = f" ({len(found) - 1} more such finding(s) after it)" if len(found) > 1 else ""
        where = f"{source}: " if source else ""
        origin = own_entry_origin(catalog, profile, entry_id)
        if problem.startswith(f"config.{NAME_ADDRESSES} "):  # the setting's value: name it first, and its fix
            raise BreadthError(f"{where}{problem} (the host of {origin}, own entry {entry_id}){more}. Fix: list in {NAME_ADDRESSES} only "
                               "the addresses the host resolves to (its own IPs or subnet); if the entry must reach this much, give it "
                               "broad: '<reason>' (allowBroadEgress does not cover own entries)")
        raise BreadthError(f"{where}{origin} (own entry {entry_id}): {problem}{more}. Fix: {_OWN_FIX}")


def check_own_entries_together(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement], source: str = "") -> None:
    """Own entries judged together, as one more role's rules would be (98 entries of a /8 each, or 64 of 1,024 ports
    each, are the internet); allowBroadEgress, a stack's acceptance of the vendors' wide rows, does not cover them."""
    own, broad = own_ids(catalog), _broad_ids(catalog)
    found = judge(requirement_allows([r for r in requirements if any(i in own and i not in broad for i in r.entry_ids)]), limits_of(profile))
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        where = f"{source}: " if source else ""
        raise BreadthError(f"{where}the stack's own entries together allow more than its limits: {found[0]}{more}. Fix: {_OWN_FIX}")


def duplicates(catalog: Catalog, requirements: Iterable[Requirement]) -> list[tuple[str, tuple[str, ...], Requirement]]:
    """(own entry id, the vendor entry ids, the requirement) for each flow (role, destination, protocol, ports) that an
    own entry asks for and a vendor entry of the stack already requires, in the requirements' order. A host the own
    entry reaches only through a host expansion is not counted again: its own destination is."""
    own = own_ids(catalog)
    out = []
    for req in requirements:
        vendor = tuple(i for i in req.entry_ids if i not in own)
        if vendor:
            out += [(i, vendor, req) for i in req.entry_ids if i in own and not any(v.endswith(f"(for {i})") for v in req.via)]
    return out


def duplicate_notices(catalog: Catalog, requirements: Iterable[Requirement]) -> list[str]:
    """One line per own entry that repeats a vendor entry's flow: the flow, the vendor entries, what to do."""
    return [f"own entry {own} duplicates vendor {'entry' if len(vendor) == 1 else 'entries'} {', '.join(vendor)}: {req.role} -> "
            f"{req.destination} {req.protocol}/{format_ports(req.ports)} is required already; remove the own entry (the vendor entry "
            "keeps it allowed) or keep it deliberately (it stays allowed if the vendor entry goes)"
            for own, vendor, req in duplicates(catalog, requirements)]
