"""The evaluators as they were before sources were judged all at once: every flow per source CIDR, every address set
scanned interval by interval. Kept only as the oracle of tests/test_evaluate_sources.py, which checks that the fast
path (egress/targets/sets.py ``SourcePieces``, bisection) gives exactly these verdicts.

Copied from the evaluators at the commit before the change, with ``AddressSet.covers``/``overlaps``/``covers_all``
replaced by the linear scans below; the pieces the change did not touch are imported from the evaluators.
"""
from __future__ import annotations

import importlib
import ipaddress
import json
from typing import Iterable, Mapping, Optional, Sequence

from egress.addresses import PortRange, format_ports
from egress.breadth import collapse, networks_of
from egress.models import ROLES, Requirement, ResolvedAlternative
from egress.targets.aws.evaluate import DROPPING_DEFAULTS, POLICY_FILE, RULES_FILE, SECURITY_GROUPS_FILE
from egress.targets.aws.matching import Flow, SecurityGroupRule, _interval_text, _proto_fits, _security_groups
from egress.targets.aws.rules import _APP_TRANSPORT, ANY_PORT, Rule, parse_rules
from egress.targets.azure.matching import NAMED, Target, requirement_target
from egress.targets.options import requirement_label
from egress.targets.sets import IPV4_ALL, AddressSet, Interval, parse_interval, ports_cover, ports_overlap
from egress.targets.verdict import Verdict

azure = importlib.import_module("egress.targets.azure.evaluate")  # the package exports a function of the same name
azure_rules = importlib.import_module("egress.targets.azure.rules")


def covers(addresses: AddressSet, inner: Interval) -> bool:
    return any(v == inner[0] and first <= inner[1] and inner[2] <= last for v, first, last in addresses.intervals)


def overlaps(addresses: AddressSet, other: Interval) -> bool:
    return any(v == other[0] and first <= other[2] and other[1] <= last for v, first, last in addresses.intervals)


def covers_all(addresses: AddressSet, inner: AddressSet) -> bool:
    return bool(inner.intervals) and all(covers(addresses, i) for i in inner.intervals)


# ---------------------------------------------------------------------------------------------------------------- aws
def aws_flows(req: Requirement, option: ResolvedAlternative) -> list[Flow]:
    transport = "udp" if option.protocol == "udp" else "tcp"
    app = {"https": "tls", "http": "http"}.get(option.protocol)
    flows = []
    for source in req.sources:
        interval = parse_interval(source)
        if interval is None:
            continue
        for port in option.ports:
            for destination in option.destinations:
                if option.kind in ("ip", "cidr"):
                    flows.append(Flow(interval, transport, app, port, address=parse_interval(destination)))
                elif option.kind == "any":
                    flows.append(Flow(interval, transport, app, port, address=IPV4_ALL))
                elif option.kind == "wildcard" and destination.startswith("*."):
                    flows.append(Flow(interval, transport, app, port, subdomains_of=destination[2:].lower()))
                else:
                    flows.append(Flow(interval, transport, app, port, name=destination.lower()))
    return flows


def aws_covers(rule: Rule, flow: Flow) -> bool:
    if rule.opaque or rule.to_client or not _proto_fits(rule, flow, exact=True):
        return False
    if rule.sources is not None and not covers(rule.sources, flow.source):
        return False
    if rule.destinations is not None and (flow.address is None or not covers(rule.destinations, flow.address)):
        return False
    if not ports_cover(rule.ports, flow.port):
        return False
    if rule.names:
        if flow.app != rule.app:
            return False
        if flow.name:
            return all(m.matches(flow.name) for m in rule.names)
        return bool(flow.subdomains_of) and all(m.covers_subdomains(flow.subdomains_of) for m in rule.names)
    return True


def aws_overlaps(rule: Rule, flow: Flow) -> bool:
    if rule.to_client or not _proto_fits(rule, flow, exact=False):
        return False
    if rule.sources is not None and not overlaps(rule.sources, flow.source):
        return False
    if rule.destinations is not None and flow.address is not None and not overlaps(rule.destinations, flow.address):
        return False
    if not ports_overlap(rule.ports, flow.port):
        return False
    if rule.names and not rule.opaque:
        if flow.name:
            return all(m.matches(flow.name) for m in rule.names)
        if flow.subdomains_of:
            return all(m.overlaps_subdomains(flow.subdomains_of) for m in rule.names)
    return True


def _firewall_verdict(rules: list[Rule], flow: Flow) -> tuple[bool, str]:
    for rule in rules:
        if rule.allows and aws_covers(rule, flow):
            return True, rule.label
        if rule.blocks and aws_overlaps(rule, flow):
            return False, f"denied by {rule.label}"
    return False, "no rule passes it (the policy's default action aws:drop_established)"


def _sg_allows(rule: SecurityGroupRule, flow: Flow) -> bool:
    if rule.protocol not in ("-1", flow.transport) or not (rule.ports.start <= flow.port.start and flow.port.end <= rule.ports.end):
        return False
    return covers(rule.cidr, flow.address if flow.address is not None else IPV4_ALL)


def aws_evaluate(artefacts: Mapping[str, str], requirements: Iterable[Requirement]) -> Verdict:
    rules = parse_rules(artefacts[RULES_FILE]) if RULES_FILE in artefacts else None
    sg_rules = _security_groups(json.loads(artefacts[SECURITY_GROUPS_FILE])) if SECURITY_GROUPS_FILE in artefacts else []
    assumed = [f"{rule.label} is not judged ({rule.opaque}): as a pass it allows nothing here, as a drop it stops all it could"
               for rule in rules or () if rule.opaque]
    extra: list[str] = []
    if rules is not None:
        if POLICY_FILE in artefacts:
            policy = json.loads(artefacts[POLICY_FILE])["FirewallPolicy"]
            defaults = set(policy.get("StatefulDefaultActions", ()))
            if not defaults & DROPPING_DEFAULTS:
                extra.append(f"the firewall policy's default actions {sorted(defaults)} pass every flow no rule drops")
        else:
            assumed.append("the firewall policy that references these rule groups is STRICT_ORDER with the default action "
                           "aws:drop_established (the stack creates no policy)")
    requirements = list(requirements)
    missing = []
    for req in requirements:
        reasons = []
        for option in req.options():
            flows = aws_flows(req, option)
            why = ""
            for flow in flows:
                role_groups = [r for r in sg_rules if r.role == req.role]
                through = next((r for r in role_groups if _sg_allows(r, flow)), None)
                if through is None:
                    why = f"no security-group egress rule of role {req.role} allows {flow.describe()}"
                    break
                if rules is not None:
                    passed, label = _firewall_verdict(rules, flow)
                    if not passed:
                        why = f"{flow.describe()}: {label}"
                        break
            if flows and not why:
                break
            reasons.append(why or "the role has no source CIDRs")
        else:
            missing.append(f"{requirement_label(req)}: {reasons[0]}")
    extra += _extra_rules(rules or [], requirements) + _extra_security_groups(sg_rules, requirements, firewall=rules is not None)
    return Verdict(missing=tuple(missing), extra=tuple(extra), rules_checked=len(rules or ()) + len(sg_rules), assumed=tuple(assumed))


def _needed_names(requirements: list[Requirement], rule: Rule) -> list[tuple[ResolvedAlternative, str]]:
    protocol = "https" if rule.app == "tls" else "http"
    out = []
    for req in requirements:
        if rule.sources is not None and not all(covers(rule.sources, i) for s in req.sources if (i := parse_interval(s))):
            continue
        for option in req.options():
            if option.protocol == protocol and option.kind in ("fqdn", "wildcard", "url"):
                out += [(option, d.lower()) for d in option.destinations]
    return out


def _name_rule_extra(rule: Rule, requirements: list[Requirement]) -> list[str]:
    needed = _needed_names(requirements, rule)
    hosts = {d for _, d in needed if not d.startswith("*.")}
    wildcards = {d[2:] for _, d in needed if d.startswith("*.")}
    allows, used_ports = [], []
    for match in rule.names:
        text = match.text.lower()
        if match.startswith and match.endswith:
            host = text[1:] if match.dotprefix else text
            needed_here = [(o, d) for o, d in needed if d == host or any(host.endswith("." + w) for w in wildcards if d == f"*.{w}")]
            if not needed_here:
                allows.append(f"{host}, which no requirement names")
        elif match.endswith and text.startswith("."):
            domain = text[1:]
            if match.dotprefix and domain not in hosts:
                allows.append(f"the apex {domain}")
            needed_here = [(o, d) for o, d in needed if d == domain or (d.startswith("*.") and ("." + domain).endswith("." + d[2:]))]
            if not any(("." + domain).endswith("." + w) for w in wildcards):
                allows.append(f"every name below {domain}, which no requirement asks for")
        else:
            needed_here = []
            allows.append(f"every name {'ending with' if match.endswith else 'containing'} '{match.text}'")
        used_ports += [p for o, _ in needed_here for p in o.ports]
    if used_ports and not all(ports_cover(used_ports, p) for p in rule.ports):
        asked = format_ports(sorted(set(used_ports), key=lambda p: p.start))
        allows.append(f"every port, not only {asked}" if rule.ports == (ANY_PORT,) else f"ports {format_ports(rule.ports)}, not only {asked}")
    return allows


def _address_rule_extra(rule: Rule, requirements: list[Requirement]) -> list[str]:
    transports = {"udp"} if rule.proto == "udp" else {"tcp"} if rule.proto in ("tcp", *_APP_TRANSPORT) else {"tcp", "udp"}
    flows = [f for req in requirements for option in req.options() for f in aws_flows(req, option) if f.address is not None]
    targets = rule.destinations.intervals if rule.destinations is not None else (IPV4_ALL,)
    allows = []
    for transport in sorted(transports):
        for interval in targets:
            for port in rule.ports:
                if not any(f.transport == transport and f.address is not None and covers(AddressSet((f.address,)), interval)
                           and f.port.start <= port.start and port.end <= f.port.end for f in flows):
                    allows.append(f"{transport}/{port} to {_interval_text(interval)}, which no requirement asks for")
    return allows


def _extra_rules(rules: list[Rule], requirements: list[Requirement]) -> list[str]:
    out = []
    for rule in rules:
        if not rule.allows or rule.opaque or rule.to_client:
            continue
        allows = _name_rule_extra(rule, requirements) if rule.names else _address_rule_extra(rule, requirements)
        if allows:
            what = f" ({rule.app_buffer} {rule.names[0].text})" if rule.names else ""
            out.append(f"{rule.label}{what}: allows {'; '.join(allows)}")
    return out


def _extra_security_groups(sg_rules: list[SecurityGroupRule], requirements: list[Requirement], firewall: bool) -> list[str]:
    out = []
    for rule in sg_rules:
        flows = [f for req in requirements if req.role == rule.role for option in req.options() for f in aws_flows(req, option)]
        used = [f for f in flows if _sg_allows(rule, f)]
        if not used:
            out.append(f"{rule.label} ({rule.description}): no requirement of role {rule.role} goes through it")
        elif covers(rule.cidr, IPV4_ALL) and not firewall:
            out.append(f"{rule.label}: every host on these ports, with no Network Firewall behind it to filter by name")
    return out


# -------------------------------------------------------------------------------------------------------------- azure
def azure_covers(rule, sources: AddressSet, target: Target, protocol: str, ports: PortRange, tag_members) -> Optional[tuple[str, str]]:
    if not covers_all(rule.sources, sources):
        return None
    if rule.network:
        if azure_rules._transport(protocol) not in rule.transports or not ports_cover(rule.ports, ports):
            return None
        if rule.destinations.covers(target):
            return ("direct", "")
        return ("fqdn", target.text) if rule.fqdns.covers(target) else None
    if protocol not in azure_rules._APP_PROTOCOLS or target.kind not in NAMED or rule.address_bound:
        return None
    if ports.start != ports.end or (protocol, ports.start) not in rule.protocols:
        return None
    if rule.destinations.covers(target):
        return ("direct", "")
    tag = next((t for t in rule.body.get("fqdnTags", ()) if target.text in tag_members.get(t, ())), None)
    return ("tag", tag) if tag else None


def azure_overlaps(rule, source: Interval, target: Target, protocol: str, ports: PortRange, tag_members) -> bool:
    if not overlaps(rule.sources, source):
        return False
    if rule.network:
        return (azure_rules._transport(protocol) in rule.transports and ports_overlap(rule.ports, ports)
                and (rule.destinations.overlaps(target) or rule.fqdns.overlaps(target)))
    if protocol not in azure_rules._APP_PROTOCOLS or target.kind not in NAMED:
        return False
    if not any(kind == protocol and ports.start <= port <= ports.end for kind, port in rule.protocols):
        return False
    return rule.destinations.overlaps(target) or any(target.text in tag_members.get(t, ()) for t in rule.body.get("fqdnTags", ()))


def _first_match(rules: Sequence, source: Interval, target: Target, protocol: str, ports: PortRange, tag_members):
    for rule in rules:
        if rule.allow:
            how = azure_covers(rule, AddressSet((source,)), target, protocol, ports, tag_members)
            if how:
                return rule, how
        elif azure_overlaps(rule, source, target, protocol, ports, tag_members):
            return rule, ("deny", "")
    return None, ("deny", "")


def _judge(req: Requirement, rules: Sequence, sources: tuple[Interval, ...], tag_members):
    denied_by = None
    for option in req.options():
        destinations = (req.destination,) if req.destination in option.destinations else option.destinations
        flows = [(s, requirement_target(option.kind, d), rng) for d in destinations for rng in option.ports for s in sources]
        credits = []
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


def azure_evaluate_bodies(bodies, requirements, role_sources, ip_groups=None, tag_members=None, parent_bodies=()) -> Verdict:
    ip_groups, tag_members, requirements = {k: list(v) for k, v in (ip_groups or {}).items()}, tag_members or {}, list(requirements)
    rules = azure_rules._rules(parent_bodies, bodies, ip_groups)
    sources = {role: tuple(i for i in map(parse_interval, cidrs) if i) for role, cidrs in role_sources.items()}
    missing: list[str] = []
    credited: dict[tuple[str, str], dict[str, int]] = {}
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
        candidates = [r for r in requirements if sources.get(r.role) and covers_all(rule.sources, AddressSet(sources[r.role]))]
        extra += azure._extra(rule, [r for r in rules[:position] if not r.allow], candidates, ip_groups, tag_members)
        if (rule.label, "fqdn") in credited:
            assumed.append(f"{rule.label} allows {', '.join(sorted(credited[rule.label, 'fqdn']))} by resolved address: any other name "
                           "sharing those addresses passes too")
        for tag in rule.body.get("fqdnTags", ()):
            count = credited.get((rule.label, "tag"), {}).get(tag, 0)
            assumed.append(f"{rule.label} allows FQDN tag {tag}, taken to hold the matrix's destinations for it ({count} requirement(s) "
                           "allowed by it); Microsoft publishes no member list, so what else it opens cannot be listed offline")
    if any(not r.network for r in rules):
        assumed.append(azure.INFRASTRUCTURE)
    return Verdict(missing=tuple(missing), extra=tuple(extra), rules_checked=len(rules), assumed=tuple(dict.fromkeys(assumed)))


# ------------------------------------------------------------------------------------------------- allows, kubernetes
def _and(a, b):
    b = list(b)
    return collapse(x if x.prefixlen >= y.prefixlen else y for x in a for y in b if x.version == y.version and x.overlaps(y))


def roles_holding(sources, role_sources: Mapping[str, Sequence[str]]) -> frozenset[str]:
    """allows._with_roles' old reading: the roles (and source groups) whose networks, intersected with the sources, give all of them."""
    role_nets = {role: networks_of(role_sources.get(role, ())) for role in role_sources}
    return frozenset(role for role, nets in role_nets.items() if nets and _and(sources, nets) == collapse(sources))


def with_roles(allows, profile) -> list:
    """allows._with_roles as it was."""
    from dataclasses import replace

    role_sources = {role: profile.role_sources(role) for role in (*ROLES, *profile.source_groups)}
    return [replace(a, roles=frozenset(set(a.roles) | (roles_holding(a.sources, role_sources) if a.sources else set()))) for a in allows]


def src_matches(values: Sequence[str], src: str) -> bool:
    """kubernetes/evaluate.py ``_matches`` for a ``src`` ACL (without 'all'), as it was."""
    address = ipaddress.ip_address(src)
    return any(address in ipaddress.ip_network(v, strict=False) for v in values)


__all__ = ["with_roles", "aws_evaluate", "azure_evaluate_bodies", "covers", "overlaps", "covers_all", "roles_holding", "src_matches"]
