"""Compile a stack's requirements into an AWS plan (pure; facts: reference/aws-egress.md).

- HTTP/TLS to a name: domain lists (default; ``.x`` matches the apex and every subdomain, any port: the broadening
  is listed per target) or exact Suricata pass rules (``awsNetworkFirewallRules: suricata``): ``tls.sni`` /
  ``http.host``, exact = ``startswith; endswith``, ``*.x`` = ``content:".x"; endswith`` (never the apex), the
  required ports, ``flow:to_server``, ``msg`` naming the rule, ``metadata`` the entry ids.
- Anything else to addresses: 5-tuple pass rules, and one security-group egress rule per CIDR and port range. A
  non-HTTP/TLS requirement to a name only is an error: nothing on AWS matches it by name.
- Security groups also get the path to the firewall: each port the name-based requirements use, to 0.0.0.0/0 (the
  Network Firewall downstream does the filtering by name; security groups have no names).
One rule group per (role, kind): the role's source CIDRs are its ``HOME_NET``.
"""
from __future__ import annotations

import hashlib
import ipaddress
import math
import re
from typing import Iterable, Optional

from ...addresses import PortRange, format_ports
from ...models import Catalog, Requirement, ResolvedAlternative
from ...profile import ROLE_SOURCE_KEYS, Profile
from ..naming import feature_parts, rule_stem
from ..options import Choice, choose
from .priorities import priority
from .plan import (
    MAX_GROUP_CAPACITY, MAX_RULE_CHARS, MAX_RULES_STRING_BYTES, MAX_SG_RULES_PER_FAMILY, MAX_STATEFUL_GROUPS_PER_POLICY, SG_DESCRIPTION_MAX,
    SID_BASE, SID_SPAN, AwsCompileError, AwsPlan, Broadening, FirewallPolicyPlan, RuleGroup, SecurityGroupPlan, SecurityGroupRule, SuricataRule,
)

_SG_DESCRIPTION_CHARS = re.compile(r"[^a-zA-Z0-9 ._\-:/()#,@\[\]+=;{}!$*]")


def _form(option: ResolvedAlternative) -> tuple[Optional[str], str]:
    """('name' | 'address' | 'any', '') or (None, why AWS cannot express the option, and the fix)."""
    if option.protocol in ("http", "https") and option.kind in ("fqdn", "wildcard"):
        if any("*" in d and not d.startswith("*.") for d in option.destinations) or any(d.count("*") > 1 for d in option.destinations):
            return None, ("Network Firewall matches a name exactly or by its subdomains ('*.x'), not '*' inside a label. Fix: drop the "
                          "entry's level from egress-matrix:levels, or add a supported alternative to the matrix entry")
        return "name", ""
    if option.kind in ("ip", "cidr"):
        return "address", ""
    if option.kind == "any":
        return "any", ""
    if option.kind == "service-tag":
        return None, "an Azure service tag means nothing on AWS"
    return None, ("nothing on AWS matches a non-HTTP/TLS flow by name (security groups take addresses, Network Firewall sees no "
                  "name in it). Fix: give the host's addresses in the stack (egress-matrix:awsNameAddresses: [host=CIDR,...]), add an "
                  "IP/CIDR alternative to the matrix entry, or leave the role out of egress-matrix:awsRoles")


def _with_stack_addresses(req: Requirement, addresses: dict[str, tuple[str, ...]]) -> Requirement:
    """Each name-only non-HTTP/TLS option followed by the addresses the stack gives for its hosts (awsNameAddresses)."""
    options: list[ResolvedAlternative] = []
    for option in req.options():
        options.append(option)
        if option.kind == "fqdn" and option.protocol not in ("http", "https") and all(d in addresses for d in option.destinations):
            cidrs = tuple(dict.fromkeys(c for d in option.destinations for c in addresses[d]))
            options.append(option.model_copy(update={"kind": "cidr", "destinations": cidrs, "note": "egress-matrix:awsNameAddresses"}))
    return req.model_copy(update={"alternatives": tuple(options)}) if len(options) > len(req.options()) else req


def _suricata_ports(ports: Iterable[PortRange]) -> str:
    items = [str(p.start) if p.start == p.end else f"{p.start}:{p.end}" for p in ports]
    return items[0] if len(items) == 1 else f"[{','.join(items)}]"


def _metadata(entry_ids: Iterable[str]) -> str:
    return ", ".join(f"egress_entry {i}" for i in sorted(set(entry_ids)))


def _name_rule(stem: str, protocol: str, destination: str, ports: tuple[PortRange, ...], entry_ids: list[str]) -> tuple[str, str]:
    """(key, text without sid) of an exact Suricata pass rule for a host or a subdomains-only wildcard."""
    buffer, app, case = ("tls.sni", "tls", " nocase;") if protocol == "https" else ("http.host", "http", "")
    if destination.startswith("*."):
        match = f'content:"{destination[1:]}";{case} endswith;'  # subdomains at any depth, never the apex
    else:
        match = f'content:"{destination}"; startswith;{case} endswith;'
    name = f"{stem}-{protocol}"
    key = f"{name}|{destination}|{format_ports(ports)}"
    return key, (f"pass {app} $HOME_NET any -> any {_suricata_ports(ports)} ({buffer}; {match} msg:\"{name} {destination}\"; "
                 f"flow:to_server; metadata:{_metadata(entry_ids)};")


def _address_rule(stem: str, protocol: str, destinations: tuple[str, ...], ports: tuple[PortRange, ...], entry_ids: list[str]) -> tuple[str, str]:
    transport = "udp" if protocol == "udp" else "tcp"
    target = "any" if destinations == ("*",) else destinations[0] if len(destinations) == 1 else f"[{','.join(destinations)}]"
    name = f"{stem}-{transport}-{'_'.join(str(p) for p in ports)}"
    key = f"{name}|{','.join(destinations)}"
    return key, (f"pass {transport} $HOME_NET any -> {target} {_suricata_ports(ports)} (msg:\"{name}\"; flow:to_server; "
                 f"metadata:{_metadata(entry_ids)};")


def _sids(keys: Iterable[str]) -> dict[str, int]:
    """SIDs from the rules' keys (a hash), so they stay put when other rules come and go; a rare collision is resolved
    by probing in key order, which moves only the colliding rules."""
    taken: dict[int, str] = {}
    out = {}
    for key in sorted(set(keys)):
        sid = SID_BASE + int(hashlib.sha256(key.encode()).hexdigest()[:12], 16) % SID_SPAN
        while sid in taken:
            sid = SID_BASE + (sid - SID_BASE + 1) % SID_SPAN
        taken[sid] = key
        out[key] = sid
    return out


# Capacity is fixed at creation: a change replaces the group. It is the smallest 1-2-5 step that holds the rules, so it
# stays put while rules come and go below the step (adding an endpoint is an in-place update) and changes only when the
# rules no longer fit: a replacement, which a protected group refuses and egress diff names. A group with less spare
# than awsCapacityHeadroom gets a warning, so the replacement is planned before an endpoint forces it. (Rounding
# used + headroom up instead would cross each step at ~84% full, replacing groups that still had room.)
CAPACITY_STEPS = (10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, MAX_GROUP_CAPACITY)


def _capacity(used: int) -> int:
    return next((step for step in CAPACITY_STEPS if step >= used), used)


def _capacity_warnings(groups: Iterable[RuleGroup], headroom: int) -> tuple[str, ...]:
    out = []
    for group in groups:
        if group.capacity < MAX_GROUP_CAPACITY and group.used * (100 + headroom) > group.capacity * 100:
            bigger = _capacity(group.capacity + 1)
            out.append(f"rule group {group.name} uses {group.used} of its capacity {group.capacity} (less than the {headroom}% spare of "
                       f"awsCapacityHeadroom): past {group.capacity} rules it becomes a new group of {bigger}, a replacement its "
                       "protection refuses. Plan it (README, 'Protection and migrations')")
    return tuple(out)


def _sg_description(entry_ids: Iterable[str]) -> str:
    """``egress-matrix <ids>`` in AWS's alphabet, cut at an id boundary with ``+N more`` when they do not fit in 255
    characters (the path to the firewall serves many names; their rule group's metadata lists every id)."""
    ids = [_SG_DESCRIPTION_CHARS.sub("_", i) for i in sorted(set(entry_ids))]
    text = f"egress-matrix {', '.join(ids)}"
    for kept in range(len(ids) - 1, 0, -1):
        if len(text) <= SG_DESCRIPTION_MAX:
            break
        text = f"egress-matrix {', '.join(ids[:kept])} +{len(ids) - kept} more"
    return text[:SG_DESCRIPTION_MAX]


def compile_aws(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement], source: str = "") -> AwsPlan:
    """The AWS plan for the requirements of the roles the stack enforces on AWS (``awsRoles``)."""
    try:
        return _compile(catalog, profile, list(requirements))
    except AwsCompileError as exc:
        raise AwsCompileError(f"{source}: {exc}" if source else str(exc)) from None


def check_deploy_settings(profile: Profile) -> None:
    """What deploying (not just compiling) needs from the stack."""
    if not profile.aws_vpc_id:
        raise AwsCompileError("target 'aws' needs egress-matrix:awsVpcId (the nodes' VPC, where the egress security groups are "
                              "created). Fix: set it in the stack")


def enforced(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement]) -> list[Requirement]:
    """The requirements the AWS plan enforces: of the roles in awsRoles, from entries of the platforms in awsPlatforms."""
    entries = {entry.id: entry for entry in catalog.entries}
    platforms = set(profile.aws_platforms or profile.platforms)
    addresses = profile.aws_addresses_of()
    return [_with_stack_addresses(req, addresses) for req in requirements
            if req.role in profile.aws_roles and any(platform in platforms for platform, _ in feature_parts(req, entries))]


def _compile(catalog: Catalog, profile: Profile, requirements: list[Requirement]) -> AwsPlan:
    entries = {entry.id: entry for entry in catalog.entries}
    suricata = profile.aws_network_firewall_rules == "suricata"
    choices: list[Choice] = []
    rule_texts: dict[tuple[str, str], dict[str, tuple[str, list[str]]]] = {}  # (role, group name) -> key -> (text, entry ids)
    domains: dict[tuple[str, str], dict[str, set[str]]] = {}  # (role, target type) -> target -> entry ids
    required_names: dict[tuple[str, str], dict[str, list[PortRange]]] = {}  # (role, target type) -> host -> ports (for broadening)
    sg_rules: dict[str, dict[str, tuple[str, str, PortRange, set[str]]]] = {}  # role -> key -> (cidr, proto, ports, ids)

    def sg_add(role: str, cidr: str, transport: str, ports: Iterable[PortRange], ids: Iterable[str]) -> None:
        for rng in ports:
            key = f"{transport}:{rng}:{cidr}"
            sg_rules.setdefault(role, {}).setdefault(key, (cidr, transport, rng, set()))[3].update(ids)

    platforms = set(profile.aws_platforms or profile.platforms)
    name_addresses = profile.aws_addresses_of()
    for req in requirements:
        parts = {k: v for k, v in feature_parts(req, entries).items() if k[0] in platforms}
        if req.role not in profile.aws_roles or not parts:
            continue
        option, form = choose(_with_stack_addresses(req, name_addresses), _form, "AWS", AwsCompileError, choices)
        entry_ids = sorted(i for ids in parts.values() for i in ids)
        if form == "name":
            sg_add(req.role, "0.0.0.0/0", "tcp", option.ports, entry_ids)
            target_type = "TLS_SNI" if option.protocol == "https" else "HTTP_HOST"
            for destination in option.destinations:
                required_names.setdefault((req.role, target_type), {}).setdefault(destination, []).extend(option.ports)
                if not suricata:
                    target = destination[1:] if destination.startswith("*.") else destination
                    domains.setdefault((req.role, target_type), {}).setdefault(target, set()).update(entry_ids)
            if not suricata:
                continue
        for (platform, feature), ids in sorted(parts.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
            stem = rule_stem(platform, feature, req.role)
            if form == "name":
                group = (req.role, f"egress-{profile.cluster}-{req.role}-rules")
                for destination in option.destinations:
                    key, text = _name_rule(stem, option.protocol, destination, option.ports, ids)
                    rule_texts.setdefault(group, {})[key] = (text, ids)
            else:
                group = (req.role, f"egress-{profile.cluster}-{req.role}-{'rules' if suricata else 'addresses'}")
                destinations = ("*",) if form == "any" else option.destinations
                key, text = _address_rule(stem, option.protocol, destinations, option.ports, ids)
                previous = rule_texts.setdefault(group, {}).get(key)
                rule_texts[group][key] = (text, sorted(set(ids) | set(previous[1] if previous else ())))
        if form != "name":
            transport = "udp" if option.protocol == "udp" else "tcp"
            for destination in (("0.0.0.0/0",) if form == "any" else option.destinations):
                cidr = str(ipaddress.ip_network(destination, strict=False))
                sg_add(req.role, cidr, transport, option.ports, entry_ids)

    role_sources = _role_sources(profile, {role for role, _ in [*rule_texts, *domains]} | set(sg_rules))
    sids = _sids(key for group in rule_texts.values() for key in group)
    groups = []
    for (role, target_type), targets in sorted(domains.items()):
        names = tuple(sorted(targets))
        kind = "tls-sni" if target_type == "TLS_SNI" else "http-host"
        used = len(names) + 1  # one pass rule per target, one default drop per target type (reference 2.2)
        groups.append(RuleGroup(name=f"egress-{profile.cluster}-{role}-{kind}", role=role, form="domain-list", target_type=target_type,
                                targets=names, home_net=role_sources[role], used=used, capacity=_capacity(used),
                                description=f"egress-matrix {profile.cluster}: {len(names)} hosts {role} needs over "
                                            f"{'TLS' if target_type == 'TLS_SNI' else 'plain HTTP'} (docs/MATRIX.md)", priority=0))
    for (role, name), rules in sorted(rule_texts.items()):
        built = tuple(SuricataRule(key=key, sid=sids[key], text=f"{text} sid:{sids[key]}; rev:1;)", entry_ids=tuple(sorted(set(ids))))
                      for key, (text, ids) in sorted(rules.items()))
        groups.append(RuleGroup(name=name, role=role, form="suricata", rules=built, home_net=role_sources[role], used=len(built),
                                capacity=_capacity(len(built)),
                                description=f"egress-matrix {profile.cluster}: {len(built)} pass rules for {role}", priority=0))
    # Strict order by a fixed slot per (kind, role), never a position, so a new group moves no other group's priority; kind
    # bands put every Suricata/5-tuple group before every domain list and its catch-all drop (priorities.py).
    groups = sorted((g.model_copy(update={"priority": priority(profile.aws_priority_base, g.form, g.target_type, g.role)}) for g in groups),
                    key=lambda g: g.priority)
    policy = None
    if groups and (profile.aws_firewall_policy or profile.aws_firewall_policy_arn):
        home_net = tuple(sorted({cidr for group in groups for cidr in group.home_net}, key=_network_order))
        policy = FirewallPolicyPlan(name="" if profile.aws_firewall_policy_arn else f"egress-{profile.cluster}",
                                    existing_arn=profile.aws_firewall_policy_arn, home_net=home_net)
    plan = AwsPlan(cluster=profile.cluster, form=profile.aws_network_firewall_rules, rule_groups=tuple(groups),
                   security_groups=_security_groups(profile, sg_rules), broadening=_broadening(domains, required_names),
                   choices=tuple(choices), role_sources=role_sources, policy=policy,
                   warnings=_capacity_warnings(groups, profile.aws_capacity_headroom))
    _check_limits(plan, profile)
    return plan


def _network_order(cidr: str) -> tuple[int, int, int]:
    network = ipaddress.ip_network(cidr, strict=False)
    return network.version, int(network.network_address), network.prefixlen


def _role_sources(profile: Profile, roles: Iterable[str]) -> dict[str, tuple[str, ...]]:
    out = {}
    for role in sorted(roles):
        sources = profile.role_sources(role)
        if not sources:
            raise AwsCompileError(f"role '{role}' has rules but no source CIDRs. Fix: set egress-matrix:{ROLE_SOURCE_KEYS[role]} in the stack")
        out[role] = sources
    return out


def _broadening(domains: dict[tuple[str, str], dict[str, set[str]]], required: dict[tuple[str, str], dict[str, list[PortRange]]]) -> tuple[Broadening, ...]:
    out = []
    for (role, target_type), targets in sorted(domains.items()):
        names = required[(role, target_type)]
        for target in sorted(targets):
            allows = []
            if target.startswith("."):
                apex = target[1:]
                if apex not in names:
                    allows.append(f"the apex {apex}")
                host_ports = names[f"*{target}"]
            else:
                host_ports = names[target]
            if not any(p.start == 1 and p.end == 65535 for p in host_ports):
                allows.append(f"every port, not only {format_ports(sorted(set(host_ports), key=lambda p: p.start))}")
            out.append(Broadening(role=role, target=target, target_type=target_type, allows="; ".join(allows)))
    return tuple(out)


def _slot(key: str, groups: int) -> int:
    """The group of a rule among ``groups``, by linear hashing of its key: going from n to n+1 groups moves rules only into
    the new group (never between existing ones), and for a power of two it is ``hash % groups``, the placement of
    earlier releases, so upgrading moves nothing."""
    digest = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)
    level = 1 << (groups.bit_length() - 1)  # the largest power of two <= groups
    slot = digest % (2 * level)
    return slot if slot < groups else digest % level


def _security_groups(profile: Profile, sg_rules: dict[str, dict[str, tuple[str, str, PortRange, set[str]]]]) -> tuple[SecurityGroupPlan, ...]:
    """Each role's rules, placed by a hash of their keys in the groups its network interfaces carry (awsSecurityGroupsAttached):
    adding one CIDR adds one rule to one group, and a rule never lands in a group the workloads do not carry. When those
    groups cannot hold the rules the stack fails closed (nothing changes) and says how to attach another group first."""
    out = []
    for role, rules in sorted(sg_rules.items()):
        created, attached = profile.aws_security_group_count(role), profile.aws_security_groups_attached_count(role)
        names = [f"egress-{profile.cluster}-{role}-{index}" for index in range(max(created, attached))]
        if attached > created:
            raise AwsCompileError(f"awsSecurityGroupsAttached says the {role} role's interfaces carry {attached} groups, but the stack creates "
                                  f"{created} (awsSecurityGroupCounts), so {', '.join(names[created:])} would get rules before it exists or is "
                                  f"attached. Fix: first set egress-matrix:awsSecurityGroupCounts to {role}={attached} and deploy (the group is "
                                  "created empty), attach it to the role's network interfaces, then raise awsSecurityGroupsAttached")
        if created > profile.aws_security_groups_per_eni:
            raise AwsCompileError(f"role '{role}' has {created} security groups, more than the {profile.aws_security_groups_per_eni} a network "
                                  "interface may carry (awsSecurityGroupsPerEni). Fix: raise egress-matrix:awsSecurityGroupsPerEni (AWS allows up "
                                  "to 16 with a quota increase), or give wider CIDRs in the matrix/stack")
        members: dict[int, list[str]] = {index: [] for index in range(created)}
        for key in rules:
            members[_slot(key, attached)].append(key)
        overflow = _overflow(rules, members, attached)
        if overflow:
            raise AwsCompileError(_fail_closed(profile, role, len(rules), names, overflow, created, attached, _groups_that_fit(rules, attached)))
        for index in range(created):
            built = []
            for key in sorted(members[index]):
                cidr, transport, rng, ids = rules[key]
                built.append(SecurityGroupRule(key=key, cidr=cidr, protocol=transport, from_port=rng.start, to_port=rng.end,
                                               description=_sg_description(ids)))
            out.append(SecurityGroupPlan(name=names[index], role=role, index=index, rules=tuple(built), attached=index < attached))
    return tuple(out)


def _overflow(rules: dict, members: dict[int, list[str]], groups: int) -> Optional[tuple[int, int, str]]:
    """(group index, rule count, family) of the first of ``groups`` holding more than a group allows, else None."""
    for index in range(groups):
        for label in ("IPv4", "IPv6"):
            count = sum(1 for key in members.get(index, ()) if (":" in rules[key][0]) == (label == "IPv6"))
            if count > MAX_SG_RULES_PER_FAMILY:
                return index, count, label
    return None


def _groups_that_fit(rules: dict, attached: int) -> Optional[int]:
    """The fewest groups (more than ``attached``, at most 16) whose placement holds every rule; growing to it moves rules
    only into the groups added."""
    for groups in range(attached + 1, 17):
        members: dict[int, list[str]] = {}
        for key in rules:
            members.setdefault(_slot(key, groups), []).append(key)
        if _overflow(rules, members, groups) is None:
            return groups
    return None


def _fail_closed(profile: Profile, role: str, needed: int, names: list[str], overflow: tuple[int, int, str], created: int, attached: int,
                 fits: Optional[int]) -> str:
    index, count, label = overflow
    problem = (f"role '{role}' needs {needed} security-group rules, and {names[index]} would hold {count} {label} rules, over the "
               f"{MAX_SG_RULES_PER_FAMILY} a group allows per address family. A rule goes only to a group the role's network interfaces "
               "carry, so nothing is changed (fail closed)")
    if fits is None:
        return f"{problem}. Fix: no placement in up to 16 groups holds them: give wider CIDRs in the matrix/stack, or split the roles"
    new = [f"egress-{profile.cluster}-{role}-{i}" for i in range(attached, fits)]
    listed = ", ".join(new)
    create = "" if created >= fits else (f"without the rules this change adds (deploy the stack as it was), set egress-matrix:"
                                         f"awsSecurityGroupCounts to {role}={fits} and deploy: {listed} {'is' if len(new) == 1 else 'are'} "
                                         "created empty; then ")
    return (f"{problem}. Fix: {create}attach {listed} to the {role} network interfaces, then set egress-matrix:awsSecurityGroupsAttached "
            f"to {role}={fits} with this change: rules then move only into {listed}")


def _check_limits(plan: AwsPlan, profile: Profile) -> None:
    if len(plan.rule_groups) > MAX_STATEFUL_GROUPS_PER_POLICY:
        raise AwsCompileError(f"{len(plan.rule_groups)} stateful rule groups exceed {MAX_STATEFUL_GROUPS_PER_POLICY} per firewall policy. "
                              "Fix: enforce fewer roles in egress-matrix:awsRoles per stack")
    for group in plan.rule_groups:
        if group.capacity > MAX_GROUP_CAPACITY:
            raise AwsCompileError(f"rule group {group.name} needs capacity {group.capacity} for its {group.used} rules, over the "
                                  f"{MAX_GROUP_CAPACITY} a stateful rule group may have. Fix: split the platforms across stacks")
        size = len(group.rules_string.encode())
        if size > MAX_RULES_STRING_BYTES:
            raise AwsCompileError(f"rule group {group.name}: its rules string is {size:,} bytes, over {MAX_RULES_STRING_BYTES:,}. "
                                  "Fix: split the platforms across stacks")
        home_net = len(",".join(group.home_net)) + 2
        for rule in group.rules:
            if len(rule.text) + home_net > MAX_RULE_CHARS:
                raise AwsCompileError(f"rule group {group.name}: rule sid {rule.sid} ({rule.key}) is over {MAX_RULE_CHARS} characters "
                                      "with $HOME_NET expanded. Fix: give fewer destinations per matrix entry")
