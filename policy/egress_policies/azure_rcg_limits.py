"""azure-rcg-limits: rule collection groups fit Azure's limits: priority 100-65000 and unique on their policy, at most
50 groups per policy, a body under 2 MB, rule names unique in a group and descriptions under 1,024 characters."""
from __future__ import annotations

import json
from collections import defaultdict

from pulumi_policy import EnforcementLevel, Severity, StackValidationPolicy

from egress.deployed import DeployedResource
from egress.targets.azure.deployed import POLICY_TYPE, RCG_TYPE, policy_keys, rcg_body, rcg_name
from egress.targets.azure.plan import MAX_DESCRIPTION, MAX_RCG_BYTES, MAX_RCGS_PER_POLICY

from .support import stack_validator

NAME = "azure-rcg-limits"




def findings(resources: list[DeployedResource]) -> list[tuple[str, str]]:
    groups = [r for r in resources if r.type == RCG_TYPE]
    keys = policy_keys(resources)
    out = []
    by_policy: dict[str, list[DeployedResource]] = defaultdict(list)
    for group in groups:
        by_policy[keys[group.urn]].append(group)
        priority = group.props.get("priority")
        if not isinstance(priority, int) or not 100 <= priority <= 65000:
            out.append((f"{rcg_name(group)}: priority {priority} is outside 100-65000", group.urn))
        size = len(json.dumps(rcg_body(group), separators=(",", ":")).encode())
        if size > MAX_RCG_BYTES:
            out.append((f"{rcg_name(group)}: {size:,} bytes, over Azure's {MAX_RCG_BYTES:,}-byte limit per rule collection group", group.urn))
        for collection in group.props.get("ruleCollections") or []:
            names = [rule.get("name") for rule in collection.get("rules") or []]
            for duplicate in sorted({n for n in names if names.count(n) > 1}):
                out.append((f"{rcg_name(group)}: rule name {duplicate} appears twice in collection {collection.get('name')}", group.urn))
            for rule in collection.get("rules") or []:
                if len(rule.get("description") or "") > MAX_DESCRIPTION:
                    out.append((f"{rcg_name(group)}: rule {rule.get('name')} has a description over {MAX_DESCRIPTION} characters", group.urn))
    for policy, members in sorted(by_policy.items()):
        if len(members) > MAX_RCGS_PER_POLICY:
            out.append((f"policy {policy}: {len(members)} rule collection groups, over Azure's {MAX_RCGS_PER_POLICY}", members[0].urn))
        seen: dict[object, str] = {}
        for group in members:
            priority = group.props.get("priority")
            if priority in seen:
                out.append((f"{rcg_name(group)}: priority {priority} is already used by {seen[priority]} on policy {policy}", group.urn))
            seen.setdefault(priority, rcg_name(group))
    return out


POLICY = StackValidationPolicy(
    name=NAME,
    description="Azure rule collection groups fit Azure's limits: priority 100-65000 and unique per policy, at most 50 per "
                "policy, under 2 MB each, unique rule names, descriptions under 1,024 characters.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    validate=stack_validator(findings, [RCG_TYPE, POLICY_TYPE]),
    remediation_steps="Move egress-matrix:azurePriorityBase to a free band, or split platforms across policies.",
)
