"""The source groups on the Network Firewall (pure): one Suricata rule group for every group, a variable per group.

A stack's groups (``sourceGroups``) share ONE rule group, ``egress-<cluster>-groups-rules``, whatever
awsNetworkFirewallRules says: a rule group per group would spend the policy's 20 stateful groups on a handful of groups,
and a domain list cannot say which sources a target is for (its drop-all-else would also stop every other source of
the group's list). Each group's sources are its own IP set variable, ``G_<GROUP>`` (``payments`` -> ``G_PAYMENTS``, '-'
as '_'), defined in the rule group; its rules are the exact Suricata form (rule_text.py) with that variable as their
source, so a role whose CIDRs hold the group's never gets the group's destinations from them. The group runs in its
own fixed slot before every domain list (priorities.py), since a role's domain list ends with a drop of all TLS/HTTP
from the role's sources, which may hold the group's.

One rule group holds a rules string of 2,000,000 bytes (~7,500 rules of ~250 bytes) and 30,000 rules. Past that the
groups are spread over the fewest rule groups that hold them (``-groups-1-rules``, ... at most GROUPS_SHARDS), each group
whole in one, placed by linear hashing of its name: a group's place depends only on its name and the count, and one
more rule group takes groups only from the others into itself. A rule group near its limit gets a warning ahead.
"""
from __future__ import annotations

from typing import Iterable

from ...profile import Profile
from .plan import MAX_GROUP_CAPACITY, MAX_RULES_STRING_BYTES, AwsCompileError, RuleGroup, SuricataRule, capacity_for, network_order
from .priorities import GROUPS_SHARDS, groups_kind, groups_offset
from .security_groups import _slot

VARIABLE_MAX = 32  # RuleVariableName: 1-32 characters, ^[A-Za-z][A-Za-z0-9_]*$ (botocore's network-firewall model)
PREFIX = "G_"  # a group's name may start with a digit; a variable may not


def variable(group: str) -> str:
    """The IP set variable holding a group's sources: 'G_' and the name in upper case, '-' as '_' (one-to-one: a group
    name has no '_')."""
    return PREFIX + group.upper().replace("-", "_")


def rule_group_name(cluster: str, shard: int = 0) -> str:
    return f"egress-{cluster}-{groups_kind(shard)}"


def rule_key(group: str, key: str) -> str:
    """A group rule's stable key (its SID comes from it): the group's name ahead of what it allows, so two groups with the
    same destination get two rules, and no role's rule key (which has no space) can equal it."""
    return f"group {group}|{key}"


def check_names(profile: Profile, groups: Iterable[str]) -> None:
    for group in sorted(groups):
        name = variable(group)
        if len(name) > VARIABLE_MAX:
            room = VARIABLE_MAX - len(PREFIX)
            raise AwsCompileError(f"egress-matrix:sourceGroups: group '{group}' ({len(group)} characters) would be the Network Firewall IP "
                                  f"set variable {name}, {len(name)} characters, over the {VARIABLE_MAX} AWS allows. Fix: name the group "
                                  f"with at most {room} characters in egress-matrix:sourceGroups and in the entries that name it")


def ip_sets(profile: Profile, groups: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Variable -> sources, for the groups with firewall rules."""
    return {variable(group): profile.role_sources(group) for group in sorted(groups)}


def _size(rules: Iterable[SuricataRule]) -> tuple[int, int]:
    """(rules, bytes of the rules string) of some rules."""
    rules = list(rules)
    return len(rules), sum(len(rule.text.encode()) + 1 for rule in rules)


def place(cluster: str, rules: dict[str, tuple[SuricataRule, ...]], headroom: int) -> tuple[dict[int, list[str]], tuple[str, ...]]:
    """Shard -> the groups whose rules it holds (the fewest shards that hold them all), and the warnings of shards within
    ``headroom`` percent of a limit."""
    sizes = {group: _size(found) for group, found in rules.items()}
    for count in range(1, GROUPS_SHARDS + 1):
        shards: dict[int, list[str]] = {}
        for group in sorted(rules):
            shards.setdefault(_slot(group, count), []).append(group)
        totals = {shard: tuple(map(sum, zip(*(sizes[g] for g in groups)))) for shard, groups in shards.items()}
        if all(used <= MAX_GROUP_CAPACITY and size <= MAX_RULES_STRING_BYTES for used, size in totals.values()):
            break
    else:
        group = max(sizes, key=lambda g: sizes[g][1])
        raise AwsCompileError(f"the source groups' rules do not fit in {GROUPS_SHARDS} rule groups of {MAX_RULES_STRING_BYTES:,} bytes and "
                              f"{MAX_GROUP_CAPACITY:,} rules (the largest, group '{group}', has {sizes[group][0]:,} rules, "
                              f"{sizes[group][1]:,} bytes). Fix: split the groups' entries across stacks")
    warnings = []
    for shard, (used, size) in sorted(totals.items()):
        if size * (100 + headroom) > MAX_RULES_STRING_BYTES * 100:
            warnings.append(f"rule group {rule_group_name(cluster, shard)} holds {size:,} bytes of rules, less than the {headroom}% spare "
                            f"of awsCapacityHeadroom below the {MAX_RULES_STRING_BYTES:,} a rule group may hold: past it the source groups' "
                            f"rules are spread over {count + 1} rule groups, and the groups placed in the new one move to it, which "
                            "drops their flows until a policy references it (egress diff blocks it). Plan it: split the source groups "
                            "across stacks before then")
    return shards, tuple(warnings)


def groups_rule_groups(profile: Profile, rules: dict[str, tuple[SuricataRule, ...]]) -> tuple[list[RuleGroup], tuple[str, ...]]:
    """The source groups' rule groups (each group's exact rules, its variable defined beside them) and their warnings."""
    shards, warnings = place(profile.cluster, rules, profile.aws_capacity_headroom)
    out = []
    for shard, members in sorted(shards.items()):
        found = tuple(sorted((rule for group in members for rule in rules[group]), key=lambda r: r.key))
        variables = ip_sets(profile, members)
        home_net = tuple(sorted({c for cidrs in variables.values() for c in cidrs}, key=network_order))  # so the policy's holds them
        out.append(RuleGroup(name=rule_group_name(profile.cluster, shard), role="", form="suricata", rules=found, home_net=home_net,
                             ip_sets=variables, used=len(found), capacity=capacity_for(len(found)),
                             description=f"egress-matrix {profile.cluster}: {len(found)} pass rules for {len(members)} source group(s) "
                                         "(sourceGroups)", priority=profile.aws_priority_base + groups_offset(shard)))
    return out, warnings
