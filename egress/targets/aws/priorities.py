"""Strict-order priorities of the rule groups (pure): one fixed slot per (kind, role), and one for the source groups.

A group's priority depends only on its own kind and role, never on which other groups the stack has: the first address
requirement (a new ``-addresses`` group) or a new role takes its own free slot, and every existing reference keeps its
priority (an existing policy's references stay valid, a created policy's are not rewritten).

Kind-major bands: every Suricata / 5-tuple group, of any role, runs before every domain list, because a domain list ends
with a drop of all TLS (or HTTP) from its role's sources, which would otherwise stop TLS to an address (an API server IP)
before that address's own pass rule is reached, also when two roles share sources.

The source groups' rule group (``egress-<cluster>-groups-rules``: every group's rules, whatever awsNetworkFirewallRules
says) takes the last slot of the first band: a group's sources often lie inside a role's (a node pool's subnet in the
nodes' CIDR), and that role's domain list would drop the group's TLS before the group's own pass rules were reached.
When the groups' rules outgrow one rule group, the further ones (``-groups-1-rules``, ...) take 10 apart in that slot.
"""
from __future__ import annotations

import re
from typing import Optional

from ...profile import ROLE_SOURCE_KEYS

PRIORITY_MAX = 65_535  # StatefulRuleGroupReference.Priority: 1-65535 (botocore's network-firewall model)
STEP = 100  # between two slots: room for the owner's own groups in an existing policy
# Kinds in band order: 'rules' (suricata form) and 'addresses' (domain-list form) share the first band, a stack has one of them.
KIND_BANDS = {"rules": 0, "addresses": 0, "tls-sni": 1, "http-host": 2}
# A band holds ROLE_SLOTS slots, more than there are roles, so a role added later does not move the bands after it. Roles
# keep their place in ROLE_SOURCE_KEYS: append new ones, never reorder (a role's index is part of its groups' priorities).
# The band's last slot is the source groups' (GROUPS_SLOT): roles may grow to ROLE_SLOTS - 1.
ROLE_SLOTS = 10
ROLES = tuple(ROLE_SOURCE_KEYS)
MAX_OFFSET = STEP * (max(KIND_BANDS.values()) * ROLE_SLOTS + ROLE_SLOTS - 1)  # the highest slot's distance from the base
GROUPS_SLOT = ROLE_SLOTS - 1
GROUPS_OFFSET = STEP * (KIND_BANDS["rules"] * ROLE_SLOTS + GROUPS_SLOT)
GROUPS_SHARDS = 10  # the source groups' rule groups (groups.py): at most this many, STEP // GROUPS_SHARDS apart in their slot
_GROUPS_NAME = re.compile(r"-groups(?:-([1-9]))?-rules$")  # egress-<cluster>-groups-rules, egress-<cluster>-groups-<k>-rules


def kind_of(form: str, target_type: Optional[str]) -> str:
    """The kind of a group from what it holds: 'rules' for every Suricata / 5-tuple group (named ``-rules`` or ``-addresses``)."""
    if form != "domain-list":
        return "rules"
    return "tls-sni" if target_type == "TLS_SNI" else "http-host"


def offset(kind: str, role: str) -> int:
    """The slot of the (kind, role) group above ``awsPriorityBase``."""
    return STEP * (KIND_BANDS[kind] * ROLE_SLOTS + ROLES.index(role))


def priority(base: int, form: str, target_type: Optional[str], role: str) -> int:
    return base + offset(kind_of(form, target_type), role)


def groups_kind(shard: int) -> str:
    """The end of the name of the source groups' rule group ``shard``: 'groups-rules', then 'groups-1-rules', ..."""
    return "groups-rules" if shard == 0 else f"groups-{shard}-rules"


def groups_offset(shard: int) -> int:
    return GROUPS_OFFSET + STEP // GROUPS_SHARDS * shard


def offset_of_name(name: str) -> Optional[int]:
    """The slot of a group from its logical name ``egress-<cluster>-<role>-<kind>`` or ``egress-<cluster>-groups-rules``
    (``-groups-<k>-rules``) (None: not a name the compiler gives)."""
    groups = _GROUPS_NAME.search(name)  # no role is named 'groups' (or a digit), so no role's group ends so
    if groups:
        return groups_offset(int(groups.group(1) or 0))
    for kind in KIND_BANDS:
        for role in ROLES:
            if name.endswith(f"-{role}-{kind}"):
                return offset(kind, role)
    return None
