"""AWS: the flows a requirement opens, and how a Network Firewall rule or a security-group rule matches one.

A flow is (one source CIDR of the requirement's role, destination, transport, the TLS/HTTP layer when the protocol is
https/http, one port range). ``covers``: the rule matches all of the flow (what a pass must do to allow it);
``overlaps``: it may match part of it (what a drop needs to stop it). The ``_destination`` halves judge everything
but the source, so the evaluator can judge a role's sources all at once (evaluate.py).
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping, Optional

from ...addresses import PortRange
from ...models import Requirement, ResolvedAlternative
from ..sets import IPV4_ALL, AddressSet, Interval, parse_interval, ports_cover, ports_overlap
from .rules import _APP_TRANSPORT, ANY_PORT, Rule

NO_SOURCE: Interval = (0, 0, -1)  # the source of a flow judged for all of a role's sources at once (SourcePieces)


@dataclass(frozen=True)
class Flow:
    source: Interval
    transport: str  # tcp | udp
    app: Optional[str]  # tls | http | None
    port: PortRange
    address: Optional[Interval] = None  # the destination, when the requirement gives addresses
    name: str = ""  # an exact host
    subdomains_of: str = ""  # '*.x': every name below x

    def describe(self) -> str:
        what = self.name or (f"*.{self.subdomains_of}" if self.subdomains_of else _interval_text(self.address))
        return f"{self.app or self.transport}/{self.port} to {what}"


@dataclass(frozen=True)
class SecurityGroupRule:
    group: str
    role: str
    protocol: str
    ports: PortRange
    cidr: AddressSet
    cidr_text: str
    description: str

    @property
    def label(self) -> str:
        return f"security group {self.group}: {self.protocol}/{self.ports} to {self.cidr_text}"


def _interval_text(interval: Optional[Interval]) -> str:
    if interval is None:
        return "?"
    version, first, last = interval
    network = ipaddress.summarize_address_range(ipaddress.ip_address(first if version == 4 else first.to_bytes(16, "big")),
                                                ipaddress.ip_address(last if version == 4 else last.to_bytes(16, "big")))
    return ",".join(str(n) for n in network)


def _destination_flows(option: ResolvedAlternative) -> list[Flow]:
    """The option's flows without their source (``NO_SOURCE``), ports before destinations."""
    transport = "udp" if option.protocol == "udp" else "tcp"
    app = {"https": "tls", "http": "http"}.get(option.protocol)
    flows = []
    for port in option.ports:
        for destination in option.destinations:
            if option.kind in ("ip", "cidr"):
                flows.append(Flow(NO_SOURCE, transport, app, port, address=parse_interval(destination)))
            elif option.kind == "any":
                flows.append(Flow(NO_SOURCE, transport, app, port, address=IPV4_ALL))
            elif option.kind == "wildcard" and destination.startswith("*."):
                flows.append(Flow(NO_SOURCE, transport, app, port, subdomains_of=destination[2:].lower()))
            else:
                flows.append(Flow(NO_SOURCE, transport, app, port, name=destination.lower()))
    return flows


def _source_intervals(sources: Iterable[str]) -> list[Interval]:
    return [i for i in map(parse_interval, sources) if i is not None]


def _flows(req: Requirement, option: ResolvedAlternative) -> list[Flow]:
    """Every flow of the option: per source CIDR of the requirement's role, then port, then destination."""
    destinations = _destination_flows(option)
    return [replace(flow, source=interval) for interval in _source_intervals(req.sources) for flow in destinations]


def _proto_fits(rule: Rule, flow: Flow, exact: bool) -> bool:
    if rule.proto in ("ip", flow.transport) or rule.proto == flow.app:
        return True
    # Another application protocol on the same transport: a pass cannot be counted on, a drop may stop it.
    return not exact and rule.proto not in _APP_TRANSPORT and rule.proto not in ("tcp", "udp")


def covers(rule: Rule, flow: Flow) -> bool:
    """Does the rule match all of the flow? (What a pass must do to allow it.)"""
    return _covers_destination(rule, flow) and (rule.sources is None or rule.sources.covers(flow.source))


def _covers_destination(rule: Rule, flow: Flow) -> bool:
    """``covers`` but for the source."""
    if rule.opaque or rule.to_client or not _proto_fits(rule, flow, exact=True):
        return False
    if rule.destinations is not None and (flow.address is None or not rule.destinations.covers(flow.address)):
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


def overlaps(rule: Rule, flow: Flow) -> bool:
    """Could the rule match part of the flow? (What a drop needs to stop it.)"""
    return _overlaps_destination(rule, flow) and (rule.sources is None or rule.sources.overlaps(flow.source))


def _overlaps_destination(rule: Rule, flow: Flow) -> bool:
    """``overlaps`` but for the source."""
    if rule.to_client or not _proto_fits(rule, flow, exact=False):
        return False
    if rule.destinations is not None and flow.address is not None and not rule.destinations.overlaps(flow.address):
        return False
    if not ports_overlap(rule.ports, flow.port):
        return False
    if rule.names and not rule.opaque:
        if flow.name:
            return all(m.matches(flow.name) for m in rule.names)
        if flow.subdomains_of:
            return all(m.overlaps_subdomains(flow.subdomains_of) for m in rule.names)
    return True


def _security_groups(document: Mapping[str, Any]) -> list[SecurityGroupRule]:
    out = []
    for group in document.get("SecurityGroups", ()):
        for permission in group.get("IpPermissionsEgress", ()):
            protocol = str(permission.get("IpProtocol", "")).lower()
            ports = ANY_PORT if protocol == "-1" else PortRange(int(permission["FromPort"]), int(permission["ToPort"]))
            for key, cidr_key in (("IpRanges", "CidrIp"), ("Ipv6Ranges", "CidrIpv6")):
                for item in permission.get(key, ()):
                    out.append(SecurityGroupRule(group["GroupName"], group.get("Role", ""), protocol, ports,
                                                 AddressSet.parse([item[cidr_key]]), item[cidr_key], item.get("Description", "")))
    return out


def _sg_allows(rule: SecurityGroupRule, flow: Flow) -> bool:
    if rule.protocol not in ("-1", flow.transport) or not (rule.ports.start <= flow.port.start and flow.port.end <= rule.ports.end):
        return False
    return rule.cidr.covers(flow.address if flow.address is not None else IPV4_ALL)
