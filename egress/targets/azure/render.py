"""What Azure gets: the REST body of each rule collection group (one PUT each), from an AzurePlan. Pure.

``render(plan)`` returns ``{relative path: text}`` exactly as ``egress render`` writes it; the component passes the
same bodies (with the real IP Group ids) to the provider.
"""
from __future__ import annotations

import json
from typing import Any

from ..options import left_out_text
from .plan import ApplicationRule, AzureCompileError, AzurePlan, NetworkRule, RuleCollectionGroup, ip_group_id


def _sources(role: str, plan: AzurePlan, ip_group_ids: dict[str, str]) -> dict[str, list[str]]:
    if role in plan.existing_ip_groups:
        return {"sourceIpGroups": [plan.existing_ip_groups[role]]}
    if role in plan.ip_groups:
        return {"sourceIpGroups": [ip_group_ids[role]]}
    return {"sourceAddresses": list(plan.role_sources[role])}


def rule_body(rule: ApplicationRule | NetworkRule, plan: AzurePlan, ip_group_ids: dict[str, str]) -> dict[str, Any]:
    if isinstance(rule, ApplicationRule):
        body: dict[str, Any] = {
            "ruleType": "ApplicationRule", "name": rule.name, "description": rule.description,
            "protocols": [{"protocolType": p, "port": n} for p, n in rule.protocols],
            **_sources(rule.role, plan, ip_group_ids), "terminateTLS": False,
        }
        if rule.target_fqdns:
            body["targetFqdns"] = list(rule.target_fqdns)
        if rule.fqdn_tags:
            body["fqdnTags"] = list(rule.fqdn_tags)
        return body
    body = {
        "ruleType": "NetworkRule", "name": rule.name, "description": rule.description,
        "ipProtocols": list(rule.ip_protocols), **_sources(rule.role, plan, ip_group_ids),
        "destinationPorts": list(rule.destination_ports),
    }
    if rule.destination_addresses:
        body["destinationAddresses"] = list(rule.destination_addresses)
    if rule.destination_fqdns:
        body["destinationFqdns"] = list(rule.destination_fqdns)
    return body


def rcg_body(group: RuleCollectionGroup, plan: AzurePlan, ip_group_ids: dict[str, str]) -> dict[str, Any]:
    """The REST body of one rule collection group (what one PUT writes)."""
    return {
        "name": group.name,
        "properties": {
            "priority": group.priority,
            "ruleCollections": [
                {"ruleCollectionType": "FirewallPolicyFilterRuleCollection", "name": c.name, "priority": c.priority,
                 "action": {"type": "Allow"}, "rules": [rule_body(r, plan, ip_group_ids) for r in c.rules]}
                for c in group.collections
            ],
        },
    }


def offline_ip_group_ids(plan: AzurePlan) -> dict[str, str]:
    """Resource ids of the IP Groups the component creates, for offline rendering."""
    if not plan.ip_groups:
        return {}
    missing = [key for key, value in (("azureSubscriptionId", plan.subscription_id), ("azureResourceGroup", plan.resource_group)) if not value]
    if missing:
        raise AzureCompileError(f"rendering IP Group sources offline needs {' and '.join('egress-matrix:' + k for k in missing)}. "
                                "Fix: set them in the stack, or set egress-matrix:azureIpGroups: false to use source CIDRs inline")
    return {role: ip_group_id(plan.subscription_id, plan.resource_group, plan.ip_group_name(role)) for role in plan.ip_groups}  # type: ignore[arg-type]


def plan_bodies(plan: AzurePlan, ip_group_ids: dict[str, str]) -> list[dict[str, Any]]:
    return [rcg_body(group, plan, ip_group_ids) for group in plan.groups]


def ip_group_body(plan: AzurePlan, role: str, resource_id: str) -> dict[str, Any]:
    """The IP Group the component creates for ``role`` (its id, name and addresses)."""
    return {"id": resource_id, "name": plan.ip_group_name(role), "properties": {"ipAddresses": list(plan.ip_groups[role])}}


def _text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def render(plan: AzurePlan) -> dict[str, str]:
    """What Azure gets: every rule collection group's REST body as ``azure/<group>.json`` and every IP Group the
    component creates as ``azure/ip-groups/<name>.json``, with the resource ids the component will give them; and
    ``azure/left-out.txt``, the recommended/optional requirements Azure cannot express (none: no file)."""
    ids = offline_ip_group_ids(plan)
    files = {f"azure/{body['name']}.json": _text(body) for body in plan_bodies(plan, ids)}
    files.update({f"azure/ip-groups/{plan.ip_group_name(role)}.json": _text(ip_group_body(plan, role, ids[role])) for role in sorted(ids)})
    if plan.left_out:
        files["azure/left-out.txt"] = left_out_text("Azure Firewall", plan.left_out)
    return files
