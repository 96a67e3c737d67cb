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

Bounded time: a role may have thousands of sources. Only a rule's sources depend on them, so each (destination, port
range) is walked through the rules once for all of a role's sources (``SourcePieces``: a bit per source), with the
verdict the per-source walk gives: its first failing flow, and the rules that allowed it.
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Optional, Sequence

from ...addresses import PortRange, format_ports
from ...models import Requirement
from ..sets import SourcePieces, lowest, parse_interval, ports_cover
from ..verdict import Verdict
from .matching import ANY_PORT, Target, address_target, fqdn_target, is_lookalike, parse_ports, requirement_target, within
from .rules import Groups, _covers, _covers_destination, _first_match, _overlaps_destination, _Rule, _rules, _transport

INFRASTRUCTURE = ("Azure's infrastructure rule collection allows platform FQDNs (compute Platform Image Repository storage, "
                   "managed-disk status storage, Azure Diagnostics and Logging (MDS), Microsoft Entra ID) after every application "
                   "rule and before the default deny; it is in no rule collection group and no requirement is counted as allowed "
                   "by it (infrastructure-fqdns.md)")


def _first_matches(rules: Sequence[_Rule], pieces: SourcePieces, target: Target, protocol: str, ports: PortRange,
                   tag_members: Mapping[str, set[str]]) -> tuple[list[tuple[_Rule, tuple[str, str]]], Optional[tuple[int, Optional[_Rule]]]]:
    """``_first_match`` for every source of ``pieces`` at once: (the Allow rules that decided some source and how, the
    first source (index) not allowed and the rule that denied it, None for the default deny; None when all are)."""
    undecided, credits, first = pieces.all, [], None
    for rule in rules:
        if rule.allow:
            how = _covers_destination(rule, target, protocol, ports, tag_members)
            decided = undecided & pieces.covered_by(rule.sources) if how else 0
            if decided:
                credits.append((rule, how))
        else:
            decided = undecided & pieces.overlapped_by(rule.sources) if _overlaps_destination(rule, target, protocol, ports, tag_members) else 0
            if decided and (first is None or lowest(decided) < first[0]):
                first = (lowest(decided), rule)
        undecided &= ~decided
        if not undecided:
            break
    if undecided and (first is None or lowest(undecided) < first[0]):
        first = (lowest(undecided), None)
    return credits, first


def _judge(req: Requirement, rules: Sequence[_Rule], pieces: SourcePieces,
           tag_members: Mapping[str, set[str]]) -> tuple[bool, list[tuple[_Rule, tuple[str, str]]], Optional[str]]:
    """(allowed, the rules that allowed it and how, the first Deny that decided a flow). Flows are judged in the order
    destination, port range, source: the first one not allowed ends the option."""
    denied_by = None
    for option in req.options():
        destinations = (req.destination,) if req.destination in option.destinations else option.destinations
        flows = [(requirement_target(option.kind, d), rng) for d in destinations for rng in option.ports] if len(pieces) else []
        credits: list[tuple[_Rule, tuple[str, str]]] = []
        for target, rng in flows:
            allowed_by, first = _first_matches(rules, pieces, target, option.protocol, rng, tag_members)
            if first is not None:
                denied_by = denied_by or (first[1].label if first[1] else None)
                break
            credits += allowed_by
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
    sources = {role: SourcePieces(i for i in map(parse_interval, cidrs) if i) for role, cidrs in role_sources.items()}
    missing: list[str] = []
    credited: dict[tuple[str, str], dict[str, int]] = {}  # (rule, 'fqdn' | 'tag') -> FQDN or tag -> requirements allowed
    for req in requirements:
        allowed, credits, denied_by = _judge(req, rules, sources.get(req.role) or SourcePieces(()), tag_members)
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
        # the requirements of the roles whose sources all lie inside the rule's (none when the role has no sources)
        inside = {role for role, pieces in sources.items() if len(pieces) and pieces.covered_by(rule.sources) == pieces.all}
        candidates = [r for r in requirements if r.role in inside]
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


__all__ = ["INFRASTRUCTURE", "_Rule", "_covers", "_first_match", "_rules", "evaluate", "evaluate_bodies"]
