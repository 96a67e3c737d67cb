"""azure-rcg-writes-chained: Azure takes one rule collection group write per firewall policy at a time (concurrent
writes fail with AnotherOperationInProgress / a Conflict), so the groups of one policy must be chained: each depends
on the one before it, in priority order."""
from __future__ import annotations

from collections import defaultdict

from pulumi_policy import EnforcementLevel, Severity, StackValidationPolicy

from egress.deployed import DeployedResource
from egress.targets.azure.deployed import POLICY_TYPE, RCG_TYPE, policy_keys, rcg_name

from .support import stack_validator

NAME = "azure-rcg-writes-chained"


def findings(resources: list[DeployedResource]) -> list[tuple[str, str]]:
    by_policy: dict[str, list[DeployedResource]] = defaultdict(list)
    keys = policy_keys(resources)
    for group in (r for r in resources if r.type == RCG_TYPE):
        by_policy[keys[group.urn]].append(group)
    out = []
    for policy, members in sorted(by_policy.items()):
        ordered = sorted(members, key=lambda g: (g.props.get("priority") or 0, rcg_name(g)))
        for before, group in zip(ordered, ordered[1:]):
            if before.urn not in group.dependencies:
                out.append((f"{rcg_name(group)} does not depend on {rcg_name(before)} (the group before it on policy {policy}): "
                            "Pulumi would write both at once and Azure refuses concurrent writes to one policy", group.urn))
    return out


POLICY = StackValidationPolicy(
    name=NAME,
    description="The rule collection groups of one firewall policy are written one at a time: each depends on the group before it.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.MEDIUM,
    validate=stack_validator(findings, [RCG_TYPE, POLICY_TYPE]),
    remediation_steps="Create the groups with depends_on the previous group (the AzureFirewallEgress component does).",
)
