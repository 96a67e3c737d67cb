"""Azure replacements the inputs alone do not show (``egress diff``; pure): a resource whose subscription changes, a rule
collection group whose provider changes, and the groups replaced with the policy they live in.

- A resource cannot change subscription: the policy and IP Groups the stack creates live in azureSubscriptionId's, so a
  new value is a new resource (the old one deleted), though the inputs show only ``~ id``.
- The groups under a policy of another subscription are written through an explicit provider
  (``egress-policy-subscription``); gaining or dropping it (azureSubscriptionId set to the policy's, or away from it)
  changes every group's provider, which the engine replaces.
- A replaced policy this stack creates gets a new name, so every group in it is replaced with it (firewallPolicyName).
"""
from __future__ import annotations

import re
from typing import Optional

AZURE_POLICY = "azure-native:network:FirewallPolicy"
RCG = "azure-native:network:FirewallPolicyRuleCollectionGroup"
IP_GROUP = "azure-native:network:IpGroup"
PROVIDER = "pulumi:providers:azure-native"
_SUBSCRIPTION = re.compile(r"^/subscriptions/([^/]+)/", re.IGNORECASE)


def _provider(snapshot: dict) -> Optional[dict]:
    return next((r for r in snapshot["resources"] if r["type"] == PROVIDER), None)


def _subscription(resource: dict, snapshot: dict) -> Optional[str]:
    """Where the resource lives: a group under another subscription's policy, its provider's; else its id's."""
    provider = _provider(snapshot)
    if resource["type"] == RCG and provider is not None:
        return str((provider.get("props") or {}).get("subscriptionId") or "").lower() or None
    found = _SUBSCRIPTION.match(str((resource.get("props") or {}).get("id") or ""))
    return found.group(1).lower() if found else None


def replacement_reasons(base: dict, head: dict, replaced: dict[tuple[str, str], list[str]]) -> dict[tuple[str, str], list[str]]:
    """(type, name) -> the further replacement reasons of Azure resources on both sides (``replaced``: what the inputs
    already replace, by the same key)."""
    head_res = {(r["type"], r["name"]): r for r in head["resources"]}
    before, after = _provider(base), _provider(head)
    out: dict[tuple[str, str], list[str]] = {}
    for resource in base["resources"]:
        key = (resource["type"], resource["name"])
        new = head_res.get(key)
        if new is None or resource["type"] not in (AZURE_POLICY, RCG, IP_GROUP):
            continue
        reasons = []
        old_sub, new_sub = _subscription(resource, base), _subscription(new, head)
        if old_sub and new_sub and old_sub != new_sub:
            reasons.append(f"subscription: {old_sub} -> {new_sub} (a resource cannot change subscription)")
        if resource["type"] == RCG and (before is None) != (after is None):
            old_name, new_name = (before or {}).get("name", "default"), (after or {}).get("name", "default")
            reasons.append(f"provider: {old_name} -> {new_name} (the engine replaces a resource whose provider changes)")
        if reasons:
            out[key] = reasons
    # the groups of a replaced created policy: the replacement is auto-named, so their firewallPolicyName changes
    policies = {r["name"]: r for r in base["resources"] if r["type"] == AZURE_POLICY and replaced.get((r["type"], r["name"]))}
    for resource in base["resources"]:
        key = (resource["type"], resource["name"])
        if resource["type"] != RCG or key not in head_res or replaced.get(key) or out.get(key):
            continue
        policy_name = (resource.get("props") or {}).get("firewallPolicyName")
        owner = next((name for name, p in policies.items() if (p.get("props") or {}).get("name") == policy_name), None)
        if owner:
            out[key] = [f"its policy {owner} is replaced"]
    return out


def references(resource: dict, snapshot: dict) -> list[str]:
    """The rule collection groups whose rules name this IP Group (by its id or name)."""
    props = resource.get("props") or {}
    marks = [f"{m}'" for m in (props.get("id"), f"/ipGroups/{props.get('ipGroupsName') or props.get('name')}") if m]  # whole ids
    return sorted(r["name"] for r in snapshot["resources"] if r["type"] == RCG
                  and any(str(m).lower() in str(r.get("props")).lower() for m in marks))
