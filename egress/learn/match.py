"""Group denied flows by source (role or group) and destination, and judge each group against the whole matrix.

A group's source is the most specific of the stack's roles and source groups whose CIDRs hold the flow's source (the
payments pool inside the nodes' range is 'payments'); every role or group holding it may carry the flow (a nodes rule
covers the payments pool too). Its destination is the host the client named (SNI, Host, CONNECT, Fqdn), else the
address. A matrix row covers a flow as ``egress explain`` judges it (matrix semantics: exact host, ``*.x`` for
subdomains only, an address inside a CIDR, ``*``), on one of its ports, with a protocol that carries the flow: an
``https`` row carries TLS, a ``tcp`` row carries anything on TCP, and a flow a log shows only as TCP (a network rule)
may be TLS or HTTP.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from ..addresses import format_ports, ports_contain
from ..explain.query import how_needed
from ..models import ROLES
from ..profile import Profile
from ..resolve import source_order
from .candidates import Candidate, Pattern
from .flows import Flow

CARRIES = {"https": ("https", "tcp"), "http": ("http", "tcp"), "tcp": ("tcp", "https", "http"), "udp": ("udp",)}
NEAR_MISSES = 6  # at most this many per group, closest kinds first
_KIND_ORDER = ("another port", "another source", "only when", "sibling", "one label")


@dataclass(frozen=True)
class Group:
    source: str  # a role or a source group; '' when no role or group of the stack holds the sources
    destination: str
    protocol: str
    port: int
    roles: tuple[str, ...]  # every role and group that holds all of the group's sources
    flows: tuple[Flow, ...]

    @property
    def kind(self) -> str:
        return "ip" if not self.flows[0].host else "fqdn"

    @property
    def addresses(self) -> tuple[str, ...]:
        return tuple(sorted({f.address for f in self.flows if f.address}))


@dataclass(frozen=True)
class Verdict:
    required: tuple[Candidate, ...]  # rows the stack resolves today that allow the flow
    enabling: tuple[Candidate, ...]  # rows of the stack's platforms that would, with a feature or level turned on
    elsewhere: tuple[Candidate, ...]  # rows of other platforms that list the flow (cited, never proposed)
    near: tuple[dict[str, str], ...]


def sources_of(profile: Profile) -> list[tuple[str, object]]:
    """(role or group, network) for every source CIDR the stack names. The pods run on the nodes: a log that shows pod
    addresses (the in-cluster egress proxy, a flat pod network) shows the nodes' traffic, as the egress proxy's
    role-nodes ACL says (egress/targets/kubernetes/egress_proxy.py)."""
    names = [*ROLES, *sorted(profile.source_groups)]
    pairs = [(name, cidr) for name in names for cidr in profile.role_sources(name)]
    pairs += [("nodes", cidr) for cidr in profile.pod_cidrs]
    return [(name, ipaddress.ip_network(cidr, strict=False)) for name, cidr in pairs]


def holders(source: str, networks: list[tuple[str, object]]) -> tuple[str, ...]:
    """The roles and groups holding ``source``, the most specific (longest prefix) first, then in source order."""
    address = ipaddress.ip_address(source)
    best: dict[str, int] = {}
    for name, network in networks:
        if address.version == network.version and address in network:  # type: ignore[attr-defined,operator]
            best[name] = max(best.get(name, -1), network.prefixlen)  # type: ignore[attr-defined]
    return tuple(sorted(best, key=lambda name: (-best[name], *source_order(name))))


def group_flows(flows: list[Flow], profile: Profile) -> list[Group]:
    networks = sources_of(profile)
    buckets: dict[tuple[str, str, str, int], list[tuple[Flow, tuple[str, ...]]]] = {}
    for flow in flows:
        held = holders(flow.source, networks)
        key = (held[0] if held else "", flow.destination, flow.protocol, flow.port)
        buckets.setdefault(key, []).append((flow, held))
    groups = []
    for (source, destination, protocol, port), members in buckets.items():
        common = set(members[0][1]).intersection(*(set(held) for _, held in members))
        roles = tuple(name for name in members[0][1] if name in common)
        ordered = tuple(sorted((flow for flow, _ in members), key=lambda f: (f.file, f.line)))
        groups.append(Group(source, destination, protocol, port, roles, ordered))
    return sorted(groups, key=lambda g: (g.source == "", *source_order(g.source or "nodes"), g.source, g.destination, g.protocol, g.port))


def judge(group: Group, candidates: tuple[Candidate, ...], patterns: tuple[Pattern, ...] = ()) -> Verdict:
    required, enabling, elsewhere, near = [], [], [], []
    if group.kind == "fqdn":
        for pattern in patterns:
            if pattern.in_stack and pattern.entry.role in group.roles and pattern.carries(CARRIES[group.protocol], group.port) and pattern.regex.fullmatch(group.destination):
                unmet = [value if kind == "when" else f"{kind} {value}" for kind, value in pattern.blockers]
                near.append({"kind": "only when", "entry": pattern.entry.id, "allows": f"{pattern.entry.role} -> {pattern.entry.destination} "
                             f"{pattern.entry.protocol}", "why": f"the row names hosts like this one, with {', '.join(pattern.missing)} set"
                             + (f" and only when {'; '.join(unmet)}" if unmet else "")})
    for candidate in candidates:
        how = _covers(candidate, group)
        if not how:
            if group.kind == "fqdn" and candidate.in_stack:
                near.extend(_label_miss(candidate, group))
            continue
        port_ok = ports_contain(candidate.req.ports, group.port) and candidate.req.protocol in CARRIES[group.protocol]
        role_ok = candidate.req.role in group.roles
        if port_ok and role_ok and not candidate.blockers:
            required.append(candidate)
        elif port_ok and role_ok and candidate.enabling:
            enabling.append(candidate)
        elif not candidate.in_stack:
            if port_ok:
                elsewhere.append(candidate)
        elif not port_ok and not role_ok:  # two differences: no near miss
            continue
        elif not port_ok:
            near.append(_miss(candidate, "another port", "the right destination on a port or protocol the row does not list"))
        elif not role_ok:
            near.append(_miss(candidate, "another source", f"the row is for {candidate.req.role}, not {group.source or 'this source'}"))
        else:
            near.append(_miss(candidate, "only when", f"the row applies only when {_conditions(candidate)}"))
    if required or enabling:  # a row allows it, or would: near misses would only distract the reviewer
        near = []
    merged: dict[tuple[str, str, str], set[str]] = {}
    for item in near:  # one line per destination, naming every row behind it
        merged.setdefault((item["kind"], item["allows"], item["why"]), set()).update(item["entry"].split(", "))
    ordered = [{"kind": kind, "entry": ", ".join(sorted(entries)), "allows": allows, "why": why}
               for (kind, allows, why), entries in sorted(merged.items(), key=lambda m: (_KIND_ORDER.index(m[0][0]), m[0][1]))]
    return Verdict(tuple(required), tuple(enabling), tuple(elsewhere), tuple(ordered[:NEAR_MISSES]))


def _covers(candidate: Candidate, group: Group) -> str:
    req = candidate.req
    if req.kind == "service-tag":  # its addresses are not known offline
        return ""
    how = how_needed(req, group.kind, group.destination)
    if not how and group.kind == "fqdn":  # a TLS or HTTP log line also names the address
        how = next((h for h in (how_needed(req, "ip", a) for a in group.addresses) if h), "")
    return how


def flow_text(req) -> str:
    return f"{req.role} -> {req.destination} {req.protocol}/{format_ports(req.ports)}"


def _miss(candidate: Candidate, kind: str, why: str) -> dict[str, str]:
    return {"kind": kind, "entry": ", ".join(candidate.req.entry_ids), "allows": flow_text(candidate.req), "why": why}


def _conditions(candidate: Candidate) -> str:
    return "; ".join(f"{kind} {value}" if kind != "when" else value for kind, value in candidate.blockers)


def _label_miss(candidate: Candidate, group: Group) -> list[dict[str, str]]:
    """A host one label away from a row's destination (a '*' label matches any), or a sibling of an exact host under a
    wildcard no row has (only the left-most label differs)."""
    req = candidate.req
    if req.kind not in ("fqdn", "wildcard"):
        return []
    mine, theirs = group.destination.split("."), req.destination.split(".")
    if len(mine) != len(theirs):
        return []
    differing = [i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b and b != "*"]
    # Only below a shared parent of three labels or more: every host under one organisation's domain (two labels,
    # microsoft.com) or one differing in that domain (api.github.com, api.stripe.com) is no near miss.
    if len(differing) != 1 or differing[0] > len(mine) - 4:
        return []
    if differing[0] == 0 and req.kind == "fqdn":
        parent = ".".join(mine[1:])
        return [_miss(candidate, "sibling", f"a sibling of {req.destination} under *.{parent}, which no row allows")]
    return [_miss(candidate, "one label", f"one label away from {req.destination} ('{mine[differing[0]]}' for '{theirs[differing[0]]}')")]


def enable_options(enabling: tuple[Candidate, ...]) -> list[tuple[tuple[tuple[str, str], ...], list[Candidate]]]:
    """The ways to turn a row on, fewest changes first: (the settings to add, the rows they bring)."""
    options: dict[tuple[tuple[str, str], ...], list[Candidate]] = {}
    for candidate in enabling:
        options.setdefault(tuple(sorted(candidate.blockers)), []).append(candidate)
    return sorted(options.items(), key=lambda item: (len(item[0]), item[0]))
