"""aws-network-firewall-capacity: Network Firewall rule groups can hold their rules and run together: capacity at
least the rules' count (a domain list: one per target plus the default drop; Suricata: one per rule) and at most
30,000, a rules string under 2,000,000 bytes, signature ids unique across the groups one policy runs, at most 20
stateful groups per policy. Capacity cannot change in place: a bigger group is a replacement."""
from __future__ import annotations

import re

from pulumi_policy import EnforcementLevel, Severity, StackValidationPolicy

from egress.deployed import DeployedResource
from egress.targets.aws.deployed import POLICY_TYPE, RULE_GROUP_TYPE
from egress.targets.aws.plan import MAX_GROUP_CAPACITY, MAX_RULES_STRING_BYTES, MAX_STATEFUL_GROUPS_PER_POLICY

from .support import stack_validator

NAME = "aws-network-firewall-capacity"
_SID = re.compile(r"\bsid\s*:\s*(\d+)\s*;")


def used(group: DeployedResource) -> int:
    source = ((group.props.get("ruleGroup") or {}).get("rulesSource") or {})
    if source.get("rulesSourceList"):
        listed = source["rulesSourceList"]
        return (len(listed.get("targets") or []) + 1) * max(1, len(listed.get("targetTypes") or []))
    return sum(1 for line in str(source.get("rulesString") or "").splitlines() if line.strip() and not line.lstrip().startswith("#"))


def findings(resources: list[DeployedResource]) -> list[tuple[str, str]]:
    groups = [r for r in resources if r.type == RULE_GROUP_TYPE]
    out = []
    sids: dict[int, str] = {}
    for group in sorted(groups, key=lambda g: g.name):
        if group.unknown_under("ruleGroup", "capacity"):  # not known until the update: required-egress-complete says so
            continue
        capacity, needed = group.props.get("capacity"), used(group)
        if not isinstance(capacity, int) or capacity < needed:
            out.append((f"{group.name}: capacity {capacity} is less than the {needed} its rules use", group.urn))
        elif capacity > MAX_GROUP_CAPACITY:
            out.append((f"{group.name}: capacity {capacity} is over the {MAX_GROUP_CAPACITY:,} a stateful rule group may have", group.urn))
        rules = str(((group.props.get("ruleGroup") or {}).get("rulesSource") or {}).get("rulesString") or "")
        if len(rules.encode()) > MAX_RULES_STRING_BYTES:
            out.append((f"{group.name}: rules string of {len(rules.encode()):,} bytes, over {MAX_RULES_STRING_BYTES:,}", group.urn))
        for sid in map(int, _SID.findall(rules)):
            if sid in sids:
                out.append((f"{group.name}: sid {sid} is also used by {sids[sid]}; Suricata loads one rule per sid", group.urn))
            sids.setdefault(sid, group.name)
    for policy in (r for r in resources if r.type == POLICY_TYPE):
        references = (policy.props.get("firewallPolicy") or {}).get("statefulRuleGroupReferences")
        if isinstance(references, list) and len(references) > MAX_STATEFUL_GROUPS_PER_POLICY:  # not a count while unknown
            out.append((f"{policy.name}: {len(references)} stateful rule groups, over the {MAX_STATEFUL_GROUPS_PER_POLICY} per policy", policy.urn))
    return out


POLICY = StackValidationPolicy(
    name=NAME,
    description="Network Firewall rule groups have capacity for their rules (and at most 30,000), rules strings under 2,000,000 "
                "bytes, unique signature ids, and at most 20 stateful groups per policy.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    validate=stack_validator(findings, [RULE_GROUP_TYPE, POLICY_TYPE]),
    remediation_steps="Split platforms across stacks; a group's capacity is the smallest step holding its rules (a change replaces the "
                      "group: README, 'Protection and migrations').",
)
