"""A stack setting's validation error in the user's words: the problem and a fix that matches it.

Pydantic's messages speak of its types ("Input should be a valid tuple") and show a regex as the expected form; here
every constraint the Profile uses gets its own wording: a range for ge/le, the allowed values with a did-you-mean for
a Literal, a template (never a regex) for a pattern, the expected shape for a type error. tests/test_messages.py checks
that every constrained field of the Profile has its wording here.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Optional

from .addresses import AddressError
from .suggest import did_you_mean

_SUB = "/subscriptions/<subscription-id>/resourceGroups/<group>/providers"
_DNS_LABEL = "lower-case letters, digits and inner '-'"
_NAMESPACE = ("a Kubernetes namespace name", f"{_DNS_LABEL}, at most 63 characters, e.g. egress-proxy")
_DIGEST = ("an image pinned by digest", "<registry>/<repository>@sha256:<64 hex digits>")

# Setting -> (what it must be, the form to write): for every Field with pattern= in the Profile.
TEMPLATES: dict[str, tuple[str, str]] = {
    "awsRegion": ("an AWS region name", "<area>-<direction>-<number>, e.g. eu-central-1"),
    "ibmRegion": ("an IBM Cloud region name", "<area>-<name>, e.g. us-south or eu-de"),
    "clusterName": ("a cluster name every target accepts", f"1-40 characters, {_DNS_LABEL}, e.g. prod-weu-1"),
    "azureArmEndpoint": ("an https URL", "https://management.<region>.<domain>"),
    "awsVpcId": ("a VPC id", "vpc- and 8 or 17 hex digits, e.g. vpc-0a1b2c3d4e5f60718"),
    "awsFirewallPolicyArn": ("a Network Firewall policy ARN",
                             "arn:aws:network-firewall:<region>:<12-digit account id>:firewall-policy/<name>"),
    "kkpSeed": ("a Seed name", f"{_DNS_LABEL}, e.g. europe"),
    "kkpDatacenter": ("a datacenter name", f"{_DNS_LABEL}, e.g. aws-eu-central-1"),
    "egressProxyNamespace": _NAMESPACE,
    "probeNamespace": _NAMESPACE,
    "apiServerNamespace": _NAMESPACE,
    "egressProxyImage": _DIGEST,
    "probeImage": _DIGEST,
    "kkpClusterId": ("a KKP cluster id", "10 lower-case letters and digits, e.g. s8kkvfxhrn"),
    "azurePolicyId": ("a Firewall Policy resource id", f"{_SUB}/Microsoft.Network/firewallPolicies/<policy>"),
    "azureBasePolicyId": ("a Firewall Policy resource id", f"{_SUB}/Microsoft.Network/firewallPolicies/<policy>"),
    "azureHubBasePolicyId": ("a Firewall Policy resource id or none", f"{_SUB}/Microsoft.Network/firewallPolicies/<policy>, or none"),
    "azureFirewallId": ("an Azure Firewall resource id", f"{_SUB}/Microsoft.Network/azureFirewalls/<firewall>"),
    "azureLogAnalyticsWorkspaceId": ("a Log Analytics workspace resource id",
                                     f"{_SUB}/Microsoft.OperationalInsights/workspaces/<workspace>"),
    "azureResourceGroup": ("a resource group name", "1-90 letters, digits, '_', '-', '.', '(' and ')', e.g. rg-egress"),
    "azureSubscriptionId": ("a subscription id", "a GUID in lower case, e.g. 00000000-0000-0000-0000-000000000000"),
}

# Setting -> what a string shorter than min_length lacks (min_length on text).
SHORT_TEXT: dict[str, str] = {
    "allowBroadEgress": "write the reason in words, e.g. 'lab cluster without a firewall, ticket OPS-42'",
}

_TYPE_WORDS = {
    "tuple_type": ("one value where a list belongs", "write a YAML list, e.g. [{value}]"),
    "list_type": ("one value where a list belongs", "write a YAML list, e.g. [{value}]"),
    "iterable_type": ("one value where a list belongs", "write a YAML list, e.g. [{value}]"),
    "dict_type": ("not a mapping", "write name: value lines under it"),
    "model_type": ("not a mapping of fields", "write field: value lines under it"),
    "model_attributes_type": ("not a mapping of fields", "write field: value lines under it"),
    "string_type": ("not text", "write it as text (quote it in the stack file)"),
    "bool_type": ("not true or false", "write true or false"),
    "bool_parsing": ("not true or false", "write true or false"),
    "int_type": ("not a whole number", "write a whole number in plain decimal"),
    "int_parsing": ("not a whole number", "write a whole number in plain decimal"),
    "int_from_float": ("not a whole number", "write a whole number in plain decimal"),
    "date_from_datetime_parsing": ("not a date", "write the date as YYYY-MM-DD, e.g. 2026-12-31"),
    "date_parsing": ("not a date", "write the date as YYYY-MM-DD, e.g. 2026-12-31"),
    "date_type": ("not a date", "write the date as YYYY-MM-DD, e.g. 2026-12-31"),
}


def bounds(metadata: Any) -> tuple[Optional[int], Optional[int]]:
    """The (lowest, highest) allowed number of a field's ge/gt/le/lt constraints."""
    low = high = None
    for item in metadata or ():
        if getattr(item, "ge", None) is not None:
            low = item.ge
        if getattr(item, "gt", None) is not None:
            low = item.gt + 1
        if getattr(item, "le", None) is not None:
            high = item.le
        if getattr(item, "lt", None) is not None:
            high = item.lt - 1
    return low, high


def choices_of(error: Mapping[str, Any]) -> list[str]:
    """The allowed values a literal_error names."""
    return re.findall(r"'([^']*)'", str((error.get("ctx") or {}).get("expected", "")))


def _shape(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "<item>"
    return "<value>"


def explain(key: str, error: Mapping[str, Any], *, description: str = "", metadata: Any = (),
            fields: Optional[list[str]] = None, item: bool = False, examples: Any = None) -> tuple[str, str]:
    """(problem, fix) for one pydantic error of setting ``key``. ``metadata``: the field's constraints (bounds);
    ``fields``: a nested model's field names, for an unknown field; ``item``: the error is about one item of a list;
    ``examples``: the field's examples (the first is shown after a template)."""
    kind, value = error["type"], error.get("input")
    ctx_error = (error.get("ctx") or {}).get("error")
    if isinstance(ctx_error, AddressError):
        return ctx_error.problem, ctx_error.fix
    if kind == "missing":
        name = str(error["loc"][-1]) if error.get("loc") else key
        return ("required field is missing", f"add '{name}'") if item or len(error.get("loc", ())) > 1 else \
            ("not set, and the stack needs it", f"set egress-matrix:{key} ({description})")
    if kind == "extra_forbidden":
        return "unknown field", did_you_mean(str(error["loc"][-1]), fields or [], listing="fields") if fields else "remove it"
    if kind in ("literal_error", "enum"):
        return f"'{value}' is not one of the allowed values", did_you_mean(value, choices_of(error))
    if kind == "string_pattern_mismatch":
        if "\\x00" in str((error.get("ctx") or {}).get("pattern", "")):
            return "holds a control character (a line break, a tab)", "write it on one line"
        if key in TEMPLATES:
            what, form = TEMPLATES[key]
            example = f", e.g. {examples[0]}" if examples and "e.g." not in form and isinstance(examples[0], str) else ""
            return f"not {what}", f"write it as {form}{example}"
        return "not a valid name", f"use {_DNS_LABEL} (a stable slug)"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        low, high = bounds(metadata)
        if low is not None and high is not None:
            return f"outside the allowed range {low}-{high}", f"write a whole number from {low} to {high}"
        limit = (error.get("ctx") or {})
        return f"{value} is out of range ({error['msg'].replace('Input should be ', 'it must be ')})", \
            f"write a number {' '.join(f'{k} {v}' for k, v in limit.items())}"
    if kind == "too_short":
        return "an empty list", f"list at least {(error.get('ctx') or {}).get('min_length', 1)} ({description})"
    if kind == "string_too_short":
        need = (error.get("ctx") or {}).get("min_length", 1)
        return f"too short (at least {need} characters)", SHORT_TEXT.get(key, f"write it out ({description})")
    if kind in ("too_long", "string_too_long"):
        most = (error.get("ctx") or {}).get("max_length")
        return f"too long (at most {most} {'items' if kind == 'too_long' else 'characters'})", "shorten it"
    if kind in _TYPE_WORDS:
        problem, fix = _TYPE_WORDS[kind]
        return problem, fix.format(value=_shape(value))
    message = re.sub(r"^(Value error|Assertion failed), ", "", str(error.get("msg", "not valid")))
    return message.replace("Input should be", "it must be"), f"correct the value ({description})" if description else "correct the value"
