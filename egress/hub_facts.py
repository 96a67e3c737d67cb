"""What a stack declares it knows of the existing (hub) Firewall Policy it attaches to (pure).

Offline (``egress preview``, ``egress render``) the policy cannot be read, so the checks of
``egress.targets.azure.policy.check_existing_policy`` judge these declared facts instead; a fact nobody declared stays
unknown (None), never a default. Online the invokes are the source of truth (components/azure_policy_reader.py).

Two ways to declare, each fact carrying where it came from:
- settings: ``azureHubDnsProxy``, ``azureHubBasePolicyId`` (an id, or ``none``), ``azureHubGroups`` (name=priority of
  every group on the policy), and ``azureExistingPriorities`` (priorities of groups whose names the team does not have;
  alone, only some of the groups: the rest stay unknown);
- ``azureHubExports``: files holding the JSON the Azure CLI prints (egress/hub_exports.py). Which policy a file
  describes is told by the ids in it: the stack's ``azurePolicyId`` (its settings, its groups) or its base policy
  (whose groups' rules run before the stack's). Settings and exports are compared as a read is with the settings
  online (``policy.group_mismatch``): the stack's own groups left out, unnamed priorities matched by value.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Optional

from .hub_exports import SHOW, Groups, HubFactsError, Show, export_path, load_export
from .profile import Profile
from .targets.azure.policy import NO_BASE_POLICY, UNNAMED, ExistingPolicy, group_mismatch

__all__ = ["HubFactsError", "declared_hub_facts", "judge_offline", "stack_file_label"]


def _same_id(a: str, b: str) -> bool:
    return a.rstrip("/").lower() == b.rstrip("/").lower()  # ARM ids are case-insensitive (resourcegroups vs resourceGroups)


class _Facts:
    """Facts as they are gathered: each set once, a second source agreeing with the first, a disagreement refused.
    A value read from an export is never shown in the refusal (only a setting's value, or a boolean)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.sources: dict[str, str] = {}
        self.shown: dict[str, Any] = {}

    def set(self, fact: str, value: Any, source: str, label: str, field: str, fix: str, from_file: bool) -> None:
        shown = value if isinstance(value, bool) or not from_file else "(another value, not shown)"
        if fact in self.values and self.values[fact] != value and not (isinstance(value, str) and _same_id(value, self.values[fact])):
            raise HubFactsError(label, "", field, shown, f"disagrees with {self.shown[fact]} ({self.sources[fact]})", fix)
        if fact not in self.values:
            self.values[fact], self.sources[fact] = value, source
            self.shown[fact] = value if isinstance(value, bool) or not from_file else f"the value read from {source[len('read from '):]}"


RESYNC = "export the hub policy again (both files at once), or correct the setting so they agree"


def _check_groups(profile: Profile, found: Groups, name: str, stack_file: str, ours: set[str]) -> None:
    """The declared groups against an export's complete list, as a read is judged against them online."""
    named = ({n: int(p) for n, _, p in (g.partition("=") for g in profile.azure_hub_groups)} if profile.azure_hub_groups is not None else None)
    listed = {b["name"]: b["properties"]["priority"] for b in found.bodies}
    wrong, extra, missing = group_mismatch(named, set(profile.azure_existing_priorities), listed, ours)
    where = {n: i + 1 for i, n in enumerate(b["name"] for b in found.bodies)}  # positions: the file's names are not shown
    if wrong or extra:
        said = "; ".join(filter(None, [
            f"declared but not in the file or at another priority there: {', '.join(f'{n}={named[n]}' for n in wrong)}" if wrong else "",
            f"in the file but not declared: group(s) {', '.join(str(where[n]) for n in sorted(extra, key=where.get))}" if extra else ""]))
        raise HubFactsError(name, "", "(groups)", f"({len(listed)} group(s), not shown)",
                            f"disagrees with egress-matrix:azureHubGroups (declared in {stack_file}): {said}", RESYNC)
    if missing:
        raise HubFactsError(name, "", "(groups)", f"({len(listed)} group(s), not shown)",
                            f"no group at {', '.join(map(str, missing))}, which egress-matrix:azureExistingPriorities (declared in "
                            f"{stack_file}) says are taken", RESYNC)


def _base_shown(base: Optional[str], source: str) -> str:
    if not base:
        return "not declared"
    return f"the one {source[len('read from '):]} names" if source.startswith("read from ") else base  # a file's id is not shown


def declared_hub_facts(profile: Profile, root: Path, stack_file: str, ours: Iterable[str] = ()) -> ExistingPolicy:
    """The facts ``profile`` declares of its existing policy (``azurePolicyId``), each with its source. ``ours``: the
    stack's own rule collection group names (left out when declarations and exports are compared)."""
    policy_id = profile.azure_policy_id or ""
    own = set(ours)
    facts = _Facts()
    key = lambda name: f"declared in {stack_file}: egress-matrix:{name}"  # noqa: E731
    if profile.azure_hub_dns_proxy is not None:
        facts.set("dns_proxy", profile.azure_hub_dns_proxy, key("azureHubDnsProxy"), stack_file, "azureHubDnsProxy", RESYNC, False)
    if profile.azure_hub_base_policy_id is not None:
        facts.set("base_policy_id", profile.azure_hub_base_policy_id, key("azureHubBasePolicyId"), stack_file, "azureHubBasePolicyId", RESYNC, False)
    unnamed = {f"{UNNAMED} {p}": p for p in profile.azure_existing_priorities}
    declared_groups: Optional[dict[str, int]] = None
    if profile.azure_hub_groups is not None:  # the whole list (with the unnamed ones, if both are set)
        declared_groups = {**{n: int(p) for n, _, p in (g.partition("=") for g in profile.azure_hub_groups)}, **unnamed}
        groups_source = key("azureHubGroups" + (", azureExistingPriorities" if unnamed else ""))
    elif unnamed:  # only some groups: the rest stay unknown
        declared_groups, groups_source = unnamed, key("azureExistingPriorities")
    exports = [(name, load_export(export_path(root, name, stack_file), name, NO_BASE_POLICY)) for name in profile.azure_hub_exports]
    group_names: Optional[tuple[str, frozenset[str]]] = None
    for name, export in sorted(exports, key=lambda e: isinstance(e[1], Groups)):  # the policy's show first: it names the base
        if isinstance(export, Show):
            if not _same_id(export.policy_id, policy_id):
                raise HubFactsError(name, "", "id", "(a policy id, not shown)", f"not the policy the stack attaches to ({policy_id})",
                                    f"export that policy: {SHOW}, or drop the file from egress-matrix:azureHubExports")
            if export.dns_proxy is not None:
                facts.set("dns_proxy", export.dns_proxy, f"read from {name}", name, "dnsSettings.enableProxy", RESYNC, True)
            if export.base_policy_id is not None:
                facts.set("base_policy_id", export.base_policy_id, f"read from {name}", name, "basePolicy.id", RESYNC, True)
            if export.group_names is not None:
                group_names = (name, export.group_names)
    exported_groups = None
    for name, export in exports:
        if not isinstance(export, Groups):
            continue
        base = facts.values.get("base_policy_id")
        if _same_id(export.policy_id, policy_id):
            groups = {b["name"]: b["properties"]["priority"] for b in export.bodies}
            if exported_groups is not None and exported_groups[1] != groups:
                raise HubFactsError(name, "", "(groups)", f"({len(groups)} group(s), not shown)", f"not the groups {exported_groups[0]} "
                                    "lists of the same policy", RESYNC)
            exported_groups = (name, groups)
            _check_groups(profile, export, name, stack_file, own)
            if group_names and set(groups) != group_names[1]:
                raise HubFactsError(name, "", "name", f"({len(set(groups) ^ group_names[1])} name(s), not shown)",
                                    f"groups not in both this file and {group_names[0]} (exported at different times)",
                                    "export the policy and its groups again, one right after the other")
        elif base and base != NO_BASE_POLICY and _same_id(export.policy_id, base):
            facts.set("parent_groups", export.bodies, f"read from {name}", name, "(groups)", RESYNC, True)
        else:
            raise HubFactsError(name, "", "id", "(a policy id, not shown)", "groups of a policy that is neither egress-matrix:azurePolicyId "
                                f"({policy_id}) nor its base policy ({_base_shown(base, facts.sources.get('base_policy_id', ''))})",
                                "export the groups of the stack's policy or of its base policy; for the base policy's, declare "
                                "egress-matrix:azureHubBasePolicyId or list the policy's `show` export too")
    partial = False
    if exported_groups is not None:  # a complete list, read: it is the fact (the settings agreed with it above)
        facts.set("groups", exported_groups[1], f"read from {exported_groups[0]}", exported_groups[0], "(groups)", RESYNC, True)
    elif declared_groups is not None:
        facts.set("groups", declared_groups, groups_source, stack_file, "azureHubGroups", RESYNC, False)
        partial = profile.azure_hub_groups is None
    if facts.values.get("base_policy_id") == NO_BASE_POLICY:
        facts.set("parent_groups", (), facts.sources["base_policy_id"], stack_file, "azureHubBasePolicyId", RESYNC, False)
    return ExistingPolicy(policy_id=policy_id, sources=facts.sources, groups_partial=partial, **facts.values)


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

        declared = declared_hub_facts(profile, root, stack_file_label(stack), ours=[g.name for g in azure.groups])
        notes, warnings = judge_existing_policy(azure, declared, declared, requirements, fqdn_tag_members(catalog, requirements))
    aws = plans.get("aws")
    if aws is not None and aws.policy is not None and aws.policy.existing_arn:
        from .targets.aws.policy import ExistingFirewallPolicy, check_existing_policy

        warnings += check_existing_policy(aws, ExistingFirewallPolicy(arn=aws.policy.existing_arn))
    return notes, warnings
