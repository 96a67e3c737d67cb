"""What the providers hand the engine, so the offline harness presents a pack what the real engine would
(reference/pulumi.md §1.4, read from pulumi/pulumi, pulumi-policy and the providers):

- ``checked``: inputs after the provider's Check, what resource policies see (pulumi-kubernetes moves a plain
  Secret's ``stringData`` into base64 ``data``).
- ``COMPUTED``: per type, the outputs a provider computes. At a preview they are unknown on a create; on an update
  azure-native keeps only ``name`` and ``location`` from the old state and pulumi-aws a few identifiers, the rest
  unknown (``preview_state``).
- ``provider_outputs``: outputs as the providers return them, what stack policies see: azure-native's GET body flattened
  with no path parameters (``resourceGroupName``, ``firewallPolicyName``, ``ruleCollectionGroupName``,
  ``ipGroupsName``) and with its read-only fields; pulumi-aws with ``tagsAll`` added. Not modelled (checked not to
  change a verdict by a review: nulls for unset fields, sets in another order, ``[]`` for unset rule arrays): those,
  ``region``, ``size`` and ``azureApiVersion``, and a Kubernetes Patch's output as the whole live object.
"""
from __future__ import annotations

import base64
from typing import Any, Mapping, Optional

from egress.deployed import UNKNOWN  # the core's stand-in for the engine's unknown sentinel (pack.py: on the wire)

AZURE_READ_ONLY = ("id", "name", "etag", "provisioningState", "type")
COMPUTED: dict[str, tuple[str, ...]] = {
    "azure-native:network:FirewallPolicyRuleCollectionGroup": (*AZURE_READ_ONLY, "size"),
    "azure-native:network:IpGroup": (*AZURE_READ_ONLY, "firewalls", "firewallPolicies"),
    "azure-native:network:FirewallPolicy": (*AZURE_READ_ONLY, "childPolicies", "firewalls", "ruleCollectionGroups"),
    "aws:networkfirewall/ruleGroup:RuleGroup": ("arn", "id", "updateToken", "tagsAll"),
    "aws:networkfirewall/firewallPolicy:FirewallPolicy": ("arn", "id", "updateToken", "tagsAll"),
    "aws:ec2/securityGroup:SecurityGroup": ("arn", "id", "egress", "ingress", "ownerId", "tagsAll"),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": ("arn", "id", "securityGroupRuleId", "tagsAll"),
}
# What a provider's update preview keeps from the old state (the rest of COMPUTED is unknown until the update runs).
KEPT_ON_UPDATE = {"azure-native:": ("name", "location"), "aws:": ("arn", "id", "securityGroupRuleId", "ownerId")}
PATH_PARAMETERS = {
    "azure-native:network:FirewallPolicyRuleCollectionGroup": ("resourceGroupName", "firewallPolicyName", "ruleCollectionGroupName"),
    "azure-native:network:IpGroup": ("resourceGroupName", "ipGroupsName"),
    "azure-native:network:FirewallPolicy": ("resourceGroupName", "firewallPolicyName"),
}
AZURE_TYPES = {"azure-native:network:FirewallPolicyRuleCollectionGroup": "Microsoft.Network/FirewallPolicies/RuleCollectionGroups",
               "azure-native:network:IpGroup": "Microsoft.Network/IpGroups", "azure-native:network:FirewallPolicy": "Microsoft.Network/FirewallPolicies"}


def checked(typ: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Inputs after the provider's Check."""
    out = dict(inputs)
    if typ == "kubernetes:core/v1:Secret" and isinstance(out.get("stringData"), Mapping):
        encoded = {k: base64.b64encode(str(v).encode()).decode() for k, v in out.pop("stringData").items()}
        out["data"] = {**(out.get("data") or {}), **encoded}
    return out


def preview_state(typ: str, state: Mapping[str, Any], prior: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """The outputs a provider's preview answers: on a create (``prior`` None) every computed output unknown; on an
    update what the provider keeps from ``prior``, the rest unknown."""
    out = dict(state)
    kept = next((fields for prefix, fields in KEPT_ON_UPDATE.items() if typ.startswith(prefix)), ())
    for key in COMPUTED.get(typ, ()):
        out[key] = prior[key] if prior is not None and key in kept and key in prior else UNKNOWN
    return out


def provider_outputs(typ: str, state: Mapping[str, Any]) -> dict[str, Any]:
    """Outputs as the provider returns them after a create or update (what AnalyzeStack carries)."""
    out = {k: v for k, v in checked(typ, state).items() if k not in PATH_PARAMETERS.get(typ, ())}
    if typ in AZURE_TYPES:
        out.setdefault("etag", 'W/"00000000-0000-0000-0000-000000000000"')
        out.setdefault("provisioningState", "Succeeded")
        out.setdefault("type", AZURE_TYPES[typ])
    elif typ in COMPUTED and typ.startswith("aws:"):
        tags = out.get("tags")
        out.setdefault("tagsAll", dict(tags) if isinstance(tags, Mapping) else UNKNOWN if tags == UNKNOWN else {})
    return out
