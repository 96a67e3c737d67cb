"""What each target's artefacts let through, as ``breadth.Allow`` flows, for the breadth policy (egress-not-open).

The artefacts are the ones ``render`` writes and ``deployed`` rebuilds from resources, so the judgement is of what
will really be deployed:
- azure: every rule of an Allow collection (network: addresses, service tags, FQDNs, IP Groups; application: target
  FQDNs, a bare ``*`` being any destination), its sources resolved through the stack's IP Groups;
- aws: with a Network Firewall, each pass rule as far as the role's security groups let it out (a flow needs both);
  without one, the security groups alone. An opaque pass allows nothing (the evaluator's reading);
- kubernetes: each ``http_access allow`` of the egress proxy's squid.conf (``dstdomain``, the generated
  ``dstdom_regex`` form, ``src`` and ``port``; no destination ACL means every name).
A flow's roles are the roles and source groups whose stack sources hold all its sources (what their ``broad`` entries
may accept).
"""
from __future__ import annotations

import ipaddress
import json
import re
import shlex
from dataclasses import replace
from functools import lru_cache
from typing import Any, Iterable, Mapping, Optional

from ..addresses import AddressError, PortRange, normalize_ports, parse_port
from ..breadth import ALL_PORTS, ANY, IPNetwork, collapse, networks_of
from ..flows import Allow
from ..models import ROLES
from ..profile import Profile
from .aws.evaluate import rules_of
from .sets import AddressSet

Sources = Optional[tuple[IPNetwork, ...]]


def _networks(addresses: Optional[AddressSet]) -> tuple[IPNetwork, ...]:
    return ANY if addresses is None else _networks_of_set(addresses)


@lru_cache(maxsize=64)
def _networks_of_set(addresses: AddressSet) -> tuple[IPNetwork, ...]:
    """Cached: every rule of a rendered rules file repeats its role's sources, and a role may have thousands."""
    out: list[IPNetwork] = []
    for version, first, last in addresses.intervals:
        low, high = (ipaddress.ip_address(n if version == 4 else n.to_bytes(16, "big")) for n in (first, last))
        out.extend(ipaddress.summarize_address_range(low, high))
    return tuple(out)


def _and(a: Iterable[IPNetwork], b: Iterable[IPNetwork]) -> tuple[IPNetwork, ...]:
    """The addresses in both (CIDRs nest or are disjoint: each overlap is the smaller one)."""
    b = list(b)
    return collapse(x if x.prefixlen >= y.prefixlen else y for x in a for y in b if x.version == y.version and x.overlaps(y))


def _ports(items: Iterable[Any]) -> tuple[PortRange, ...]:
    out = []
    for item in items:
        text = str(item).strip()
        try:
            out.append(ALL_PORTS[0] if text in ("*", "any", "0-65535") else parse_port(text))
        except AddressError:  # what the evaluator cannot read is taken at its widest
            return ALL_PORTS
    return normalize_ports(out)


def _address_set(networks: Iterable[IPNetwork]) -> AddressSet:
    return AddressSet.of((n.version, int(n.network_address), int(n.broadcast_address)) for n in networks)


def _with_roles(allows: Iterable[Allow], profile: Profile) -> list[Allow]:
    """Each flow with the roles whose stack sources hold all of its sources. Judged as merged address sets (a role or a
    rule may list thousands of sources), each distinct source tuple once."""
    role_sets = {role: _address_set(nets) for role in profile.enforced(ROLES) if (nets := networks_of(profile.role_sources(role)))}
    seen: dict[int, tuple[tuple[IPNetwork, ...], frozenset[str]]] = {}  # id(sources) -> (sources, roles holding them)
    out = []
    for allow in allows:
        roles = set(allow.roles)
        if allow.sources:
            known = seen.get(id(allow.sources))
            if known is None or known[0] is not allow.sources:
                inner = _address_set(allow.sources)
                known = seen[id(allow.sources)] = (allow.sources, frozenset(r for r, s in role_sets.items() if s.covers_all(inner)))
            roles |= known[1]
        out.append(replace(allow, roles=frozenset(roles)))
    return out


# ---------------------------------------------------------------------------------------------- azure
def _azure(artefacts: Mapping[str, str], profile: Profile) -> list[Allow]:
    groups = {doc["id"]: networks_of(doc["properties"]["ipAddresses"]) for path, text in artefacts.items()
              if path.startswith("azure/ip-groups/") for doc in (json.loads(text),)}
    existing = {gid: role for role, gid in profile.azure_existing_ip_groups().items()}
    out = []
    for path, text in sorted(artefacts.items()):
        if not path.startswith("azure/") or path.startswith("azure/ip-groups/") or not path.endswith(".json"):
            continue
        body = json.loads(text)
        for collection in (body.get("properties") or {}).get("ruleCollections") or []:
            if (collection.get("action") or {}).get("type") != "Allow":
                continue
            for rule in collection.get("rules") or []:
                where = f"{body.get('name')}/{collection.get('name')}/{rule.get('name')}"
                ids = rule.get("sourceIpGroups") or []
                known = all(i in groups for i in ids)
                sources: Sources = (networks_of(rule.get("sourceAddresses") or []) + tuple(n for i in ids for n in groups.get(i, ()))) if known else None
                roles = frozenset(existing[i] for i in ids if i in existing)
                out += _azure_rule(rule, where, sources, roles)
    return out


def _azure_rule(rule: dict, where: str, sources: Sources, roles: frozenset[str]) -> list[Allow]:
    if rule.get("ruleType") == "ApplicationRule":
        ports = normalize_ports(PortRange(int(p["port"]), int(p["port"])) for p in rule.get("protocols") or [] if p.get("port"))
        fqdns = list(rule.get("targetFqdns") or [])
        names = tuple(f for f in fqdns if f != "*") + tuple(rule.get("targetUrls") or ())
        return [Allow(where, "tcp", ports, addresses=ANY if "*" in fqdns else (), names=names, tags=tuple(rule.get("fqdnTags") or ()),
                      sources=sources, roles=roles)]
    protocols = {str(p).upper() for p in rule.get("ipProtocols") or []}
    transports = ("tcp", "udp") if "ANY" in protocols else tuple(t for t in ("tcp", "udp") if t.upper() in protocols)
    destinations = list(rule.get("destinationAddresses") or [])
    addresses = networks_of(destinations)
    tags = tuple(d for d in destinations if not networks_of([d]))  # in destinationAddresses: service tags, not DNS names
    ports = _ports(rule.get("destinationPorts") or ["*"])
    return [Allow(where, t, ports, addresses=addresses, names=tuple(rule.get("destinationFqdns") or ()), tags=tags, sources=sources,
                  roles=roles) for t in transports]


# ---------------------------------------------------------------------------------------------- aws
def _name_of(match) -> str:
    text = match.text.lower()
    if match.startswith and match.endswith:
        return f".{text}" if match.dotprefix else text
    if match.endswith and text.startswith("."):
        return f"*{text}" if not match.dotprefix else text
    return "*"  # a prefix or an infix: names of any domain can carry it


def _security_groups(document: dict) -> list[Allow]:
    out = []
    for group in document.get("SecurityGroups", ()):
        for permission in group.get("IpPermissionsEgress", ()):
            protocol = str(permission.get("IpProtocol", "")).lower()
            ports = ALL_PORTS if protocol == "-1" else (PortRange(int(permission["FromPort"]), int(permission["ToPort"])),)
            cidrs = [r["CidrIp"] for r in permission.get("IpRanges", ())] + [r["CidrIpv6"] for r in permission.get("Ipv6Ranges", ())]
            for transport in (("tcp", "udp") if protocol == "-1" else (protocol,) if protocol in ("tcp", "udp") else ()):
                out.append(Allow(f"security group {group['GroupName']} {protocol}/{ports[0]} to {', '.join(cidrs)}", transport, ports,
                                 addresses=networks_of(cidrs), roles=frozenset({group.get("Role", "")} - {""})))
    return out


def _aws(artefacts: Mapping[str, str], profile: Profile) -> list[Allow]:
    groups = _security_groups(json.loads(artefacts["aws/security-groups.json"])) if "aws/security-groups.json" in artefacts else []
    if "aws/rules.suricata" not in artefacts:
        return groups
    passes = []
    for rule in rules_of(artefacts["aws/rules.suricata"]):
        if not rule.allows or rule.opaque or rule.to_client:
            continue
        transports = ("tcp", "udp") if rule.proto == "ip" else ("udp",) if rule.proto == "udp" else ("tcp",)
        names = tuple(_name_of(m) for m in rule.names)
        for transport in transports:
            passes.append(Allow(rule.label, transport, rule.ports, addresses=() if names else _networks(rule.destinations),
                                names=names, sources=_networks(rule.sources)))
    passes = _with_roles(passes, profile)
    if not groups:
        return passes
    out = []
    for flow in passes:  # a flow leaves only where a security group of its role lets it out, too
        for group in groups:
            if group.transport != flow.transport or (flow.roles and not flow.roles & group.roles):
                continue
            ports = normalize_ports(PortRange(max(a.start, b.start), min(a.end, b.end)) for a in flow.ports for b in group.ports
                                    if max(a.start, b.start) <= min(a.end, b.end))
            addresses = _and(flow.addresses, group.addresses)
            if ports and (addresses or flow.names):
                out.append(replace(flow, where=f"{flow.where} via {group.where}", ports=ports, addresses=addresses))
    return out


# ---------------------------------------------------------------------------------------------- kubernetes
_GENERATED_REGEX = re.compile(r"((?:\\\.[a-z0-9-]+)+)\$")  # squid.subdomain_regex: '\.x\.com$'


def _squid(text: str) -> list[Allow]:
    acls: dict[str, tuple[str, list[str]]] = {}
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        words = shlex.split(line.split("#", 1)[0] if not line.lstrip().startswith("acl") else line, posix=False)
        if len(words) >= 3 and words[0] == "acl":
            acls.setdefault(words[1], (words[2], []))[1].extend(w for w in words[3:] if not w.startswith("-"))
        elif len(words) >= 2 and words[:2] == ["http_access", "allow"]:
            used = [acls[w] for w in words[2:] if not w.startswith("!") and w in acls]
            sources = [v for kind, values in used if kind == "src" for v in values]
            ports = [v for kind, values in used if kind == "port" for v in values]
            names = tuple(v for kind, values in used if kind == "dstdomain" for v in values)
            names += tuple(f"*{_unescape(m.group(1))}" if (m := _GENERATED_REGEX.fullmatch(v)) else "*"
                           for kind, values in used if kind == "dstdom_regex" for v in values)
            addresses = networks_of(v for kind, values in used if kind == "dst" for v in values)
            anything = not names and not addresses or "*" in names
            out.append(Allow(f"squid.conf line {number} ({' '.join(words)})", "tcp", _ports(ports) if ports else ALL_PORTS,
                             addresses=ANY if anything else addresses, names=tuple(n for n in names if n != "*"),
                             sources=ANY if not sources or "all" in sources else networks_of(sources)))
    return out


def _unescape(regex: str) -> str:
    return regex.replace("\\.", ".")


def _kubernetes(artefacts: Mapping[str, str], profile: Profile) -> list[Allow]:
    return _squid(artefacts["kubernetes/squid.conf"]) if "kubernetes/squid.conf" in artefacts else []


EXTRACTORS = {"azure": _azure, "aws": _aws, "kubernetes": _kubernetes}


def target_allows(target: str, artefacts: Mapping[str, str], profile: Profile) -> list[Allow]:
    """The flows target ``target``'s artefacts allow, with the roles they serve."""
    return _with_roles(EXTRACTORS[target](artefacts, profile), profile)
