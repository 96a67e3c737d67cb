"""Offline check of rule collection group bodies against the Azure REST model (verification-engines.md section 6).

azure-mgmt-network 30.2.0 still carries autorest validation tables (priority 100-65000, app-rule port 0-64000,
required fields); msrest 0.7.1's validator runs them. A serialize round trip finds unknown or misspelt keys, and
the enums are checked by hand because neither library does. Pinned in pyproject: a private module path is used.
"""
from __future__ import annotations

from typing import Any

import msrest.serialization as msrest_serialization
from azure.mgmt.network import models
from azure.mgmt.network._utils import serialization as vendored

vendored.Model.validate = msrest_serialization.Model.validate
_CLASSES = {name: value for name, value in vars(models).items() if isinstance(value, type)}
_ENUMS = {
    "ruleCollectionType": {e.value for e in models.FirewallPolicyRuleCollectionType},
    "ruleType": {e.value for e in models.FirewallPolicyRuleType},
    "protocolType": {e.value for e in models.FirewallPolicyRuleApplicationProtocolType},
    "ipProtocols": {e.value for e in models.FirewallPolicyRuleNetworkProtocol},
    "type": {e.value for e in models.FirewallPolicyFilterRuleCollectionActionType},
}


def _diff(sent: Any, back: Any, path: str = "") -> list[str]:
    if isinstance(sent, dict):
        back = back if isinstance(back, dict) else {}
        return [d for key, value in sent.items() for d in (_diff(value, back.get(key), f"{path}.{key}") if key in back
                                                           else [f"{path}.{key}: not in the REST model (dropped)"])]
    if isinstance(sent, list):
        back = back if isinstance(back, list) else []
        return [d for i, value in enumerate(sent) for d in _diff(value, back[i] if i < len(back) else None, f"{path}[{i}]")]
    return [] if sent == back else [f"{path}: {sent!r} came back as {back!r}"]


def _enum_errors(value: Any, path: str = "") -> list[str]:
    errors = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _ENUMS:
                for candidate in (item if isinstance(item, list) else [item]):
                    if candidate not in _ENUMS[key]:
                        errors.append(f"{path}.{key}: {candidate!r} is not one of {sorted(_ENUMS[key])}")
            errors += _enum_errors(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            errors += _enum_errors(item, f"{path}[{i}]")
    return errors


def problems(body: dict[str, Any]) -> list[str]:
    """Every way ``body`` breaks the REST model; empty when it conforms."""
    model = vendored.Deserializer(_CLASSES)("FirewallPolicyRuleCollectionGroup", body)
    errors = [str(e) for e in (model.validate() or [])]
    back = vendored.Serializer(_CLASSES).body(model, "FirewallPolicyRuleCollectionGroup")
    return errors + _diff(body, back) + _enum_errors(body)
