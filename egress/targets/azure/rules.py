"""Azure Firewall Policy rules as the evaluator reads them: every filter rule of the rule collection groups in Azure's
processing order (``_rules``), and how one rule matches a flow: an Allow by covering all of it (``_covers``), a Deny by
overlapping it (``_overlaps``), the first match deciding (``_first_match``). The ``_destination`` halves judge all but the
sources, so evaluate.py can judge a role's sources all at once. Semantics: evaluate.py's docstring.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Sequence

from ...addresses import PortRange
from ..sets import AddressSet, Interval, ports_cover, ports_overlap
from .matching import NAMED, Destinations, Target, address_target, fqdn_target, parse_ports

_APP_PROTOCOLS = ("http", "https", "mssql")
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
    return _covers_destination(rule, target, protocol, ports, tag_members)


def _covers_destination(rule: _Rule, target: Target, protocol: str, ports: PortRange,
                        tag_members: Mapping[str, set[str]]) -> Optional[tuple[str, str]]:
    """``_covers`` but for the sources."""
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
    return rule.sources.overlaps(source) and _overlaps_destination(rule, target, protocol, ports, tag_members)


def _overlaps_destination(rule: _Rule, target: Target, protocol: str, ports: PortRange, tag_members: Mapping[str, set[str]]) -> bool:
    """``_overlaps`` but for the source."""
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
