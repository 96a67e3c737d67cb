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


Need = tuple[Requirement, ResolvedAlternative, str]  # a requirement, its option, one destination (lower case)


class Needed:
    """The requirements' names by protocol, exact host and wildcard domain, so a rule finds the few it may serve without
    walking them all (a source group's thousands of exact entries)."""

    def __init__(self, requirements: list[Requirement], pieces: Pieces):
        self.pieces = pieces
        self.hosts: dict[tuple[str, str], list[Need]] = {}  # (protocol, host) -> needs
        self.wildcards: dict[tuple[str, str], list[Need]] = {}  # (protocol, domain of '*.domain') -> needs
        for req in requirements:
            for option in req.options():
                if option.kind in ("fqdn", "wildcard", "url"):
                    for destination in (d.lower() for d in option.destinations):
                        if destination.startswith("*."):
                            self.wildcards.setdefault((option.protocol, destination[2:]), []).append((req, option, destination))
                        else:
                            self.hosts.setdefault((option.protocol, destination), []).append((req, option, destination))

    def _inside(self, rule: Rule, needs: list[Need]) -> list[Need]:
        """The needs whose requirement's sources lie inside the rule's sources."""
        if rule.sources is None:
            return needs
        return [n for n in needs if (p := self.pieces(n[0])).covered_by(rule.sources) == p.all]

    def host(self, rule: Rule, protocol: str, name: str) -> list[Need]:
        return self._inside(rule, self.hosts.get((protocol, name), []))

    def wildcards_above(self, rule: Rule, protocol: str, name: str) -> list[Need]:
        """The wildcards '*.w' with ``name`` equal to w or below it."""
        labels = name.split(".")
        return [n for i in range(len(labels)) for n in self._inside(rule, self.wildcards.get((protocol, ".".join(labels[i:])), []))]


def _name_rule_extra(rule: Rule, needed: Needed) -> list[str]:
    """What a tls.sni / http.host pass opens beyond the names (and ports) the requirements ask for, counting only the
    requirements whose sources lie inside the rule's."""
    protocol = "https" if rule.app == "tls" else "http"
    allows, used_ports = [], []
    for match in rule.names:
        text = match.text.lower()
        if match.startswith and match.endswith:
            host = text[1:] if match.dotprefix else text
            # the host itself, or a wildcard strictly above it
            needed_here = needed.host(rule, protocol, host) + [n for n in needed.wildcards_above(rule, protocol, host) if n[2] != f"*.{host}"]
            if not needed_here:
                allows.append(f"{host}, which no requirement names")
        elif match.endswith and text.startswith("."):
            domain = text[1:]
            apex = needed.host(rule, protocol, domain)
            if match.dotprefix and not apex:
                allows.append(f"the apex {domain}")
            above = needed.wildcards_above(rule, protocol, domain)  # '*.w' with w the domain or above it
            needed_here = apex + above
            if not above:
                allows.append(f"every name below {domain}, which no requirement asks for")
        else:
            needed_here = []
            allows.append(f"every name {'ending with' if match.endswith else 'containing'} '{match.text}'")
        used_ports += [p for _, o, _ in needed_here for p in o.ports]
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
    needed = Needed(requirements, pieces)
    for rule in rules:
        if not rule.allows or rule.opaque or rule.to_client:
            continue
        allows = _name_rule_extra(rule, needed) if rule.names else _address_rule_extra(rule, address_flows)
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
