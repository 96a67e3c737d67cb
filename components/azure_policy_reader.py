"""Read an existing Firewall Policy with invokes, for ``egress.targets.azure.policy.check_existing_policy``.

Also the explicit provider for a policy in another subscription: the default provider writes to the stack's own
subscription, so rule collection groups for a hub policy elsewhere would otherwise land in the wrong place (or fail).
Runs before any component is registered, so a refused policy stops the program with nothing written.
"""
from __future__ import annotations

from typing import Any, Optional

import pulumi
import pulumi_azure_native as azure_native
from pulumi_azure_native import network

from components.engine_values import engine_numbers
from egress.targets.azure.plan import PolicyPlan
from egress.targets.azure.policy import FACTS, NO_BASE_POLICY, ExistingPolicy

# The explicit provider does not read the stack's azure-native:* settings (only the default provider does), so the
# authentication settings are handed on; secrets stay secrets.
_PLAIN_SETTINGS = ("clientId", "tenantId", "environment", "metadataHost", "msiEndpoint", "oidcRequestUrl", "oidcTokenFilePath",
                   "clientCertificatePath")
_BOOL_SETTINGS = ("useMsi", "useOidc", "useDefaultAzureCredential", "disableInstanceDiscovery")
_SECRET_SETTINGS = ("clientSecret", "clientCertificatePassword", "oidcToken", "oidcRequestToken")


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def policy_provider(name: str, policy: PolicyPlan) -> Optional[pulumi.ProviderResource]:
    """An azure-native provider pinned to the existing policy's subscription, when that is not the stack's."""
    if not policy.existing_id or not policy.foreign_subscription:
        return None
    config = pulumi.Config("azure-native")
    settings: dict[str, Any] = {_snake(k): v for k in _PLAIN_SETTINGS if (v := config.get(k)) is not None}
    settings.update({_snake(k): v for k in _BOOL_SETTINGS if (v := config.get_bool(k)) is not None})
    settings.update({_snake(k): v for k in _SECRET_SETTINGS if (v := config.get_secret(k)) is not None})
    return azure_native.Provider(f"{name}-policy-subscription", subscription_id=policy.subscription_id, **settings)


def _get(value: Any, key: str) -> Any:
    """Invoke results hold typed objects (snake_case attributes) or, inside unions, the REST dicts (camelCase keys)."""
    if value is None:
        return None
    if isinstance(value, dict):
        return value.get(key, value.get(_snake(key)))
    return getattr(value, _snake(key), None)


def _parse(policy_id: str) -> tuple[str, str]:
    parts = policy_id.split("/")
    return parts[4], parts[8]  # /subscriptions/<s>/resourceGroups/<rg>/providers/Microsoft.Network/firewallPolicies/<name>


def _groups(resource_group: str, policy_name: str, references: Any, opts: pulumi.InvokeOptions) -> list[Any]:
    groups = []
    for reference in references or []:
        name = str(_get(reference, "id")).rstrip("/").split("/")[-1]
        groups.append(network.get_firewall_policy_rule_collection_group(
            resource_group_name=resource_group, firewall_policy_name=policy_name, rule_collection_group_name=name, opts=opts))
    return groups


def _answered(found: Any) -> bool:
    """A real read answers with the policy (its id at least); the offline preview's mocks answer nothing: then nothing
    was read, and no fact may be made of the empty answer (no dnsSettings would otherwise read as 'proxy off')."""
    return any(value is not None for value in (found.id, found.name, found.rule_collection_groups, found.dns_settings, found.base_policy))


def read_existing_policy(policy: PolicyPlan, provider: Optional[pulumi.ProviderResource],
                         declared: Optional[ExistingPolicy] = None) -> ExistingPolicy:
    """The policy's DNS proxy, its rule collection groups' priorities and its base policy's rules, read with invokes.
    Where the read answers nothing (offline), the ``declared`` facts (egress/hub_facts.py), unknown where not declared:
    online the read is the source of truth (``egress.targets.azure.policy.judge_existing_policy`` warns where a
    declaration disagrees with it)."""
    assert policy.resource_group and policy.name and policy.existing_id
    declared = declared or ExistingPolicy(policy_id=policy.existing_id)
    opts = pulumi.InvokeOptions(provider=provider)
    found = network.get_firewall_policy(resource_group_name=policy.resource_group, firewall_policy_name=policy.name, opts=opts)
    if not _answered(found):
        return declared
    source = "read from the policy"
    groups = {g.name: int(g.priority) for g in _groups(policy.resource_group, policy.name, found.rule_collection_groups, opts)}
    base_id = _get(found.base_policy, "id")
    parent: tuple[dict[str, Any], ...] = ()
    if base_id:
        base_rg, base_name = _parse(base_id)
        base = network.get_firewall_policy(resource_group_name=base_rg, firewall_policy_name=base_name, opts=opts)
        parent = tuple({"name": g.name, "properties": {"priority": int(g.priority), "ruleCollections": engine_numbers(list(g.rule_collections or []))}}
                       for g in _groups(base_rg, base_name, base.rule_collection_groups, opts))
    # No dnsSettings on a policy means the proxy is off (Azure's default).
    return ExistingPolicy(policy_id=policy.existing_id, dns_proxy=bool(_get(found.dns_settings, "enableProxy")),
                          base_policy_id=base_id or NO_BASE_POLICY, groups=groups, parent_groups=parent,
                          sources={fact: source for fact in FACTS})
