"""egress-matrix Pulumi program: stack config -> core -> components -> exports.

The stack's required-endpoint matrix is resolved, exported, and compiled for each enforcement target the stack
lists in `egress-matrix:targets` (azure, aws; Kubernetes arrives with its issue).
"""
from pathlib import Path

import pulumi

from egress.catalog import load_catalog
from egress.errors import EgressError
from egress.exports import allowlist_exports
from egress.profile import PROJECT, profile_from_pulumi_config
from egress.render import requirement_json
from egress.resolve import resolve
from egress.targets import target

ROOT = Path(__file__).resolve().parent
stack = pulumi.get_stack()

try:
    catalog = load_catalog(ROOT / "matrix")
    profile = profile_from_pulumi_config(pulumi.Config(PROJECT).get, stack)
    requirements = resolve(catalog, profile, f"Pulumi config of stack '{stack}'", stack)
    plans = {}
    for name in profile.targets:
        spec = target(name)
        spec.check_deploy(profile)
        plans[name] = spec.compile(catalog, profile, requirements, f"Pulumi config of stack '{stack}'")
except EgressError as exc:
    # RunError: Pulumi shows the message alone (no traceback); nothing has been registered at this point.
    raise pulumi.RunError(f"{type(exc).__name__}: {exc}") from None

pulumi.export("requirementCount", len(requirements))
pulumi.export("requirements", [requirement_json(r) for r in requirements])
# Addresses of this cluster that other teams must allow (IBM Cloud: gateway IPs, worker subnets, control plane).
pulumi.export("allowlistExports", allowlist_exports(catalog, profile))

if "azure" in plans:
    from components.azure_firewall import AzureFirewallEgress
    from components.azure_policy_reader import policy_provider, read_existing_policy
    from egress.targets.azure import fqdn_tag_members
    from egress.targets.azure.policy import check_existing_policy

    azure = plans["azure"]
    provider = policy_provider("egress", azure.policy)
    if azure.policy.existing_id:
        # A shared hub policy is read and judged before anything is written to it.
        try:
            check_existing_policy(azure, read_existing_policy(azure.policy, provider), requirements, fqdn_tag_members(catalog, requirements))
        except EgressError as exc:
            raise pulumi.RunError(f"{type(exc).__name__}: Pulumi config of stack '{stack}': {exc}") from None
    firewall = AzureFirewallEgress("egress", azure, resource_group_name=profile.azure_resource_group, location=profile.location,
                                   policy_provider=provider)
    pulumi.export("azureFirewallPolicyId", firewall.policy_id)
    pulumi.export("azureRuleCollectionGroups", firewall.rule_collection_groups)
    pulumi.export("azureRuleCounts", firewall.rule_counts)
    if azure.policy.dns_proxy:
        # FQDN network rules match what the firewall resolved: the spokes must resolve through it (its DNS proxy).
        if azure.policy.firewall_private_ip:
            pulumi.export("azureVnetDnsServers", [azure.policy.firewall_private_ip])
        else:
            pulumi.log.warn("egress-matrix:azureDnsProxy is on: point the spoke VNets' DNS servers at the firewall's private IP "
                            "(set egress-matrix:azureFirewallPrivateIp to export it as azureVnetDnsServers)")

if "aws" in plans:
    from components.aws_network_firewall import AwsNetworkFirewallEgress
    from components.aws_security_groups import AwsSecurityGroupEgress

    aws_plan = plans["aws"]
    if aws_plan.policy is not None and aws_plan.policy.existing_arn:
        # The policy the groups are to run in is read and judged before anything is created.
        from components.aws_policy_reader import read_existing_policy
        from egress.targets.aws.policy import check_existing_policy

        try:
            for warning in check_existing_policy(aws_plan, read_existing_policy(aws_plan.policy.existing_arn)):
                pulumi.log.warn(warning)
        except EgressError as exc:
            raise pulumi.RunError(f"{type(exc).__name__}: Pulumi config of stack '{stack}': {exc}") from None
    firewall = AwsNetworkFirewallEgress("egress-aws-firewall", aws_plan)
    security_groups = AwsSecurityGroupEgress("egress-aws-security-groups", aws_plan, vpc_id=profile.aws_vpc_id)
    pulumi.export("awsRuleGroupArns", firewall.rule_group_arns)
    # For a policy the stack does not create: what it must reference, in this order.
    pulumi.export("awsRuleGroupReferences", firewall.rule_group_references)
    pulumi.export("awsFirewallPolicyArn", firewall.policy_arn)
    pulumi.export("awsSecurityGroupIds", security_groups.security_group_ids)
    pulumi.export("awsDomainListBroadening", [f"{b.role} {b.target_type} {b.target}: {b.allows}" for b in aws_plan.broadening if b.allows])
