"""Deployed Azure resources back into the artefacts ``render`` writes, for the evaluator (policy pack, preview).

A rule collection group's ``ruleCollections`` input is the REST body as-is (the component passes it verbatim), so the
body is rebuilt from the resource alone; IP Groups the stack creates come back with their ids, so their addresses are
known. Groups or IP Groups that live outside the stack are not resources here: the evaluator reports what it assumes.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from ...deployed import DeployedResource, of_type

RCG_TYPE = "azure-native:network:FirewallPolicyRuleCollectionGroup"
IP_GROUP_TYPE = "azure-native:network:IpGroup"
POLICY_TYPE = "azure-native:network:FirewallPolicy"


def rcg_name(resource: DeployedResource) -> str:
    return str(resource.props.get("ruleCollectionGroupName") or resource.props.get("name") or resource.name)


def rcg_body(resource: DeployedResource) -> dict[str, Any]:
    return {"name": rcg_name(resource), "properties": {"priority": resource.props.get("priority"),
                                                      "ruleCollections": resource.props.get("ruleCollections", [])}}


def _text(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def artefacts(resources: Iterable[DeployedResource]) -> dict[str, str]:
    resources = list(resources)
    files = {f"azure/{rcg_name(r)}.json": _text(rcg_body(r)) for r in of_type(resources, RCG_TYPE)}
    for group in of_type(resources, IP_GROUP_TYPE):
        name = str(group.props.get("ipGroupsName") or group.props.get("name") or group.name)
        if group.props.get("id"):
            files[f"azure/ip-groups/{name}.json"] = _text({"id": group.props["id"], "name": name,
                                                           "properties": {"ipAddresses": list(group.props.get("ipAddresses", []))}})
    return files
