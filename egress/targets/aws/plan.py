"""The AWS plan: Network Firewall stateful rule groups and VPC security-group egress rules (pure).

Facts: reference/aws-egress.md (domain-list semantics, capacity, quotas, the Suricata forms AWS accepts).
"""
from __future__ import annotations

import ipaddress
import re
from typing import Literal, Optional

from ...errors import EgressError
from ...models import Strict
from ..options import Choice, LeftOut

MAX_RULES_STRING_BYTES = 2_000_000  # RulesString, botocore model and quotas.html
MAX_RULE_CHARS = 8_192  # one Suricata rule, variables expanded (quotas.html)
MAX_GROUP_CAPACITY = 30_000  # stateful rule group capacity: the older, lower of the two published maxima
MAX_STATEFUL_GROUPS_PER_POLICY = 20
POLICY_CAPACITY_DEFAULT = 30_000  # the referenced groups' capacities per policy, by default (quotas.html; adjustable to 50,000)
MAX_SG_RULES_PER_FAMILY = 60  # outbound rules per security group, counted per address family
SG_DESCRIPTION_MAX = 255
SID_BASE, SID_SPAN = 1_000_000, 98_000_000  # SIDs derived from stable keys, never positions


# Capacity is fixed at creation: a change replaces the group. It is the smallest 1-2-5 step that holds the rules, so it
# stays put while rules come and go below the step (adding an endpoint is an in-place update) and changes only when the
# rules no longer fit: a replacement, which a protected group refuses and egress diff names. A group with less spare
# than awsCapacityHeadroom gets a warning, so the replacement is planned before an endpoint forces it. (Rounding
# used + headroom up instead would cross each step at ~84% full, replacing groups that still had room.)
CAPACITY_STEPS = (10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, MAX_GROUP_CAPACITY)


def capacity_for(used: int) -> int:
    return next((step for step in CAPACITY_STEPS if step >= used), used)


def network_order(cidr: str) -> tuple[int, int, int]:
    """CIDRs in a stable order: family, address, prefix length."""
    network = ipaddress.ip_network(cidr, strict=False)
    return network.version, int(network.network_address), network.prefixlen


class AwsCompileError(EgressError):
    """The stack's requirements cannot be expressed on AWS as configured."""


class SuricataRule(Strict):
    """One pass rule: ``key`` is stable (what it allows), ``sid`` derived from it."""

    key: str
    sid: int
    text: str
    entry_ids: tuple[str, ...]


class RuleGroup(Strict):
    """One stateful rule group (one CreateRuleGroup request)."""

    name: str  # the logical name; Pulumi auto-names the physical group so a capacity change is create-before-delete
    role: str  # the role whose sources are its HOME_NET; '' for the source groups' group (each group's sources in ip_sets)
    form: Literal["domain-list", "suricata"]
    target_type: Optional[Literal["TLS_SNI", "HTTP_HOST"]] = None  # domain lists
    targets: tuple[str, ...] = ()  # domain lists: 'host' or '.domain'
    rules: tuple[SuricataRule, ...] = ()  # suricata (also the 5-tuple rules of either form)
    home_net: tuple[str, ...]
    ip_sets: dict[str, tuple[str, ...]] = {}  # further IP set variables: a source group's sources as G_<GROUP> (groups.py)
    capacity: int  # allocated: what the rules use plus headroom
    used: int  # what the rules use (AWS: one per Suricata rule; domain lists: targets + 1 per target type)
    description: str
    priority: int  # its place in a STRICT_ORDER policy

    @property
    def rules_string(self) -> str:
        return "".join(rule.text + "\n" for rule in self.rules)

    @property
    def variables(self) -> dict[str, tuple[str, ...]]:
        """Every IP set variable its rules may use, by name (sorted): HOME_NET and the source groups'."""
        return dict(sorted({"HOME_NET": self.home_net, **self.ip_sets}.items()))


class SecurityGroupRule(Strict):
    key: str
    cidr: str
    protocol: Literal["tcp", "udp"]
    from_port: int
    to_port: int
    description: str


def rule_resource_name(group: str, rule: SecurityGroupRule) -> str:
    """A rule's logical name, ``<group>-tcp-443-0.0.0.0_0``: readable, free of the ``::`` Pulumi URNs use as a
    separator, and the key the policy pack finds the rule by (egress/targets/writes.py)."""
    return f"{group}-{rule.protocol}-{rule.from_port}" + (f"_{rule.to_port}" if rule.to_port != rule.from_port else "") + \
        "-" + re.sub(r"[/:]", "_", rule.cidr)


class SecurityGroupPlan(Strict):
    name: str  # egress-<cluster>-<role>-<index>: the group's Name tag (a source group's name in place of a role's)
    role: str  # a role or a source group
    index: int  # its place among the role's groups: the stable key of its logical name
    rules: tuple[SecurityGroupRule, ...]
    attached: bool = True  # the role's interfaces carry it (awsSecurityGroupsAttached); a group not attached stays empty


class Broadening(Strict):
    """What a domain-list target allows beyond the requirement behind it."""

    role: str
    target: str
    target_type: Literal["TLS_SNI", "HTTP_HOST"]
    allows: str


class FirewallPolicyPlan(Strict):
    """The STRICT_ORDER policy the groups run in: created (``name``) or an existing one (``existing_arn``)."""

    name: str = ""
    existing_arn: Optional[str] = None
    home_net: tuple[str, ...]  # the policy variable: every enforced role's sources
    stateful_default_actions: tuple[str, ...] = ("aws:drop_established", "aws:alert_established")
    stream_exception_policy: Literal["REJECT"] = "REJECT"


class AwsPlan(Strict):
    cluster: str
    form: Literal["domain-list", "suricata"]
    rule_groups: tuple[RuleGroup, ...]
    security_groups: tuple[SecurityGroupPlan, ...]
    broadening: tuple[Broadening, ...] = ()
    choices: tuple[Choice, ...] = ()
    left_out: tuple[LeftOut, ...] = ()  # recommended/optional requirements AWS cannot express (render: aws/left-out.txt)
    role_sources: dict[str, tuple[str, ...]]
    policy: Optional[FirewallPolicyPlan] = None
    warnings: tuple[str, ...] = ()  # what deploying should know ahead (a rule group near its capacity step)
