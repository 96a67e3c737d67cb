"""Judge Azure Firewall Policy rule collection group (RCG) bodies the way Azure processes rules.

Order (rule-processing.md): DNAT is ignored (egress only). Every network rule comes first: the parent policy's, then
the child's, each by RCG priority, then collection priority (ties by name), then rule order. Application rules
follow in the same order. The first matching rule decides, Allow or Deny. Then come Azure's infrastructure rule
collection and the default deny.

A flow is (one source CIDR of the requirement's role, destination, protocol, port range). A requirement is allowed
when, for one of its options (``Requirement.options``), every flow's first match is an Allow.
- An Allow matches only what it fully covers: the source CIDR lies inside its ``sourceAddresses`` / ``sourceIpGroups``
  (``*``, IP, CIDR, ``a-b``), its ports cover the whole range, its destinations every name or address. A Deny
  matches whatever it overlaps. An IP Group whose contents are unknown is taken to hold nothing (and said so).
- Network rules: ``ipProtocols`` (http/https/tcp ride TCP, udp UDP; ``Any``), ``destinationPorts``, and destination
  ``*``, IP / CIDR / range, IP Groups, service tags by name, ``destinationFqdns`` by exact name. A name needs ``*``
  (or all of IPv4) or that exact FQDN; an FQDN rule allows by resolved address, which ``assumed`` says.
- Application rules judge http/https on one port (``protocols``), by ``targetFqdns`` (see ``matching``) or
  ``fqdnTags`` (members from ``tag_members``, always an ``assumed`` line). ``webCategories`` and ``targetUrls`` never
  count as allowing: what they open cannot be known offline.
- Service tags and names are compared by name: the addresses behind them are not known offline.

``extra``: what an Allow rule opens beyond the requirements of the roles whose sources lie inside the rule's, unless
an earlier Deny blocks all of it: destinations, protocols or ports nobody asks for (``*`` included), ICMP, web
categories, target URLs, ``*contoso.com``-style look-alike targets, an FQDN tag on a protocol/port its members are
not asked for on. ``missing`` keeps requirement order; ``extra`` and ``assumed`` follow rule order.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Sequence

from ...addresses import PortRange, format_ports
from ...models import Requirement
from ..verdict import Verdict
from ..sets import AddressSet, Interval, parse_interval, ports_cover, ports_overlap
from .matching import ANY_PORT, NAMED, Destinations, Target, address_target, fqdn_target, is_lookalike, parse_ports, requirement_target, within

_APP_PROTOCOLS = ("http", "https", "mssql")
INFRASTRUCTURE = ("Azure's infrastructure rule collection allows platform FQDNs (compute Platform Image Repository storage, "
                   "managed-disk status storage, Azure Diagnostics and Logging (MDS), Microsoft Entra ID) after every application "
                   "rule and before the default deny; it is in no rule collection group and no requirement is counted as allowed "
                   "by it (infrastructure-fqdns.md)")
Groups = Mapping[str, Iterable[str]]


@dataclass(frozen=True)
class _Rule:
    label: str
    allow: bool
    network: bool
    body: Mapping[str, Any]
    sources: AddressSet
    destinations: Destinations  # network: addresses and IP Groups; application: target FQDNs
    fqdns: Destinations  # network: destinationFqdns
    transports: frozenset[str]  # network: TCP / UDP / ICMP
    ports: tuple[PortRange, ...]  # network
    protocols: tuple[tuple[str, int], ...]  # application: (http | https | mssql, port), in body order
    address_bound: bool  # application rule limited to destinationAddresses, which names cannot be judged against
    notes: tuple[str, ...]  # what judging it assumes


def _group_addresses(ids: Iterable[str], ip_groups: Groups, label: str, notes: list[str]) -> list[str]:
    addresses: list[str] = []
    for group_id in ids:
        if group_id in ip_groups:
            addresses += ip_groups[group_id]
        else:
            notes.append(f"{label} uses IP Group {group_id}, whose addresses are not known: taken to hold none")
    return addresses


def _rule(label: str, allow: bool, body: Mapping[str, Any], ip_groups: Groups) -> _Rule:
    notes: list[str] = []
    sources = AddressSet.parse([*body.get("sourceAddresses", ()), *_group_addresses(body.get("sourceIpGroups", ()), ip_groups, label, notes)])
    if body.get("ruleType") == "NetworkRule":
        addresses = [*body.get("destinationAddresses", ()), *_group_addresses(body.get("destinationIpGroups", ()), ip_groups, label, notes)]
        protocols = {p.upper() for p in body.get("ipProtocols", ())}
        return _Rule(label, allow, True, body, sources, Destinations.of(map(address_target, addresses)),
                     Destinations.of(Target("name", f.lower()) for f in body.get("destinationFqdns", ())),
                     frozenset({"TCP", "UDP", "ICMP"} if "ANY" in protocols else protocols), parse_ports(body.get("destinationPorts", ())),
                     (), False, tuple(notes))
    if not allow and (body.get("webCategories") or body.get("targetUrls")):
        notes.append(f"{label} denies web categories or URLs: whether they cover a required destination cannot be judged offline; taken not to")
    bound = bool(body.get("destinationAddresses")) and "*" not in body["destinationAddresses"]
    return _Rule(label, allow, False, body, sources, Destinations.of(map(fqdn_target, body.get("targetFqdns", ()))), Destinations(),
                 frozenset(), (), tuple((p["protocolType"].lower(), int(p["port"])) for p in body.get("protocols", ())), bound,
                 tuple(notes))


def _rules(parent_bodies: Iterable[Mapping[str, Any]], bodies: Iterable[Mapping[str, Any]], ip_groups: Groups) -> list[_Rule]:
    """Every filter rule, in Azure's processing order."""
    ordered = []
    for child, group_bodies in ((0, parent_bodies), (1, bodies)):
        for body in group_bodies:
            prefix = "" if child else "parent/"
            for collection in body["properties"].get("ruleCollections", ()):
                if collection.get("ruleCollectionType") != "FirewallPolicyFilterRuleCollection":
                    continue  # DNAT: inbound only
                allow = collection.get("action", {}).get("type", "").lower() == "allow"
                for index, rule in enumerate(collection.get("rules", ())):
                    if rule.get("ruleType") not in ("NetworkRule", "ApplicationRule"):
                        continue
                    key = (rule["ruleType"] != "NetworkRule", child, body["properties"]["priority"], body["name"],
                           collection["priority"], collection["name"], index)
                    ordered.append((key, f"{prefix}{body['name']}/{collection['name']}/{rule.get('name')}", allow, rule))
    ordered.sort(key=lambda item: item[0])
    return [_rule(label, allow, rule, ip_groups) for _, label, allow, rule in ordered]


def _transport(protocol: str) -> str:
    return "UDP" if protocol == "udp" else "TCP"


def _covers(rule: _Rule, sources: AddressSet, target: Target, protocol: str, ports: PortRange,
            tag_members: Mapping[str, set[str]]) -> Optional[tuple[str, str]]:
    """How ``rule`` matches all of the flow ('direct', 'fqdn' or 'tag' and what), or None."""
    if not rule.sources.covers_all(sources):
        return None
    if rule.network:
        if _transport(protocol) not in rule.transports or not ports_cover(rule.ports, ports):
            return None
        if rule.destinations.covers(target):
            return ("direct", "")
        return ("fqdn", target.text) if rule.fqdns.covers(target) else None
    if protocol not in _APP_PROTOCOLS or target.kind not in NAMED or rule.address_bound:
        return None
    if ports.start != ports.end or (protocol, ports.start) not in rule.protocols:
        return None
    if rule.destinations.covers(target):
        return ("direct", "")
    tag = next((t for t in rule.body.get("fqdnTags", ()) if target.text in tag_members.get(t, ())), None)
    return ("tag", tag) if tag else None


def _overlaps(rule: _Rule, source: Interval, target: Target, protocol: str, ports: PortRange, tag_members: Mapping[str, set[str]]) -> bool:
    """Does ``rule`` match part of the flow (how a Deny is judged)?"""
    if not rule.sources.overlaps(source):
        return False
    if rule.network:
        return (_transport(protocol) in rule.transports and ports_overlap(rule.ports, ports)
                and (rule.destinations.overlaps(target) or rule.fqdns.overlaps(target)))
    if protocol not in _APP_PROTOCOLS or target.kind not in NAMED:
        return False
    if not any(kind == protocol and ports.start <= port <= ports.end for kind, port in rule.protocols):
        return False
    return rule.destinations.overlaps(target) or any(target.text in tag_members.get(t, ()) for t in rule.body.get("fqdnTags", ()))


def _first_match(rules: Sequence[_Rule], source: Interval, target: Target, protocol: str, ports: PortRange,
                 tag_members: Mapping[str, set[str]]) -> tuple[Optional[_Rule], tuple[str, str]]:
    """The rule that decides the flow (None: the default deny) and, for an Allow, how it matched."""
    for rule in rules:
        if rule.allow:
            how = _covers(rule, AddressSet((source,)), target, protocol, ports, tag_members)
            if how:
                return rule, how
        elif _overlaps(rule, source, target, protocol, ports, tag_members):
            return rule, ("deny", "")
    return None, ("deny", "")


def _judge(req: Requirement, rules: Sequence[_Rule], sources: tuple[Interval, ...],
           tag_members: Mapping[str, set[str]]) -> tuple[bool, list[tuple[_Rule, tuple[str, str]]], Optional[str]]:
    """(allowed, the rules that allowed it and how, the first Deny that decided a flow)."""
    denied_by = None
    for option in req.options():
        destinations = (req.destination,) if req.destination in option.destinations else option.destinations
        flows = [(s, requirement_target(option.kind, d), rng) for d in destinations for rng in option.ports for s in sources]
        credits: list[tuple[_Rule, tuple[str, str]]] = []
        for source, target, rng in flows:
            rule, how = _first_match(rules, source, target, option.protocol, rng, tag_members)
            if rule is None or not rule.allow:
                denied_by = denied_by or (rule.label if rule else None)
                break
            credits.append((rule, how))
        else:
            if flows:
                return True, credits, None
    return False, [], denied_by


def _opened(rule: _Rule, ip_groups: Groups) -> tuple[list[tuple[Target, str, str, Optional[PortRange]]], list[str]]:
    """What an Allow rule opens: flows (target, shown as, protocol, ports or None for '*') and what is always extra."""
    body, flows, always = rule.body, [], []
    if rule.network:
        entries = [(address_target(a), a) for a in body.get("destinationAddresses", ())]
        for group_id in body.get("destinationIpGroups", ()):
            members = ip_groups.get(group_id)
            entries += ([(address_target(a), f"{a} (IP Group {group_id})") for a in members] if members is not None
                        else [(Target("unknown", group_id), f"IP Group {group_id} (addresses not known)")])
        entries += [(Target("name", f.lower()), f) for f in body.get("destinationFqdns", ())]
        for transport in ("TCP", "UDP"):
            if transport in rule.transports:
                flows += [(target, shown, transport.lower(), None if str(p).strip() == "*" else parse_ports([p])[0])
                          for target, shown in entries for p in body.get("destinationPorts", ())]
        if "ICMP" in rule.transports:
            always.append(f"{rule.label} allows ICMP to {', '.join(shown for _, shown in entries)}, which no requirement asks for")
        return flows, always
    for fqdn in body.get("targetFqdns", ()):
        target = fqdn_target(fqdn)
        for kind, port in rule.protocols:
            if is_lookalike(target):
                always.append(f"{rule.label} allows {fqdn} {kind}/{port}, which also opens look-alike names such as "
                              f"th3re4l{target.suffix}; no requirement asks for those")
            else:
                flows.append((target, fqdn, kind, PortRange(port, port)))
    for field, what in (("webCategories", "web category"), ("targetUrls", "URL")):
        always += [f"{rule.label} allows {what} {value} {kind}/{port}, which cannot be judged offline"
                   for value in body.get(field, ()) for kind, port in rule.protocols]
    return flows, always


def _extra(rule: _Rule, earlier_denies: Sequence[_Rule], candidates: Sequence[Requirement], ip_groups: Groups,
           tag_members: Mapping[str, set[str]]) -> list[str]:
    flows, always = _opened(rule, ip_groups)
    extra = []
    for target, shown, protocol, rng in flows:
        wanted = [p for req in candidates for option in req.options()
                  if (option.protocol if not rule.network else _transport(option.protocol).lower()) == protocol
                  and any(within(target, option.kind, d) for d in option.destinations) for p in option.ports]
        if rng is not None and ports_cover(wanted, rng):
            continue
        if any(_covers(deny, rule.sources, target, protocol, rng or ANY_PORT, tag_members) for deny in earlier_denies):
            continue
        extra.append(f"{rule.label} allows {shown} {protocol}/{rng if rng else '*'}, which no requirement asks for")
    extra += always
    for tag in rule.body.get("fqdnTags", ()):
        members = tag_members.get(tag, set())
        for kind, port in rule.protocols:
            if not any(req.destination in members and req.protocol == kind and ports_cover(req.ports, PortRange(port, port)) for req in candidates):
                extra.append(f"{rule.label} allows FQDN tag {tag} {kind}/{port}, which no requirement for its members asks for")
    return extra


def evaluate_bodies(bodies: Iterable[Mapping[str, Any]], requirements: Iterable[Requirement], role_sources: Mapping[str, Iterable[str]],
                    ip_groups: Groups | None = None, tag_members: Mapping[str, set[str]] | None = None,
                    parent_bodies: Iterable[Mapping[str, Any]] = ()) -> Verdict:
    """Is every requirement allowed by the bodies (after ``parent_bodies``, a parent policy's RCGs), and is anything
    allowed that no requirement asked for? ``ip_groups``: IP Group id -> addresses; ``tag_members``: FQDN tag ->
    the requirement destinations it stands for."""
    ip_groups, tag_members, requirements = {k: list(v) for k, v in (ip_groups or {}).items()}, tag_members or {}, list(requirements)
    rules = _rules(parent_bodies, bodies, ip_groups)
    sources = {role: tuple(i for i in map(parse_interval, cidrs) if i) for role, cidrs in role_sources.items()}
    missing: list[str] = []
    credited: dict[tuple[str, str], dict[str, int]] = {}  # (rule, 'fqdn' | 'tag') -> FQDN or tag -> requirements allowed
    for req in requirements:
        allowed, credits, denied_by = _judge(req, rules, sources.get(req.role, ()), tag_members)
        if not allowed:
            missing.append(f"{req.role} -> {req.destination} {req.protocol}/{format_ports(req.ports)} (entries: {', '.join(req.entry_ids)})"
                           + (f" denied by {denied_by}" if denied_by else ""))
        for label, how, what in sorted({(rule.label, how, what) for rule, (how, what) in credits if how != "direct"}):
            counts = credited.setdefault((label, how), {})
            counts[what] = counts.get(what, 0) + 1
    extra: list[str] = []
    assumed: list[str] = []
    for position, rule in enumerate(rules):
        assumed += rule.notes
        if not rule.allow:
            continue
        candidates = [r for r in requirements if sources.get(r.role) and rule.sources.covers_all(AddressSet(sources[r.role]))]
        extra += _extra(rule, [r for r in rules[:position] if not r.allow], candidates, ip_groups, tag_members)
        if (rule.label, "fqdn") in credited:
            assumed.append(f"{rule.label} allows {', '.join(sorted(credited[rule.label, 'fqdn']))} by resolved address: any other name "
                           "sharing those addresses passes too")
        for tag in rule.body.get("fqdnTags", ()):
            count = credited.get((rule.label, "tag"), {}).get(tag, 0)
            assumed.append(f"{rule.label} allows FQDN tag {tag}, taken to hold the matrix's destinations for it ({count} requirement(s) "
                           "allowed by it); Microsoft publishes no member list, so what else it opens cannot be listed offline")
    if any(not r.network for r in rules):
        assumed.append(INFRASTRUCTURE)
    return Verdict(missing=tuple(missing), extra=tuple(extra), rules_checked=len(rules), assumed=tuple(dict.fromkeys(assumed)))


def evaluate(artefacts: Mapping[str, str], requirements: Iterable[Requirement],
             tag_members: Optional[Mapping[str, set[str]]] = None) -> Verdict:
    """Judge what ``render`` produced: ``azure/<group>.json`` RCG bodies, ``azure/ip-groups/<name>.json`` IP Groups and
    ``azure/parent/<name>.json`` a parent policy's RCG bodies. Role sources come from the requirements themselves."""
    requirements = list(requirements)
    bodies, parents, ip_groups = [], [], {}
    for path, text in sorted(artefacts.items()):
        parts = path.split("/")
        if parts[0] != "azure" or not path.endswith(".json"):
            continue
        if len(parts) == 3 and parts[1] == "ip-groups":
            document = json.loads(text)
            ip_groups[document["id"]] = document["properties"]["ipAddresses"]
        elif len(parts) == 3 and parts[1] == "parent":
            parents.append(json.loads(text))
        elif len(parts) == 2:
            bodies.append(json.loads(text))
    role_sources = {r.role: r.sources for r in requirements}
    return evaluate_bodies(bodies, requirements, role_sources, ip_groups, tag_members, parents)
