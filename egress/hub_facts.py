"""What a stack declares it knows of the existing (hub) Firewall Policy it attaches to (pure).

Offline (``egress preview``, ``egress render``) the policy cannot be read, so the checks of
``egress.targets.azure.policy.check_existing_policy`` judge these declared facts instead; a fact nobody declared stays
unknown (None), never a default. Online the invokes are the source of truth (components/azure_policy_reader.py).

Two ways to declare, each fact carrying where it came from:
- settings: ``azureHubDnsProxy``, ``azureHubBasePolicyId`` (an id, or ``none``), ``azureHubGroups`` (name=priority), and
  ``azureExistingPriorities`` (priorities of groups whose names the team does not have);
- ``azureHubExports``: files holding the JSON the Azure CLI's azure-firewall extension prints. ``az network firewall policy
  show`` gives the policy's dnsSettings, basePolicy and ruleCollectionGroups (ids); ``az network firewall policy
  rule-collection-group list`` gives each group's name, priority and ruleCollections. Both print the ARM resource with
  ``properties`` flattened into the object (aaz ``client_flatten``); the unflattened REST shape is read too. Which policy
  a file describes is told by the ids in it: the stack's ``azurePolicyId`` (its settings, its groups) or its base policy
  (whose groups' rules run before the stack's).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from .errors import InputError
from .profile import Profile
from .targets.azure.policy import NO_BASE_POLICY, UNNAMED, ExistingPolicy

SHOW = "az network firewall policy show --resource-group <rg> --name <policy> -o json"
LIST = "az network firewall policy rule-collection-group list --resource-group <rg> --policy-name <policy> -o json"
_POLICY_TYPE = "microsoft.network/firewallpolicies"
_GROUP_TYPE = "microsoft.network/firewallpolicies/rulecollectiongroups"


class HubFactsError(InputError):
    """An export file or hub declaration that cannot be used (names the file, the field, the value and the fix)."""


@dataclass(frozen=True)
class _Show:
    policy_id: str
    dns_proxy: bool
    base_policy_id: str  # or NO_BASE_POLICY
    group_names: Optional[frozenset[str]]  # None: the export does not list them


@dataclass(frozen=True)
class _Groups:
    policy_id: str
    bodies: tuple[dict[str, Any], ...]  # {"name", "properties": {"priority", "ruleCollections"}}


def _same_id(a: str, b: str) -> bool:
    return a.rstrip("/").lower() == b.rstrip("/").lower()  # ARM ids are case-insensitive (resourcegroups vs resourceGroups)


def _name(policy_id: str) -> str:
    return policy_id.rstrip("/").rsplit("/", 1)[-1]  # the policy's name: its full id is in the message's explanation


def _props(item: dict[str, Any]) -> dict[str, Any]:
    nested = item.get("properties")
    return {**item, **nested} if isinstance(nested, dict) else item


def _parse_show(data: dict[str, Any], label: str) -> _Show:
    item = _props(data)
    policy_id = item.get("id")
    if not isinstance(policy_id, str) or "/firewallpolicies/" not in policy_id.lower():
        raise HubFactsError(label, "", "id", policy_id, "not a Firewall Policy's resource id",
                            f"write the JSON that `{SHOW}` prints, unedited")
    dns = item.get("dnsSettings")
    if dns is not None and not isinstance(dns, dict):
        raise HubFactsError(label, "", "dnsSettings", dns, "not an object", f"export it again with `{SHOW}`")
    enable = (dns or {}).get("enableProxy")
    if enable is not None and not isinstance(enable, bool):
        raise HubFactsError(label, "", "dnsSettings.enableProxy", enable, "not true or false", f"export it again with `{SHOW}`")
    base = item.get("basePolicy")
    base_id = base.get("id") if isinstance(base, dict) else base
    if base_id is not None and (not isinstance(base_id, str) or "/firewallpolicies/" not in base_id.lower()):
        raise HubFactsError(label, "", "basePolicy.id", base_id, "not a Firewall Policy's resource id", f"export it again with `{SHOW}`")
    refs = item.get("ruleCollectionGroups")
    names = None
    if refs is not None:
        if not isinstance(refs, list) or not all(isinstance(r, dict) and isinstance(r.get("id"), str) for r in refs):
            raise HubFactsError(label, "", "ruleCollectionGroups", refs, "not a list of {id: <group resource id>}",
                                f"export it again with `{SHOW}`")
        names = frozenset(r["id"].rstrip("/").rsplit("/", 1)[-1] for r in refs)
    # No dnsSettings, or no enableProxy in them: the proxy is off (Azure's default), as the invoke's answer says.
    return _Show(policy_id, bool(enable), base_id or NO_BASE_POLICY, names)


def _parse_groups(data: list[Any], label: str) -> _Groups:
    if not data:
        raise HubFactsError(label, "", "(document)", [], "an empty list does not say which policy it is of",
                            "leave it out; for a policy without groups declare egress-matrix:azureHubGroups: []")
    policies, bodies = set(), []
    for index, raw in enumerate(data):
        where = f"group {index + 1}"
        if not isinstance(raw, dict):
            raise HubFactsError(label, where, "(group)", raw, "not an object", f"write the JSON that `{LIST}` prints, unedited")
        item = _props(raw)
        group_id, name, priority, collections = item.get("id"), item.get("name"), item.get("priority"), item.get("ruleCollections")
        if not isinstance(group_id, str) or "/ruleCollectionGroups/".lower() not in group_id.lower():
            raise HubFactsError(label, where, "id", group_id, "not a rule collection group's resource id",
                                f"write the JSON that `{LIST}` prints, unedited")
        where = f"group {index + 1} ({name})"
        if not isinstance(name, str) or not name:
            raise HubFactsError(label, where, "name", name, "not a group name", f"export it again with `{LIST}`")
        if isinstance(priority, bool) or not isinstance(priority, int) or not 100 <= priority <= 65000:
            raise HubFactsError(label, where, "priority", priority, "not a rule collection group priority (an integer 100-65000)",
                                f"export it again with `{LIST}`")
        if not isinstance(collections, list) or not all(isinstance(c, dict) for c in collections):
            raise HubFactsError(label, where, "ruleCollections", collections, "not a list of rule collections",
                                f"export it again with `{LIST}`")
        policies.add(group_id[:group_id.lower().rindex("/rulecollectiongroups/")].lower())
        bodies.append({"name": name, "properties": {"priority": priority, "ruleCollections": collections}})
    if len(policies) > 1:
        raise HubFactsError(label, "", "id", sorted(policies), "groups of more than one policy in one file",
                            "export each policy's groups to its own file")
    first = _props(data[0])["id"]
    return _Groups(first[:first.lower().rindex("/rulecollectiongroups/")], tuple(bodies))


def load_export(path: Path, label: str) -> _Show | _Groups:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HubFactsError(label, "", "(file)", str(path), "no such file",
                            f"export the policy with `{SHOW}` (and its groups with `{LIST}`) to that path, or correct "
                            "egress-matrix:azureHubExports") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HubFactsError(label, "", "(file)", str(path), f"cannot be read ({exc.__class__.__name__})", "write it as UTF-8 JSON") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HubFactsError(label, f"line {exc.lineno}", "(document)", text[:40], f"not valid JSON ({exc.msg})",
                            f"write the output of `{SHOW}` or `{LIST}`, unedited") from None
    if isinstance(data, list):
        return _parse_groups(data, label)
    if isinstance(data, dict):
        kind = str(data.get("type", "")).lower()
        if kind == _GROUP_TYPE:
            raise HubFactsError(label, "", "type", data.get("type"), "one rule collection group (the output of `show`), not the list",
                                f"export them all with `{LIST}`")
        if kind and kind != _POLICY_TYPE:
            raise HubFactsError(label, "", "type", data.get("type"), "not a Firewall Policy",
                                f"write the output of `{SHOW}` or `{LIST}`")
        return _parse_show(data, label)
    raise HubFactsError(label, "", "(document)", data, "neither a policy (an object) nor a list of rule collection groups",
                        f"write the output of `{SHOW}` or `{LIST}`, unedited")


class _Facts:
    """Facts as they are gathered: each set once, a second source agreeing with the first, a disagreement refused."""

    def __init__(self, policy_id: str):
        self.values: dict[str, Any] = {}
        self.sources: dict[str, str] = {}
        self.policy_id = policy_id

    def set(self, fact: str, value: Any, source: str, label: str, field: str, fix: str) -> None:
        if fact in self.values and self.values[fact] != value:
            raise HubFactsError(label, "", field, _shown(value), f"disagrees with {_shown(self.values[fact])} ({self.sources[fact]})", fix)
        if fact not in self.values:
            self.values[fact], self.sources[fact] = value, source


def _shown(value: Any) -> Any:
    return f"{len(value)} group(s)" if isinstance(value, tuple) else value


def declared_hub_facts(profile: Profile, root: Path, stack_file: str) -> ExistingPolicy:
    """The facts ``profile`` declares of its existing policy (``azurePolicyId``), each with its source."""
    policy_id = profile.azure_policy_id or ""
    facts = _Facts(policy_id)
    key = lambda name: f"declared in {stack_file}: egress-matrix:{name}"  # noqa: E731
    resync = "export the hub policy again (both files at once), or correct the setting so they agree"
    if profile.azure_hub_dns_proxy is not None:
        facts.set("dns_proxy", profile.azure_hub_dns_proxy, key("azureHubDnsProxy"), stack_file, "azureHubDnsProxy", resync)
    if profile.azure_hub_base_policy_id is not None:
        facts.set("base_policy_id", profile.azure_hub_base_policy_id, key("azureHubBasePolicyId"), stack_file, "azureHubBasePolicyId", resync)
    declared_groups = ({n: int(p) for n, _, p in (g.partition("=") for g in profile.azure_hub_groups)}
                       if profile.azure_hub_groups is not None else None)
    if profile.azure_existing_priorities:  # the older declaration: priorities whose groups' names the team does not have
        declared_groups = {**(declared_groups or {}), **{f"{UNNAMED} {p}": p for p in profile.azure_existing_priorities}}
    if declared_groups is not None:
        names = "azureHubGroups" + (", azureExistingPriorities" if profile.azure_existing_priorities else "")
        facts.set("groups", declared_groups, key(names), stack_file, "azureHubGroups", resync)
    exports = [(name, load_export(root / name, name)) for name in profile.azure_hub_exports]
    group_names: Optional[tuple[str, frozenset[str]]] = None
    for name, export in sorted(exports, key=lambda e: isinstance(e[1], _Groups)):  # the policy's show first: it names the base
        if isinstance(export, _Show):
            if not _same_id(export.policy_id, policy_id):
                raise HubFactsError(name, "", "id", _name(export.policy_id), f"not the policy the stack attaches to ({policy_id})",
                                    f"export that policy: {SHOW}, or drop the file from egress-matrix:azureHubExports")
            facts.set("dns_proxy", export.dns_proxy, f"read from {name}", name, "dnsSettings.enableProxy", resync)
            facts.set("base_policy_id", export.base_policy_id, f"read from {name}", name, "basePolicy.id", resync)
            if export.group_names is not None:
                group_names = (name, export.group_names)
    for name, export in exports:
        if not isinstance(export, _Groups):
            continue
        base = facts.values.get("base_policy_id")
        if _same_id(export.policy_id, policy_id):
            groups = {b["name"]: b["properties"]["priority"] for b in export.bodies}
            facts.set("groups", groups, f"read from {name}", name, "(groups)", resync)
            if group_names and set(groups) != group_names[1]:
                raise HubFactsError(name, "", "name", sorted(set(groups) ^ group_names[1]),
                                    f"groups not in both this file and {group_names[0]} (exported at different times)",
                                    "export the policy and its groups again, one right after the other")
        elif base and base != NO_BASE_POLICY and _same_id(export.policy_id, base):
            facts.set("parent_groups", export.bodies, f"read from {name}", name, "(groups)", resync)
        else:
            raise HubFactsError(name, "", "id", _name(export.policy_id), "groups of a policy that is neither egress-matrix:azurePolicyId "
                                f"({policy_id}) nor its base policy ({base or 'not declared'})",
                                "export the groups of the stack's policy or of its base policy; for the base policy's, declare "
                                "egress-matrix:azureHubBasePolicyId or list the policy's `show` export too")
    if facts.values.get("base_policy_id") == NO_BASE_POLICY:
        facts.set("parent_groups", (), facts.sources["base_policy_id"], stack_file, "azureHubBasePolicyId", resync)
    return ExistingPolicy(policy_id=policy_id, sources=facts.sources, **facts.values)


def stack_file_label(stack: str) -> str:
    return f"stacks/Pulumi.{stack}.yaml"  # Pulumi.yaml's stackConfigDir, relative to the project root as the program runs


def judge_offline(plans: dict[str, Any], catalog: Any, profile: Profile, requirements: Any, root: Path, stack: str) -> tuple[list[str], list[str]]:
    """``egress render``: the judgement the program makes offline of an existing policy the stack attaches to (nothing
    read: the declared facts), so render and preview agree. (notes, warnings); raises where a known fact refuses it."""
    notes: list[str] = []
    warnings: list[str] = []
    requirements = list(requirements)
    azure = plans.get("azure")
    if azure is not None and azure.policy.existing_id:
        from .targets.azure.compile import fqdn_tag_members
        from .targets.azure.policy import judge_existing_policy

        declared = declared_hub_facts(profile, root, stack_file_label(stack))
        notes, warnings = judge_existing_policy(azure, declared, declared, requirements, fqdn_tag_members(catalog, requirements))
    aws = plans.get("aws")
    if aws is not None and aws.policy is not None and aws.policy.existing_arn:
        from .targets.aws.policy import ExistingFirewallPolicy, check_existing_policy

        warnings += check_existing_policy(aws, ExistingFirewallPolicy(arn=aws.policy.existing_arn))
    return notes, warnings
