"""AzureFirewallEgress: an Azure Firewall Policy's rule collection groups from an ``egress.targets.azure.AzurePlan``.

Azure accepts one rule collection group (RCG) write per policy at a time (3-5 minutes each) and the provider
does not serialize them, so every RCG depends on the one before it, in priority order; IP Groups are created
before the RCGs that reference them. The plan decides everything; this file only maps it to resources.
"""
from __future__ import annotations

import re
from typing import Optional

import pulumi
from pulumi_azure_native import network

from egress.targets.azure.plan import AzurePlan
from egress.targets.azure.render import rcg_body

TYPE_TOKEN = "egress:azure:FirewallEgress"
_POLICY_ID = re.compile(r"^/subscriptions/[^/]+/resourceGroups/(?P<rg>[^/]+)/providers/Microsoft\.Network/firewallPolicies/(?P<name>[^/]+)$")


class AzureFirewallEgress(pulumi.ComponentResource):
    """Firewall Policy (created, or an existing one by id), one IP Group per source role, and the plan's RCGs."""

    policy_id: pulumi.Output[str]
    rule_collection_groups: pulumi.Output[list]
    rule_counts: pulumi.Output[dict]

    def __init__(self, name: str, plan: AzurePlan, resource_group_name: str, location: str,
                 existing_policy_id: Optional[str] = None, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TYPE_TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        policy_dependencies: list[pulumi.Resource] = []
        if existing_policy_id:
            match = _POLICY_ID.match(existing_policy_id)
            if match is None:
                raise pulumi.ResourceError(f"existing policy id '{existing_policy_id}' is not a Firewall Policy resource id", self)
            policy_rg, policy_name = match.group("rg"), match.group("name")
            policy_id: pulumi.Input[str] = existing_policy_id
        else:
            policy = network.FirewallPolicy(
                f"{name}-policy", resource_group_name=resource_group_name, location=location,
                sku={"tier": "Standard"}, dns_settings={"enable_proxy": plan.dns_proxy}, opts=child)
            policy_rg, policy_name, policy_id = resource_group_name, policy.name, policy.id
            policy_dependencies.append(policy)

        ip_groups = {
            role: network.IpGroup(f"{name}-{role}", resource_group_name=resource_group_name, location=location,
                                  ip_groups_name=plan.ip_group_name(role), ip_addresses=list(cidrs), opts=child)
            for role, cidrs in sorted(plan.ip_groups.items())
        }
        ip_group_ids = {role: group.id for role, group in ip_groups.items()}

        previous: list[pulumi.Resource] = []
        groups = []
        for group in sorted(plan.groups, key=lambda g: g.priority):
            body = rcg_body(group, plan, ip_group_ids)  # type: ignore[arg-type]
            rcg = network.FirewallPolicyRuleCollectionGroup(
                f"{name}-{group.platform}", resource_group_name=policy_rg, firewall_policy_name=policy_name,
                rule_collection_group_name=group.name, priority=group.priority,
                # The REST body's camelCase collections, as-is: the SDK cannot translate snake_case dict keys inside the
                # ruleCollections/rules discriminated unions (pulumi-azure-native#2671), so it passes them verbatim, and
                # this way the engine receives exactly the body that tests check against the REST model.
                rule_collections=body["properties"]["ruleCollections"],
                opts=pulumi.ResourceOptions(parent=self, depends_on=[*policy_dependencies, *ip_groups.values(), *previous]))
            previous = [rcg]
            groups.append(rcg)

        self.policy_id = pulumi.Output.from_input(policy_id)
        self.rule_collection_groups = pulumi.Output.from_input([g.name for g in sorted(plan.groups, key=lambda g: g.priority)])
        self.rule_counts = pulumi.Output.from_input({g.name: g.rule_count for g in plan.groups})
        self.register_outputs({"policyId": self.policy_id, "ruleCollectionGroups": self.rule_collection_groups,
                               "ruleCounts": self.rule_counts})
