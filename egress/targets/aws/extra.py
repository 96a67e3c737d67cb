"""AWS: what a pass rule or a security-group rule opens that no judged requirement needs (the verdict's ``extra``):
a domain list's apex, its every-port match, names that only end the same way, addresses or ports nobody asks for."""
from __future__ import annotations

from typing import Callable

from ...addresses import format_ports
from ...models import Requirement, ResolvedAlternative
from ..sets import IPV4_ALL, AddressSet, SourcePieces, ports_cover
from .matching import Flow, SecurityGroupRule, _destination_flows, _interval_text, _sg_allows
from .rules import _APP_TRANSPORT, ANY_PORT, Rule

Pieces = Callable[[Requirement], SourcePieces]  # a requirement's sources, judged all at once


def _needed_names(requirements: list[Requirement], rule: Rule, pieces: Pieces) -> list[tuple[ResolvedAlternative, str]]:
    """(option, destination) of the name requirements whose role's sources lie inside the rule's sources."""
    protocol = "https" if rule.app == "tls" else "http"
    out = []
    for req in requirements:
        if rule.sources is not None and pieces(req).covered_by(rule.sources) != pieces(req).all:
            continue
        for option in req.options():
            if option.protocol == protocol and option.kind in ("fqdn", "wildcard", "url"):
                out += [(option, d.lower()) for d in option.destinations]
    return out


def _name_rule_extra(rule: Rule, requirements: list[Requirement], pieces: Pieces) -> list[str]:
    """What a tls.sni / http.host pass opens beyond the names (and ports) the requirements ask for."""
    needed = _needed_names(requirements, rule, pieces)
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


def _address_flows(requirements: list[Requirement], pieces: Pieces) -> list[Flow]:
    """The requirements' flows to addresses, once per source list rather than per source (only their destinations count)."""
    return [f for req in requirements if len(pieces(req)) for option in req.options() for f in _destination_flows(option) if f.address is not None]


def _address_rule_extra(rule: Rule, flows: list[Flow]) -> list[str]:
    transports = {"udp"} if rule.proto == "udp" else {"tcp"} if rule.proto in ("tcp", *_APP_TRANSPORT) else {"tcp", "udp"}
    targets = rule.destinations.intervals if rule.destinations is not None else (IPV4_ALL,)
    allows = []
    for transport in sorted(transports):
        for interval in targets:
            for port in rule.ports:
                if not any(f.transport == transport and f.address is not None and AddressSet((f.address,)).covers(interval)
                           and f.port.start <= port.start and port.end <= f.port.end for f in flows):
                    allows.append(f"{transport}/{port} to {_interval_text(interval)}, which no requirement asks for")
    return allows


def extra_rules(rules: list[Rule], requirements: list[Requirement], pieces: Pieces) -> list[str]:
    out = []
    address_flows = _address_flows(requirements, pieces)
    for rule in rules:
        if not rule.allows or rule.opaque or rule.to_client:
            continue
        allows = _name_rule_extra(rule, requirements, pieces) if rule.names else _address_rule_extra(rule, address_flows)
        if allows:
            what = f" ({rule.app_buffer} {rule.names[0].text})" if rule.names else ""
            out.append(f"{rule.label}{what}: allows {'; '.join(allows)}")
    return out


def extra_security_groups(sg_rules: list[SecurityGroupRule], requirements: list[Requirement], firewall: bool,
                           pieces: Pieces) -> list[str]:
    out = []
    # the security groups do not look at the source: a requirement's flows count once, if its role has any source
    with_sources = [req for req in requirements if len(pieces(req))]
    for rule in sg_rules:
        flows = [f for req in with_sources if req.role == rule.role for option in req.options() for f in _destination_flows(option)]
        used = [f for f in flows if _sg_allows(rule, f)]
        if not used:
            out.append(f"{rule.label} ({rule.description}): no requirement of role {rule.role} goes through it")
        elif rule.cidr.covers(IPV4_ALL) and not firewall:
            out.append(f"{rule.label}: every host on these ports, with no Network Firewall behind it to filter by name")
    return out
