"""aws-security-group-quotas: security groups fit AWS's quotas: at most 60 egress rules per group per address family,
and the groups one network interface of a role carries within the per-ENI count (the stack's awsSecurityGroupsPerEni,
AWS default 5, 16 at most) and 1,000 rules in all."""
from __future__ import annotations

from collections import defaultdict

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, Severity, StackValidationPolicy

from egress.deployed import DeployedResource
from egress.targets.aws.deployed import EGRESS_RULE_TYPE, ROLE_TAG, SECURITY_GROUP_TYPE, rules_of_group
from egress.targets.aws.plan import MAX_SG_RULES_PER_FAMILY

from .support import stack_context, stack_validator

NAME = "aws-security-group-quotas"
MAX_RULES_PER_ENI = 1000


def findings(resources: list[DeployedResource], per_family: int = MAX_SG_RULES_PER_FAMILY, per_eni: int | None = None) -> list[tuple[str, str]]:
    per_eni = per_eni or stack_context().profile.aws_security_groups_per_eni
    groups = [r for r in resources if r.type == SECURITY_GROUP_TYPE]
    out = []
    by_role: dict[str, list[tuple[DeployedResource, int]]] = defaultdict(list)
    for group in sorted(groups, key=lambda g: g.name):
        mine = rules_of_group(group, resources)  # two ids a preview does not know yet are not a match
        for family, key in (("IPv4", "cidrIpv4"), ("IPv6", "cidrIpv6")):
            count = sum(1 for r in mine if r.props.get(key))
            if count > per_family:
                out.append((f"{group.name}: {count} {family} egress rules, over the {per_family} a security group may have", group.urn))
        by_role[(group.props.get("tags") or {}).get(ROLE_TAG, group.name)].append((group, len(mine)))
    for role, members in sorted(by_role.items()):
        if len(members) > per_eni:
            out.append((f"role {role}: {len(members)} security groups, more than the {per_eni} one network interface may carry "
                        "(egress-matrix:awsSecurityGroupsPerEni)", members[0][0].urn))
        total = sum(count for _, count in members)
        if total > MAX_RULES_PER_ENI:
            out.append((f"role {role}: {total} rules across its security groups, over the {MAX_RULES_PER_ENI} per network interface",
                        members[0][0].urn))
    return out


POLICY = StackValidationPolicy(
    name=NAME,
    description="Security groups stay within AWS quotas: egress rules per group and address family, groups and rules per network interface.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    validate=stack_validator(findings, [SECURITY_GROUP_TYPE, EGRESS_RULE_TYPE], ("rulesPerFamily", MAX_SG_RULES_PER_FAMILY)),
    config_schema=PolicyConfigSchema(properties={"rulesPerFamily": {
        "type": "integer", "minimum": 1, "maximum": 1000, "default": MAX_SG_RULES_PER_FAMILY,
        "description": "The account's 'Inbound or outbound rules per security group' quota (AWS default 60)."}}),
    remediation_steps="Raise egress-matrix:awsSecurityGroupsPerEni (and the account quota), or move roles' CIDRs into the Network Firewall.",
)
