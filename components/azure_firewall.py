"""AzureFirewallEgress: an Azure Firewall Policy's rule collection groups from an ``egress.targets.azure.AzurePlan``.

Write order, because Azure serializes what the provider does not:
- one rule collection group (RCG) write per policy at a time (3-5 minutes each): every RCG depends on the one before
  it, in priority order;
- concurrent IP Group updates fault the firewalls that use them (``ip-groups.md``; terraform-provider-azurerm#19843):
  each IP Group depends on the one before it;
- a created policy comes first and IP Groups depend on it, so ``pulumi destroy`` removes the RCGs, then the IP Groups
  while the policy still exists, then the policy: deleting IP Groups right after their policy fails with
  ``IpGroupsHasFirewallPolicyReferences`` (Azure/azure-rest-api-specs#25739).
Protected by default (``protect``; the stack's allowFirewallReplacement lifts it for a planned migration): the created
policy and the RCGs refuse replacement and deletion in the real ``pulumi preview``/``up``. IP Groups are not: a new one is
created, referenced and only then the old one deleted. The plan decides everything; this file only maps it to resources.

Rules reference the IP Groups the component creates by their constructed resource id (subscription, resource group, name:
Azure ids are deterministic), so the rule collection groups are known to the policy pack at a first ``pulumi preview``,
when the created ids are not. At ``up`` each constructed id is checked against the created one before any group is
written. Without azureSubscriptionId the created ids are used (unknown at a first preview) and the program says so.
"""
from __future__ import annotations

from typing import Any, Optional

import pulumi
from pulumi_azure_native import monitor, network

from egress.targets.azure.plan import AzureCompileError, AzurePlan, PolicyPlan, ip_group_id
from egress.targets.azure.render import rcg_body
from egress.targets.azure.sources import chain_order, what

TYPE_TOKEN = "egress:azure:FirewallEgress"
# Structured (resource-specific) categories of Microsoft.Network/azureFirewalls that answer "which rule allowed or
# denied this flow" (Azure Monitor reference, supported logs for microsoft.network/azurefirewalls).
FIREWALL_LOG_CATEGORIES = ("AZFWApplicationRule", "AZFWNetworkRule", "AZFWNatRule", "AZFWThreatIntel", "AZFWIdpsSignature",
                           "AZFWDnsQuery", "AZFWFqdnResolveFailure")


def _policy_args(policy: PolicyPlan, resource_group_name: str, location: str) -> dict[str, Any]:
    args: dict[str, Any] = {
        "resource_group_name": resource_group_name, "location": location, "sku": {"tier": policy.tier},
        "threat_intel_mode": policy.threat_intel_mode,
        "dns_settings": {"enable_proxy": policy.dns_proxy, **({"servers": list(policy.dns_servers)} if policy.dns_servers else {})},
    }
    if policy.idps_mode:
        args["intrusion_detection"] = {"mode": policy.idps_mode}
    if policy.base_policy_id:
        args["base_policy"] = {"id": policy.base_policy_id}
    return args


def _constructed_ids(plan: AzurePlan, resource_group_name: str) -> Optional[dict[str, str]]:
    """The resource ids the created IP Groups will have, or None (with a warning) when the subscription is not known."""
    if not plan.ip_groups:
        return {}
    if not plan.subscription_id:
        pulumi.log.warn("egress-matrix:azureSubscriptionId is not set: the rule collection groups reference the IP Groups by their created "
                        "ids, which a first pulumi preview does not know, so the policy pack cannot judge those groups' sources until the "
                        "IP Groups exist. Fix: set egress-matrix:azureSubscriptionId to the subscription the IP Groups are created in")
        return None
    return {role: ip_group_id(plan.subscription_id, resource_group_name, plan.ip_group_name(role)) for role in plan.ip_groups}


def _checked(created: dict[str, str], constructed: dict[str, str], plan: AzurePlan) -> None:
    """Each created IP Group has the id the rules were written with (ARM ids compare case-insensitively)."""
    for role in sorted(constructed):
        if str(created[role]).lower() != constructed[role].lower():
            error = AzureCompileError(
                f"IP Group {plan.ip_group_name(role)} ({what(role, quoted=False)}) was created as {created[role]}, but the rules were written for "
                f"{constructed[role]} (egress-matrix:azureSubscriptionId and azureResourceGroup). No rule collection group naming it was written. "
                "Fix: set egress-matrix:azureSubscriptionId to the subscription the azure-native provider deploys to, or point the "
                "provider at it (az account set --subscription, ARM_SUBSCRIPTION_ID, or azure-native:subscriptionId)")
            raise pulumi.RunError(f"{type(error).__name__}: Pulumi config of stack '{pulumi.get_stack()}': {error}")


def _rule_collections(group, plan: AzurePlan, ip_groups: dict[str, network.IpGroup], constructed: Optional[dict[str, str]]) -> pulumi.Input[list]:
    """The group's ruleCollections input. Constructed ids: known at preview; at up, resolved only once every created id
    matches (else the program stops before this group is registered). Either way the IP Groups stay its dependencies."""
    if constructed is None:
        return rcg_body(group, plan, {role: ipg.id for role, ipg in ip_groups.items()})["properties"]["ruleCollections"]  # type: ignore[dict-item]
    collections = rcg_body(group, plan, constructed)["properties"]["ruleCollections"]
    # Only the IP Groups this group's rules name: they become its ruleCollections' property dependencies for the pack.
    used = {role: ipg for role, ipg in ip_groups.items() if any(rule.role == role for c in group.collections for rule in c.rules)}
    if not used:
        return collections
    if pulumi.runtime.is_dry_run():
        # URNs are known at preview: the value stays known and still names the IP Groups it references.
        return pulumi.Output.all(*(ipg.urn for ipg in used.values())).apply(lambda _: collections)
    created = {role: ipg.id for role, ipg in used.items()}
    return pulumi.Output.all(**created).apply(lambda ids: (_checked(ids, {role: constructed[role] for role in ids}, plan), collections)[1])


class AzureFirewallEgress(pulumi.ComponentResource):
    """Firewall Policy (created, or an existing one by id), one IP Group per role and source group, the plan's RCGs, and the
    firewall's diagnostic settings when the stack names the firewall and a Log Analytics workspace."""

    policy_id: pulumi.Output[str]
    rule_collection_groups: pulumi.Output[list]
    rule_counts: pulumi.Output[dict]

    def __init__(self, name: str, plan: AzurePlan, resource_group_name: str, location: str,
                 policy_provider: Optional[pulumi.ProviderResource] = None, protect: bool = True, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TYPE_TOKEN, name, None, opts)
        policy = plan.policy
        before_ip_groups: list[pulumi.Resource] = []
        if policy.existing_id:
            policy_rg: pulumi.Input[str] = policy.resource_group  # type: ignore[assignment]
            policy_name: pulumi.Input[str] = policy.name  # type: ignore[assignment]
            policy_id: pulumi.Input[str] = policy.existing_id
        else:
            # Protected: a replacement (new resource group or location) would empty the old policy, still bound to a firewall
            # this stack does not manage, before its delete fails: all egress denied.
            created = network.FirewallPolicy(f"{name}-policy", **_policy_args(policy, resource_group_name, location),
                                             opts=pulumi.ResourceOptions(parent=self, protect=protect))
            policy_rg, policy_name, policy_id = resource_group_name, created.name, created.id
            before_ip_groups.append(created)

        ip_groups: dict[str, network.IpGroup] = {}
        previous = before_ip_groups
        for role, cidrs in sorted(plan.ip_groups.items(), key=lambda kv: chain_order(kv[0])):  # roles first: a group never moves one
            ip_groups[role] = network.IpGroup(f"{name}-{role}", resource_group_name=resource_group_name, location=location,
                                              ip_groups_name=plan.ip_group_name(role), ip_addresses=list(cidrs),
                                              opts=pulumi.ResourceOptions(parent=self, depends_on=previous))
            previous = [ip_groups[role]]
        constructed = _constructed_ids(plan, resource_group_name)

        previous = [*before_ip_groups, *ip_groups.values()]
        for group in sorted(plan.groups, key=lambda g: g.priority):
            rcg = network.FirewallPolicyRuleCollectionGroup(
                f"{name}-{group.platform}", resource_group_name=policy_rg, firewall_policy_name=policy_name,
                rule_collection_group_name=group.name, priority=group.priority,
                # The REST body's camelCase collections, as-is. The SDK translates snake_case keys only where an input has
                # one known type; ruleCollections and rules are discriminated unions, so plain dict keys there reach the
                # engine verbatim (tests pin it). Passing the REST body keeps one mapping, checked against the REST model.
                rule_collections=_rule_collections(group, plan, ip_groups, constructed),
                opts=pulumi.ResourceOptions(parent=self, depends_on=previous, provider=policy_provider, protect=protect))
            previous = [rcg]

        if policy.firewall_id and policy.log_analytics_workspace_id:
            # Resource-specific ("Dedicated") mode fills the AZFW* tables, whose rows name the policy, RCG, collection and rule.
            monitor.DiagnosticSetting(f"{name}-firewall-logs", resource_uri=policy.firewall_id, name=f"egress-{plan.cluster}",
                                      workspace_id=policy.log_analytics_workspace_id, log_analytics_destination_type="Dedicated",
                                      logs=[{"category": c, "enabled": True} for c in FIREWALL_LOG_CATEGORIES],
                                      opts=pulumi.ResourceOptions(parent=self))

        self.policy_id = pulumi.Output.from_input(policy_id)
        self.rule_collection_groups = pulumi.Output.from_input([g.name for g in sorted(plan.groups, key=lambda g: g.priority)])
        self.rule_counts = pulumi.Output.from_input({g.name: g.rule_count for g in plan.groups})
        self.register_outputs({"policyId": self.policy_id, "ruleCollectionGroups": self.rule_collection_groups,
                               "ruleCounts": self.rule_counts})
