"""Security groups of the AWS plan (pure): each role's or source group's egress rules placed in the groups its network
interfaces carry.

A rule goes to one of the ``awsSecurityGroupsAttached`` groups by a hash of its key (linear hashing: attaching one more
group moves rules only into it), never to a group nothing carries; when they cannot hold the rules (60 per address
family) the stack fails closed and says how to attach another group first. A source group gets groups of its own,
``egress-<cluster>-<group>-<index>``, under the same contract as a role's (awsSecurityGroupCounts / Attached take
``<group>=N``): its workloads carry them beside their role's, and security groups only add up.
"""
from __future__ import annotations

import hashlib
import re
from typing import Iterable, Optional

from ...addresses import PortRange
from ...profile import Profile
from .plan import MAX_SG_RULES_PER_FAMILY, SG_DESCRIPTION_MAX, AwsCompileError, SecurityGroupPlan, SecurityGroupRule

_SG_DESCRIPTION_CHARS = re.compile(r"[^a-zA-Z0-9 ._\-:/()#,@\[\]+=;{}!$*]")

SgRules = dict[str, dict[str, tuple[str, str, PortRange, set[str]]]]  # role or group -> key -> (cidr, transport, ports, entry ids)


def sg_description(entry_ids: Iterable[str]) -> str:
    """``egress-matrix <ids>`` in AWS's alphabet, cut at an id boundary with ``+N more`` when they do not fit in 255
    characters (the path to the firewall serves many names; their rule group's metadata lists every id). An own entry's
    id keeps its '/', which the alphabet allows."""
    ids = [_SG_DESCRIPTION_CHARS.sub("_", i) for i in sorted(set(entry_ids))]
    text = f"egress-matrix {', '.join(ids)}"
    for kept in range(len(ids) - 1, 0, -1):
        if len(text) <= SG_DESCRIPTION_MAX:
            break
        text = f"egress-matrix {', '.join(ids[:kept])} +{len(ids) - kept} more"
    return text[:SG_DESCRIPTION_MAX]


def _slot(key: str, groups: int) -> int:
    """The group of a rule among ``groups``, by linear hashing of its key: going from n to n+1 groups moves rules only into
    the new group (never between existing ones), and for a power of two it is ``hash % groups``, the placement of
    earlier releases, so upgrading moves nothing."""
    digest = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)
    level = 1 << (groups.bit_length() - 1)  # the largest power of two <= groups
    slot = digest % (2 * level)
    return slot if slot < groups else digest % level


def who(profile: Profile, role: str) -> str:
    return f"source group '{role}'" if role in profile.source_groups else f"role '{role}'"


def _kind(profile: Profile, role: str) -> str:
    return "group" if role in profile.source_groups else "role"


def security_groups(profile: Profile, sg_rules: SgRules) -> tuple[SecurityGroupPlan, ...]:
    """Each role's and group's rules, placed by a hash of their keys in the groups its network interfaces carry
    (awsSecurityGroupsAttached): adding one CIDR adds one rule to one group, and a rule never lands in a group the
    workloads do not carry. When those groups cannot hold the rules the stack fails closed (nothing changes) and says how
    to attach another group first."""
    out = []
    for role, rules in sorted(sg_rules.items()):
        created, attached = profile.aws_security_group_count(role), profile.aws_security_groups_attached_count(role)
        names = [f"egress-{profile.cluster}-{role}-{index}" for index in range(max(created, attached))]
        if attached > created:
            raise AwsCompileError(f"awsSecurityGroupsAttached says the {role} {_kind(profile, role)}'s interfaces carry {attached} groups, but the stack creates "
                                  f"{created} (awsSecurityGroupCounts), so {', '.join(names[created:])} would get rules before it exists or is "
                                  f"attached. Fix: first set egress-matrix:awsSecurityGroupCounts to {role}={attached} and deploy (the group is "
                                  f"created empty), attach it to the {_kind(profile, role)}'s network interfaces, then raise awsSecurityGroupsAttached")
        if created > profile.aws_security_groups_per_eni:
            raise AwsCompileError(f"{who(profile, role)} has {created} security groups, more than the {profile.aws_security_groups_per_eni} a network "
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
                                               description=sg_description(ids)))
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
    problem = (f"{who(profile, role)} needs {needed} security-group rules, and {names[index]} would hold {count} {label} rules, over the "
               f"{MAX_SG_RULES_PER_FAMILY} a group allows per address family. A rule goes only to a group the {_kind(profile, role)}'s network interfaces "
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
