"""Judge emitted Azure rule collection group bodies (what will be deployed), with Azure's matching semantics.

- Network rules: IP protocol, destination port (``*``, ``n``, ``a-b``), destination address (``*``, IP, CIDR,
  service tag by name) or destination FQDN (exact only).
- Application rules: protocol type + port; target FQDN exact, ``*``, or a left-most ``*.`` wildcard (subdomains,
  never the apex); FQDN tags by membership (the caller says which destinations a tag covers).
- Sources: every CIDR of the requirement's role must lie inside the rule's source addresses or IP Groups.

``evaluate`` answers both questions of DESIGN.md: is every requirement allowed (``missing``), and does any rule
allow a destination, protocol or port that no requirement asked for (``extra``)?
"""
from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional

from ...addresses import PortRange, host_matches, parse_port, wildcard_covers
from ...models import Requirement
from ..verdict import Verdict


@dataclass
class _Rule:
    group: str
    collection: str
    body: Mapping[str, Any]
    sources: tuple[str, ...] = field(default=())

    @property
    def label(self) -> str:
        return f"{self.group}/{self.collection}/{self.body.get('name')}"


def _ports(spec: Iterable[str]) -> list[PortRange | None]:
    return [None if p == "*" else parse_port(p) for p in spec]  # None = any port


def _port_covered(rng: PortRange, spec: list[PortRange | None]) -> bool:
    return any(p is None or (p.start <= rng.start and rng.end <= p.end) for p in spec)


def _in_networks(candidate: str, networks: Iterable[str]) -> bool:
    inner = ipaddress.ip_network(candidate, strict=False)
    for entry in networks:
        if entry == "*":
            return True
        try:
            outer = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            continue  # a service tag: never matches an address
        if inner.version == outer.version and inner.subnet_of(outer):
            return True
    return False


def _rules(bodies: Iterable[Mapping[str, Any]], ip_groups: Mapping[str, Iterable[str]]) -> list[_Rule]:
    rules = []
    for body in bodies:
        for collection in body["properties"]["ruleCollections"]:
            if collection.get("action", {}).get("type") != "Allow":
                continue
            for rule in collection["rules"]:
                sources = list(rule.get("sourceAddresses", []))
                for group_id in rule.get("sourceIpGroups", []):
                    sources += list(ip_groups.get(group_id, ()))  # an IP Group whose contents are unknown adds nothing
                rules.append(_Rule(body["name"], collection["name"], rule, tuple(sources)))
    # Azure evaluates network rules before application rules; order does not change *whether* a flow passes.
    return rules


def _sources_ok(rule: _Rule, role_sources: Iterable[str]) -> bool:
    role_sources = list(role_sources)
    return bool(role_sources) and all(_in_networks(s, rule.sources) for s in role_sources)


def _network_allows(rule: _Rule, kind: str, destination: str, protocol: str, rng: PortRange) -> bool:
    body = rule.body
    wanted = "UDP" if protocol == "udp" else "TCP"
    if not ({wanted, "Any"} & set(body.get("ipProtocols", []))):
        return False
    if not _port_covered(rng, _ports(body.get("destinationPorts", []))):
        return False
    addresses = body.get("destinationAddresses", [])
    if "*" in addresses:
        return True
    if kind in ("ip", "cidr"):
        return _in_networks(destination, addresses)
    if kind == "service-tag":
        return destination in addresses
    if kind == "fqdn":
        return destination in body.get("destinationFqdns", [])
    return False  # wildcard or any need '*'


def _application_allows(rule: _Rule, kind: str, destination: str, protocol: str, rng: PortRange, tag_members: Mapping[str, set[str]]) -> bool:
    if protocol not in ("http", "https") or rng.start != rng.end:
        return False
    body = rule.body
    if not any(p["protocolType"].lower() == protocol and p["port"] == rng.start for p in body.get("protocols", [])):
        return False
    for target in body.get("targetFqdns", []):
        if target == "*":
            return True
        if kind == "fqdn" and host_matches(target, destination):
            return True
        if kind == "wildcard" and wildcard_covers(target, destination):
            return True
    return any(destination in tag_members.get(tag, set()) for tag in body.get("fqdnTags", []))


def _allows(rule: _Rule, kind: str, destination: str, protocol: str, rng: PortRange, tag_members: Mapping[str, set[str]]) -> bool:
    if rule.body.get("ruleType") == "NetworkRule":
        return _network_allows(rule, kind, destination, protocol, rng)
    return _application_allows(rule, kind, destination, protocol, rng, tag_members)


def _requirement_allowed(req: Requirement, rules: list[_Rule], role_sources: Iterable[str], tag_members: Mapping[str, set[str]]) -> bool:
    candidates = [r for r in rules if _sources_ok(r, role_sources)]
    for option in req.options():
        own = req.destination in option.destinations
        destinations = (req.destination,) if own else option.destinations
        if all(any(_allows(r, option.kind, d, option.protocol, rng, tag_members) for r in candidates)
               for d in destinations for rng in option.ports):
            return True
    return False


def _rule_flows(rule: _Rule) -> Iterable[tuple[str, str, str, PortRange | None]]:
    """(destination, protocol, kind-hint, port range or None for '*') for every flow the rule allows."""
    body = rule.body
    if body.get("ruleType") == "NetworkRule":
        protocols = ["udp"] if body.get("ipProtocols") == ["UDP"] else ["tcp"] if body.get("ipProtocols") == ["TCP"] else ["tcp", "udp"]
        for destination in [*body.get("destinationAddresses", []), *body.get("destinationFqdns", [])]:
            for protocol in protocols:
                for rng in _ports(body.get("destinationPorts", [])):
                    yield destination, protocol, "network", rng
    else:
        for target in [*body.get("targetFqdns", []), *(f"tag:{t}" for t in body.get("fqdnTags", []))]:
            for protocol in body.get("protocols", []):
                yield target, protocol["protocolType"].lower(), "application", PortRange(protocol["port"], protocol["port"])


def _flow_requested(destination: str, protocol: str, hint: str, rng: PortRange | None, rule: _Rule,
                    requirements: list[Requirement], role_sources: Mapping[str, Iterable[str]], tag_members: Mapping[str, set[str]]) -> bool:
    if rng is None:
        return False  # '*' ports are never requested by the matrix
    for req in requirements:
        if sorted(role_sources.get(req.role, ())) != sorted(rule.sources):
            continue
        if destination.startswith("tag:"):
            if req.destination in tag_members.get(destination[4:], set()) and req.protocol == protocol and any(
                    p.start <= rng.start and rng.end <= p.end for p in req.ports):
                return True
            continue
        for option in req.options():
            transport = "udp" if option.protocol == "udp" else "tcp" if hint == "network" else option.protocol
            if transport != protocol or destination not in option.destinations:
                continue
            if any(p.start <= rng.start and rng.end <= p.end for p in option.ports):
                return True
    return False


def evaluate_bodies(bodies: Iterable[Mapping[str, Any]], requirements: Iterable[Requirement], role_sources: Mapping[str, Iterable[str]],
                    ip_groups: Mapping[str, Iterable[str]] | None = None, tag_members: Mapping[str, set[str]] | None = None) -> Verdict:
    """Is every requirement allowed by the bodies, and is anything allowed that no requirement asked for?"""
    rules = _rules(bodies, ip_groups or {})
    tag_members = tag_members or {}
    requirements = list(requirements)
    missing = [
        f"{r.role} -> {r.destination} {r.protocol}/{','.join(map(str, r.ports))} (entries: {', '.join(r.entry_ids)})"
        for r in requirements if not _requirement_allowed(r, rules, role_sources.get(r.role, ()), tag_members)
    ]
    extra = []
    for rule in rules:
        for destination, protocol, hint, rng in _rule_flows(rule):
            if not _flow_requested(destination, protocol, hint, rng, rule, requirements, role_sources, tag_members):
                extra.append(f"{rule.label} allows {destination} {protocol}/{rng if rng else '*'}, which no requirement asks for")
    return Verdict(missing=tuple(missing), extra=tuple(extra), rules_checked=len(rules))


def evaluate(artefacts: Mapping[str, str], requirements: Iterable[Requirement],
             tag_members: Optional[Mapping[str, set[str]]] = None) -> Verdict:
    """Judge what ``render`` produced (``azure/<group>.json`` bodies and ``azure/ip-groups/<name>.json``): the role
    sources come from the requirements themselves, the IP Groups' addresses from their own artefacts."""
    requirements = list(requirements)
    bodies, ip_groups = [], {}
    for path, text in sorted(artefacts.items()):
        if not path.startswith("azure/") or not path.endswith(".json"):
            continue
        document = json.loads(text)
        if path.startswith("azure/ip-groups/"):
            ip_groups[document["id"]] = document["properties"]["ipAddresses"]
        else:
            bodies.append(document)
    role_sources = {r.role: r.sources for r in requirements}
    return evaluate_bodies(bodies, requirements, role_sources, ip_groups, tag_members)
