"""The Firewall Policy the rule collection groups land on (pure): the settings of the one the component creates, and
the checks an existing (shared hub) policy must pass before anything is written to it.

The program reads an existing policy with invokes (components/azure_policy_reader.py) and hands the facts here, so
the judgement is the same online, under mocks and in the policy pack.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Optional

from ...models import Requirement, Strict
from ...profile import Profile
from .plan import MAX_RCGS_PER_POLICY, AzureCompileError, AzurePlan, PolicyPlan

_CREATED_POLICY_KEYS = {"azure_firewall_tier": "azureFirewallTier", "azure_threat_intel_mode": "azureThreatIntelMode",
                        "azure_idps_mode": "azureIdpsMode", "azure_base_policy_id": "azureBasePolicyId"}
_POLICY_ID = re.compile(r"^/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/Microsoft\.Network/firewallPolicies/(?P<name>[^/]+)$")


def policy_plan(profile: Profile) -> PolicyPlan:
    common = {"dns_proxy": profile.azure_dns_proxy, "dns_servers": profile.custom_dns_ips if profile.azure_dns_proxy else (),
              "firewall_id": profile.azure_firewall_id, "log_analytics_workspace_id": profile.azure_log_analytics_workspace_id,
              "firewall_private_ip": profile.azure_firewall_private_ip}
    if profile.azure_log_analytics_workspace_id and not profile.azure_firewall_id:
        raise AzureCompileError("egress-matrix:azureLogAnalyticsWorkspaceId is set but not azureFirewallId: Azure Firewall's diagnostic "
                                "settings (the AZFW* tables) belong to the firewall, not the policy. Fix: set egress-matrix:azureFirewallId")
    if profile.azure_policy_id:
        stray = [key for attribute, key in _CREATED_POLICY_KEYS.items() if attribute in profile.model_fields_set]
        if stray:
            raise AzureCompileError(f"egress-matrix:{', '.join(stray)} configure the policy the component creates, but the stack attaches "
                                    "to egress-matrix:azurePolicyId, which keeps its own settings. Fix: remove them, or drop azurePolicyId")
        match = _POLICY_ID.match(profile.azure_policy_id)
        assert match is not None  # the Profile validated the pattern
        return PolicyPlan(existing_id=profile.azure_policy_id, subscription_id=match["sub"], resource_group=match["rg"], name=match["name"],
                          foreign_subscription=match["sub"] != profile.azure_subscription_id, **common)
    if profile.azure_idps_mode and profile.azure_firewall_tier != "Premium":
        raise AzureCompileError(f"egress-matrix:azureIdpsMode is {profile.azure_idps_mode}, but IDPS is a Premium feature and "
                                f"azureFirewallTier is {profile.azure_firewall_tier}. Fix: set azureFirewallTier: Premium, or remove azureIdpsMode")
    idps = profile.azure_idps_mode or ("Deny" if profile.azure_firewall_tier == "Premium" else None)
    return PolicyPlan(tier=profile.azure_firewall_tier, threat_intel_mode=profile.azure_threat_intel_mode, idps_mode=idps,
                      base_policy_id=profile.azure_base_policy_id, **common)




class ExistingPolicy(Strict):
    """What the program read from an existing policy with invokes. ``None``: not known (offline render)."""

    dns_proxy: Optional[bool] = None
    base_policy_id: Optional[str] = None
    groups: dict[str, int] = {}  # rule collection group name -> priority, as found on the policy
    parent_groups: tuple[dict[str, Any], ...] = ()  # the base policy's RCG bodies: their rules run before ours


def check_existing_policy(plan: AzurePlan, facts: ExistingPolicy, requirements: Iterable[Requirement],
                          tag_members: Optional[Mapping[str, set[str]]] = None) -> None:
    """Refuse, before anything is written, what Azure would reject or silently break on a shared policy."""
    where = f"Firewall Policy {plan.policy.existing_id}"
    fqdn_rules = [r.name for g in plan.groups for c in g.collections for r in c.rules if getattr(r, "destination_fqdns", ())]
    if fqdn_rules and facts.dns_proxy is False:
        raise AzureCompileError(f"{where} has its DNS proxy off, but rules {', '.join(fqdn_rules)} use FQDNs in network rules, which "
                                "Azure resolves only through the DNS proxy. Fix: enable the policy's DNS proxy (dnsSettings.enableProxy), or "
                                "set egress-matrix:azureDnsProxy: false")
    ours = {g.name for g in plan.groups}
    for group in plan.groups:
        clash = sorted(name for name, priority in facts.groups.items() if priority == group.priority and name not in ours)
        if clash:
            raise AzureCompileError(f"rule collection group {group.name}: priority {group.priority} is taken on {where} by {', '.join(clash)}. "
                                    "Fix: move egress-matrix:azurePriorityBase to a free band (each stack on a shared policy needs its own)")
    total = len(set(facts.groups) | ours)
    if total > MAX_RCGS_PER_POLICY:
        raise AzureCompileError(f"{where} would hold {total} rule collection groups, over {MAX_RCGS_PER_POLICY}. Fix: use another policy")
    if facts.parent_groups:
        _check_parent(plan, facts, list(requirements), tag_members or {})


def _check_parent(plan: AzurePlan, facts: ExistingPolicy, requirements: list[Requirement], tag_members: Mapping[str, set[str]]) -> None:
    """The base policy's rules run first and are terminating: a Deny there silently wins over our Allow."""
    from .evaluate import evaluate_bodies
    from .render import plan_bodies

    roles = set(plan.role_sources)
    enforced = [r for r in requirements if r.role in roles]
    ids = {role: f"/egress/ip-groups/{plan.ip_group_name(role)}" for role in (*plan.ip_groups, *plan.existing_ip_groups)}
    contents = {ids[role]: plan.role_sources[role] for role in ids}
    bodies = plan_bodies(plan.model_copy(update={"existing_ip_groups": {}, "ip_groups": {r: plan.role_sources[r] for r in ids}}), ids)
    alone = evaluate_bodies(bodies, enforced, plan.role_sources, contents, tag_members)
    behind = evaluate_bodies(bodies, enforced, plan.role_sources, contents, tag_members, parent_bodies=facts.parent_groups)
    blocked = [m for m in behind.missing if m not in alone.missing]
    if blocked:
        raise AzureCompileError(f"the base policy {facts.base_policy_id} of {plan.policy.existing_id} blocks {len(blocked)} requirement(s) "
                                f"before this stack's rules are reached: {'; '.join(blocked)}. Fix: allow them in the base policy, or "
                                "attach to a policy whose parent does not deny them")
