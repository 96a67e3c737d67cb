"""Judge what AWS runs: the Network Firewall's rules file and the security groups (rendered artefacts).

A flow is (one source CIDR of the requirement's role, destination, transport, the TLS/HTTP layer when the protocol is
https/http, one port range). A requirement is allowed when, for one of its options, every flow
- leaves through a security group of its role: an egress rule whose protocol and port range cover it and whose CIDR
  covers the destination (a name may resolve anywhere: only 0.0.0.0/0 covers it), and
- is passed by the firewall (``aws/rules.suricata``, when there is one): rules in strict order (groups by priority,
  rules in file order), the first rule that matches decides. A pass matches what it fully covers (source inside its
  sources, port range inside its ports, a name every ``tls.sni``/``http.host`` content matches, an address inside its
  destinations; ``$EXTERNAL_NET``/``any`` cover any destination); a drop or reject matches whatever it overlaps. No
  rule: the policy's default action, ``aws:drop_established`` (``aws/firewall-policy.json`` says so when the stack
  has a policy; otherwise it is assumed).
``extra``: what a pass rule or a security-group rule opens that no judged requirement needs: a domain list's apex,
its every-port match, names that only end the same way, addresses or ports nobody asks for.
"""
from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

from ...addresses import PortRange, format_ports
from ...models import Requirement, ResolvedAlternative
from ..options import requirement_label
from ..sets import IPV4_ALL, AddressSet, Interval, parse_interval, ports_cover, ports_overlap
from ..verdict import Verdict
from .rules import _APP_TRANSPORT, ANY_PORT, Rule, parse_rules

RULES_FILE = "aws/rules.suricata"
SECURITY_GROUPS_FILE = "aws/security-groups.json"
POLICY_FILE = "aws/firewall-policy.json"
DROPPING_DEFAULTS = {"aws:drop_established", "aws:drop_strict"}


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


def _flows(req: Requirement, option: ResolvedAlternative) -> list[Flow]:
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


def _proto_fits(rule: Rule, flow: Flow, exact: bool) -> bool:
    if rule.proto in ("ip", flow.transport) or rule.proto == flow.app:
        return True
    # Another application protocol on the same transport: a pass cannot be counted on, a drop may stop it.
    return not exact and rule.proto not in _APP_TRANSPORT and rule.proto not in ("tcp", "udp")


def covers(rule: Rule, flow: Flow) -> bool:
    """Does the rule match all of the flow? (What a pass must do to allow it.)"""
    if rule.opaque or rule.to_client or not _proto_fits(rule, flow, exact=True):
        return False
    if rule.sources is not None and not rule.sources.covers(flow.source):
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
    if rule.to_client or not _proto_fits(rule, flow, exact=False):
        return False
    if rule.sources is not None and not rule.sources.overlaps(flow.source):
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


def _firewall_verdict(rules: list[Rule], flow: Flow) -> tuple[bool, str]:
    for rule in rules:
        if rule.allows and covers(rule, flow):
            return True, rule.label
        if rule.blocks and overlaps(rule, flow):
            return False, f"denied by {rule.label}"
    return False, "no rule passes it (the policy's default action aws:drop_established)"


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


def evaluate(artefacts: Mapping[str, str], requirements: Iterable[Requirement]) -> Verdict:
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
            flows = _flows(req, option)
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
    """(option, destination) of the name requirements whose role's sources lie inside the rule's sources."""
    protocol = "https" if rule.app == "tls" else "http"
    out = []
    for req in requirements:
        if rule.sources is not None and not all(rule.sources.covers(i) for s in req.sources if (i := parse_interval(s))):
            continue
        for option in req.options():
            if option.protocol == protocol and option.kind in ("fqdn", "wildcard", "url"):
                out += [(option, d.lower()) for d in option.destinations]
    return out


def _name_rule_extra(rule: Rule, requirements: list[Requirement]) -> list[str]:
    """What a tls.sni / http.host pass opens beyond the names (and ports) the requirements ask for."""
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
    flows = [f for req in requirements for option in req.options() for f in _flows(req, option) if f.address is not None]
    targets = rule.destinations.intervals if rule.destinations is not None else (IPV4_ALL,)
    allows = []
    for transport in sorted(transports):
        for interval in targets:
            for port in rule.ports:
                if not any(f.transport == transport and f.address is not None and AddressSet((f.address,)).covers(interval)
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
        flows = [f for req in requirements if req.role == rule.role for option in req.options() for f in _flows(req, option)]
        used = [f for f in flows if _sg_allows(rule, f)]
        if not used:
            out.append(f"{rule.label} ({rule.description}): no requirement of role {rule.role} goes through it")
        elif rule.cidr.covers(IPV4_ALL) and not firewall:
            out.append(f"{rule.label}: every host on these ports, with no Network Firewall behind it to filter by name")
    return out
