"""Compile a stack's requirements into an AWS plan (pure; facts: reference/aws-egress.md).

- HTTP/TLS to a name: domain lists (default; ``.x`` matches the apex and every subdomain, any port: the broadening
  is listed per target) or exact Suricata pass rules (``awsNetworkFirewallRules: suricata``): ``tls.sni`` /
  ``http.host``, exact = ``startswith; endswith``, ``*.x`` = ``content:".x"; endswith`` (never the apex), the
  required ports, ``flow:to_server``, ``msg`` naming the rule, ``metadata`` the entry ids.
- Anything else to addresses: 5-tuple pass rules, and one security-group egress rule per CIDR and port range. A
  non-HTTP/TLS requirement to a name only is an error: nothing on AWS matches it by name.
- Security groups also get the path to the firewall: each port the name-based requirements use, to 0.0.0.0/0 (the
  Network Firewall downstream does the filtering by name; security groups have no names).
One rule group per (role, kind): the role's source CIDRs are its ``HOME_NET``. The source groups (``sourceGroups``)
share one exact Suricata group, each group's sources its own variable (groups.py), and get security groups of their own.
Rule texts: rule_text.py; security-group placement: security_groups.py.
"""
from __future__ import annotations

import ipaddress
from typing import Iterable, Optional

from ...addresses import PortRange, format_ports
from ...models import Catalog, Requirement, ResolvedAlternative
from ...profile import Profile
from ..naming import feature_parts, rule_stem
from ..options import Choice, LeftOut, choose, left_out, requirement_label
from .groups import check_names, groups_rule_groups, rule_key, variable
from .plan import (
    MAX_GROUP_CAPACITY, MAX_RULE_CHARS, MAX_RULES_STRING_BYTES, MAX_STATEFUL_GROUPS_PER_POLICY, AwsCompileError, AwsPlan, Broadening,
    POLICY_CAPACITY_DEFAULT, FirewallPolicyPlan, RuleGroup, SuricataRule, capacity_for, network_order,
)
from .priorities import priority
from .rule_text import address_rule, name_rule, sids
from .security_groups import SgRules, _slot, security_groups, who  # noqa: F401 (_slot: the placement tests use it from here)


def _form(option: ResolvedAlternative) -> tuple[Optional[str], str]:
    """('name' | 'address' | 'any', '') or (None, why AWS cannot express the option, and the fix)."""
    if option.protocol in ("http", "https") and option.kind in ("fqdn", "wildcard"):
        if any("*" in d and not d.startswith("*.") for d in option.destinations) or any(d.count("*") > 1 for d in option.destinations):
            return None, ("Network Firewall matches a name exactly or by its subdomains ('*.x'), not '*' inside a label. Fix: add a "
                          "supported alternative to the matrix entry")
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


def _capacity_warnings(groups: Iterable[RuleGroup], headroom: int) -> tuple[str, ...]:
    out = []
    for group in groups:
        if group.capacity < MAX_GROUP_CAPACITY and group.used * (100 + headroom) > group.capacity * 100:
            bigger = capacity_for(group.capacity + 1)
            out.append(f"rule group {group.name} uses {group.used} of its capacity {group.capacity} (less than the {headroom}% spare of "
                       f"awsCapacityHeadroom): past {group.capacity} rules it becomes a new group of {bigger}, a replacement its "
                       "protection refuses. Plan it (README, 'Protection and migrations')")
    return tuple(out)


def _policy_capacity(groups: Iterable[RuleGroup]) -> tuple[str, ...]:
    total = sum(group.capacity for group in groups)
    if total <= POLICY_CAPACITY_DEFAULT:
        return ()
    return (f"the rule groups' capacities add up to {total:,}, over the {POLICY_CAPACITY_DEFAULT:,} a firewall policy holds by default "
            "(Network Firewall quota 'stateful rules per policy', adjustable up to 50,000): have it raised before deploying",)


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


def enforced_platforms(catalog: Catalog, profile: Profile) -> set[str]:
    """The platforms whose entries AWS enforces. awsPlatforms filters the vendor platforms (default: all the stack's);
    the stack's own catalogs (stack entries, registries, the catalogs it lists) stay enforced whatever it says about
    vendor platforms, unless it names some of them: then only those."""
    own, listed = set(catalog.own), set(profile.aws_platforms)
    return (listed - own or set(profile.platforms)) | (listed & own or own)


def _in_scope(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement]) -> list[Requirement]:
    """The requirements of the roles in awsRoles and every source group, from entries of the platforms enforced_platforms
    gives, each with the addresses the stack gives for its names (awsNameAddresses)."""
    entries = {entry.id: entry for entry in catalog.entries}
    platforms = enforced_platforms(catalog, profile)
    roles = set(profile.enforced(profile.aws_roles))
    addresses = profile.aws_addresses_of()
    return [_with_stack_addresses(req, addresses) for req in requirements
            if req.role in roles and any(platform in platforms for platform, _ in feature_parts(req, entries))]


def left_out_of_aws(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement]) -> tuple[LeftOut, ...]:
    """The recommended and optional requirements in scope that AWS cannot express: left out of the plan and of
    ``enforced``, each with why (a required one stops the stack)."""
    return tuple(note for req in _in_scope(catalog, profile, requirements) if (note := left_out(req, _form)) is not None)


def enforced(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement]) -> list[Requirement]:
    """The requirements the AWS plan enforces: of the roles in awsRoles and every source group, from entries of the
    platforms enforced_platforms gives, but for the recommended/optional ones AWS cannot express (left out, noted)."""
    return [req for req in _in_scope(catalog, profile, requirements) if left_out(req, _form) is None]


def _compile(catalog: Catalog, profile: Profile, requirements: list[Requirement]) -> AwsPlan:
    entries = {entry.id: entry for entry in catalog.entries}
    suricata = profile.aws_network_firewall_rules == "suricata"
    choices: list[Choice] = []
    rule_texts: dict[tuple[str, str], dict[str, tuple[str, list[str]]]] = {}  # (role, group name) -> key -> (text, entry ids)
    domains: dict[tuple[str, str], dict[str, set[str]]] = {}  # (role, target type) -> target -> entry ids
    required_names: dict[tuple[str, str], dict[str, list[PortRange]]] = {}  # (role, target type) -> host -> ports (for broadening)
    sg_rules: SgRules = {}
    group_texts: dict[str, dict[str, tuple[str, list[str]]]] = {}  # source group -> key -> (text, entry ids): the groups' rule groups

    def sg_add(role: str, cidr: str, transport: str, ports: Iterable[PortRange], ids: Iterable[str]) -> None:
        for rng in ports:
            key = f"{transport}:{rng}:{cidr}"
            sg_rules.setdefault(role, {}).setdefault(key, (cidr, transport, rng, set()))[3].update(ids)

    def add_rule(texts: dict[str, tuple[str, list[str]]], key: str, text: str, ids: list[str]) -> None:
        previous = texts.get(key)
        texts[key] = (text, sorted(set(ids) | set(previous[1] if previous else ())))

    platforms = enforced_platforms(catalog, profile)
    roles = set(profile.enforced(profile.aws_roles))
    name_addresses = profile.aws_addresses_of()
    notes = left_out_of_aws(catalog, profile, requirements)
    leave_out = {note.requirement for note in notes}
    for req in requirements:
        parts = {k: v for k, v in feature_parts(req, entries).items() if k[0] in platforms}
        if req.role not in roles or not parts or requirement_label(req) in leave_out:
            continue
        option, form = choose(_with_stack_addresses(req, name_addresses), _form, "AWS", AwsCompileError, choices)
        entry_ids = sorted(i for ids in parts.values() for i in ids)
        grouped = req.role in profile.source_groups  # a source group: exact rules in the groups' rule group (groups.py)
        if form == "name":
            sg_add(req.role, "0.0.0.0/0", "tcp", option.ports, entry_ids)
            target_type = "TLS_SNI" if option.protocol == "https" else "HTTP_HOST"
            if not grouped:
                for destination in option.destinations:
                    required_names.setdefault((req.role, target_type), {}).setdefault(destination, []).extend(option.ports)
                    if not suricata:
                        target = destination[1:] if destination.startswith("*.") else destination
                        domains.setdefault((req.role, target_type), {}).setdefault(target, set()).update(entry_ids)
                if not suricata:
                    continue
        if grouped:
            texts, source = group_texts.setdefault(req.role, {}), f"${variable(req.role)}"
        else:
            kind = "rules" if suricata or form == "name" else "addresses"
            texts, source = rule_texts.setdefault((req.role, f"egress-{profile.cluster}-{req.role}-{kind}"), {}), "$HOME_NET"
        for (platform, feature), ids in sorted(parts.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
            stem = rule_stem(platform, feature, req.role)
            if form == "name":
                for destination in option.destinations:
                    key, text = name_rule(stem, option.protocol, destination, option.ports, ids, source)
                    add_rule(texts, rule_key(req.role, key) if grouped else key, text, ids)
            else:
                destinations = ("*",) if form == "any" else option.destinations
                key, text = address_rule(stem, option.protocol, destinations, option.ports, ids, source)
                add_rule(texts, rule_key(req.role, key) if grouped else key, text, ids)
        if form != "name":
            transport = "udp" if option.protocol == "udp" else "tcp"
            for destination in (("0.0.0.0/0",) if form == "any" else option.destinations):
                cidr = str(ipaddress.ip_network(destination, strict=False))
                sg_add(req.role, cidr, transport, option.ports, entry_ids)

    check_names(profile, group_texts)
    role_sources = _role_sources(profile, {role for role, _ in [*rule_texts, *domains]} | set(sg_rules))
    sid_of = sids(key for texts in [*rule_texts.values(), *group_texts.values()] for key in texts)

    def built(texts: dict[str, tuple[str, list[str]]]) -> tuple[SuricataRule, ...]:
        return tuple(SuricataRule(key=key, sid=sid_of[key], text=f"{text} sid:{sid_of[key]}; rev:1;)", entry_ids=tuple(sorted(set(ids))))
                     for key, (text, ids) in sorted(texts.items()))
    groups = []
    for (role, target_type), targets in sorted(domains.items()):
        names = tuple(sorted(targets))
        kind = "tls-sni" if target_type == "TLS_SNI" else "http-host"
        used = len(names) + 1  # one pass rule per target, one default drop per target type (reference 2.2)
        groups.append(RuleGroup(name=f"egress-{profile.cluster}-{role}-{kind}", role=role, form="domain-list", target_type=target_type,
                                targets=names, home_net=role_sources[role], used=used, capacity=capacity_for(used),
                                description=f"egress-matrix {profile.cluster}: {len(names)} hosts {role} needs over "
                                            f"{'TLS' if target_type == 'TLS_SNI' else 'plain HTTP'} (docs/MATRIX.md)", priority=0))
    for (role, name), texts in sorted(rule_texts.items()):
        rules = built(texts)
        groups.append(RuleGroup(name=name, role=role, form="suricata", rules=rules, home_net=role_sources[role], used=len(rules),
                                capacity=capacity_for(len(rules)), description=f"egress-matrix {profile.cluster}: {len(rules)} pass rules for {role}",
                                priority=0))
    # Strict order by a fixed slot per (kind, role), never a position, so a new group moves no other group's priority; kind
    # bands put every Suricata/5-tuple group before every domain list and its catch-all drop (priorities.py).
    groups = [g.model_copy(update={"priority": priority(profile.aws_priority_base, g.form, g.target_type, g.role)}) for g in groups]
    shared, shard_warnings = groups_rule_groups(profile, {group: built(texts) for group, texts in group_texts.items()})
    groups = sorted([*groups, *shared], key=lambda g: g.priority)  # the source groups': in their own slots, before every domain list too
    groups = _pinned_capacities(groups, profile.aws_rule_group_capacities)
    policy = None
    if groups and (profile.aws_firewall_policy or profile.aws_firewall_policy_arn):
        home_net = tuple(sorted({cidr for group in groups for cidr in group.home_net}, key=network_order))
        policy = FirewallPolicyPlan(name="" if profile.aws_firewall_policy_arn else f"egress-{profile.cluster}",
                                    existing_arn=profile.aws_firewall_policy_arn, home_net=home_net)
    plan = AwsPlan(cluster=profile.cluster, form=profile.aws_network_firewall_rules, rule_groups=tuple(groups),
                   security_groups=security_groups(profile, sg_rules), broadening=_broadening(domains, required_names),
                   choices=tuple(choices), left_out=notes, role_sources=role_sources, policy=policy,
                   warnings=_capacity_warnings(groups, profile.aws_capacity_headroom) + shard_warnings + _policy_capacity(groups))
    _check_limits(plan, profile)
    return plan


def _pinned_capacities(groups: list[RuleGroup], pins: Iterable[str]) -> list[RuleGroup]:
    """awsRuleGroupCapacities: a group keeps the capacity it was deployed with (capacity is fixed at creation, so a group whose
    rules shrank below a step would otherwise be replaced for nothing)."""
    pinned = {name: int(capacity) for name, _, capacity in (pin.partition("=") for pin in pins)}
    names = [g.name for g in groups]
    for name in pinned:
        if name not in names:
            raise AwsCompileError(f"egress-matrix:awsRuleGroupCapacities names rule group '{name}', which this stack does not create. "
                                  f"Fix: use one of: {', '.join(names) or '(none)'}")
    out = []
    for group in groups:
        capacity = pinned.get(group.name)
        if capacity is not None and capacity < group.used:
            raise AwsCompileError(f"egress-matrix:awsRuleGroupCapacities keeps rule group '{group.name}' at capacity {capacity}, less than the "
                                  f"{group.used} its rules use. Fix: remove the pin (the group is replaced at {capacity_for(group.used)}: "
                                  "README, Protection and migrations) or raise it")
        out.append(group.model_copy(update={"capacity": capacity}) if capacity is not None else group)
    return out


def _role_sources(profile: Profile, roles: Iterable[str]) -> dict[str, tuple[str, ...]]:
    out = {}
    for role in sorted(roles):
        sources = profile.role_sources(role)
        if not sources:
            raise AwsCompileError(f"{who(profile, role)} has rules but no source CIDRs. Fix: set egress-matrix:{profile.source_setting(role)} in the stack")
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
        # what expanding a rule's source variable adds ('[a,b]' for a list, as render.expand writes it)
        grows = {f"${name}": len(",".join(cidrs)) + (2 if len(cidrs) > 1 else 0) - len(name) - 1 for name, cidrs in group.variables.items()}
        for rule in group.rules:
            if len(rule.text) + grows.get(rule.text.split(" ", 3)[2], 0) > MAX_RULE_CHARS:
                raise AwsCompileError(f"rule group {group.name}: rule sid {rule.sid} ({rule.key}) is over {MAX_RULE_CHARS} characters "
                                      "with its source variable expanded. Fix: give fewer destinations per matrix entry, or fewer, wider "
                                      "CIDRs to the role or group")
