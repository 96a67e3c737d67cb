"""The Firewall Policy the rule collection groups land on (pure): the settings of the one the component creates, and
the checks an existing (shared hub) policy must pass before anything is written to it.

The program reads an existing policy with invokes (components/azure_policy_reader.py); offline, where nothing can be
read, the facts are those the stack declares (egress/hub_facts.py). Either way they are judged here, so the judgement
is the same online, in an offline preview and in ``egress render``; a fact nobody read or declared is an advisory.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Optional

from ...models import Requirement, Strict
from ...profile import Profile
from .plan import MAX_RCGS_PER_POLICY, AzureCompileError, AzurePlan, PolicyPlan

_CREATED_POLICY_KEYS = {"azure_firewall_tier": "azureFirewallTier", "azure_threat_intel_mode": "azureThreatIntelMode",
                        "azure_idps_mode": "azureIdpsMode", "azure_base_policy_id": "azureBasePolicyId"}
_HUB_KEYS = {"azure_hub_dns_proxy": "azureHubDnsProxy", "azure_hub_base_policy_id": "azureHubBasePolicyId",
             "azure_hub_groups": "azureHubGroups", "azure_hub_exports": "azureHubExports"}
_POLICY_ID = re.compile(r"^/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/Microsoft\.Network/firewallPolicies/(?P<name>[^/]+)$")


def policy_plan(profile: Profile) -> PolicyPlan:
    common = {"dns_proxy": profile.azure_dns_proxy, "dns_servers": profile.custom_dns_ips if profile.azure_dns_proxy else (),
              "firewall_id": profile.azure_firewall_id, "log_analytics_workspace_id": profile.azure_log_analytics_workspace_id,
              "firewall_private_ip": profile.azure_firewall_private_ip}
    if profile.azure_log_analytics_workspace_id and not profile.azure_firewall_id:
        raise AzureCompileError("egress-matrix:azureLogAnalyticsWorkspaceId is set but not azureFirewallId: Azure Firewall's diagnostic "
                                "settings (the AZFW* tables) belong to the firewall, not the policy. Fix: set egress-matrix:azureFirewallId")
    hub = [key for attribute, key in _HUB_KEYS.items() if attribute in profile.model_fields_set]
    if hub and not profile.azure_policy_id:
        raise AzureCompileError(f"egress-matrix:{', '.join(hub)} describe an existing policy, but the stack sets no azurePolicyId and "
                                "creates its own. Fix: remove them, or set egress-matrix:azurePolicyId")
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




NO_BASE_POLICY = "none"  # a known fact: the policy has no parent (base) policy
UNNAMED = "(unnamed: azureExistingPriorities)"  # the name of a group declared by its priority alone


class ExistingPolicy(Strict):
    """What is known of an existing policy, and from where. ``None``: not known (not read: an offline preview or render
    where nothing was declared); a check never turns an unknown into a fact."""

    policy_id: str = ""
    dns_proxy: Optional[bool] = None
    base_policy_id: Optional[str] = None  # the parent's id, NO_BASE_POLICY, or None: not known
    groups: Optional[dict[str, int]] = None  # rule collection group name -> priority, as found on the policy
    groups_partial: bool = False  # groups holds only some of them (azureExistingPriorities alone): the rest not known
    parent_groups: Optional[tuple[dict[str, Any], ...]] = None  # the base policy's RCG bodies: their rules run before ours
    sources: dict[str, str] = {}  # fact (dns_proxy, base_policy_id, groups, parent_groups) -> where it came from

    def source(self, fact: str) -> str:
        return self.sources.get(fact, "not read offline")


FACTS = {"dns_proxy": "DNS proxy", "base_policy_id": "base policy", "groups": "rule collection groups", "parent_groups": "base policy's rules"}
_DECLARE = {"dns_proxy": "declare egress-matrix:azureHubDnsProxy (true or false, as the hub team has it), or list the JSON of "
                         "`az network firewall policy show` in egress-matrix:azureHubExports",
            "base_policy_id": "declare egress-matrix:azureHubBasePolicyId (its id, or none), or list the JSON of `az network firewall "
                              "policy show` in egress-matrix:azureHubExports",
            "groups": "declare egress-matrix:azureHubGroups (name=priority of each group already there), or list the JSON of `az network "
                      "firewall policy rule-collection-group list` of the policy in egress-matrix:azureHubExports",
            "parent_groups": "list the JSON of `az network firewall policy rule-collection-group list` of the base policy in "
                             "egress-matrix:azureHubExports"}


def _group(name: str) -> str:
    return "(unnamed)" if name.startswith(UNNAMED) else name


def fact_lines(facts: ExistingPolicy) -> list[str]:
    """One line per fact: its value and where it came from (read with invokes, declared in a stack file, an export file)."""
    def value(fact: str) -> str:
        known = getattr(facts, fact)
        if known is None:
            return "not read offline"
        if fact == "dns_proxy":
            return "on" if known else "off"
        if fact == "groups":
            listed = ", ".join(f"{_group(name)} {priority}" for name, priority in sorted(known.items(), key=lambda kv: (kv[1], kv[0])))
            if facts.groups_partial:
                return f"at least {len(known)} ({listed}; the others not read offline)"
            return f"{len(known)} ({listed})" if known else "none"
        if fact == "parent_groups":
            return f"{len(known)} group(s), {sum(len((g.get('properties') or {}).get('ruleCollections') or ()) for g in known)} rule collection(s)"
        return str(known)
    return [f"{FACTS[fact]}: {value(fact)}" + ("" if getattr(facts, fact) is None else f" ({facts.source(fact)})") for fact in FACTS
            if not (fact == "parent_groups" and facts.base_policy_id == NO_BASE_POLICY)]


def check_existing_policy(plan: AzurePlan, facts: ExistingPolicy, requirements: Iterable[Requirement],
                          tag_members: Optional[Mapping[str, set[str]]] = None) -> list[str]:
    """Refuse, before anything is written, what Azure would reject or silently break on a shared policy. A fact not
    known (None) is never judged: the returned advisories say what was not read and how to declare it."""
    where = f"Firewall Policy {plan.policy.existing_id}"
    advisories = []
    fqdn_rules = [r.name for g in plan.groups for c in g.collections for r in c.rules if getattr(r, "destination_fqdns", ())]
    if fqdn_rules and facts.dns_proxy is None:
        advisories.append(f"DNS proxy of {where}: not read offline; the FQDN network rules {', '.join(fqdn_rules)} need it on: "
                          f"{_DECLARE['dns_proxy']}")
    if fqdn_rules and facts.dns_proxy is False:
        raise AzureCompileError(f"{where} has its DNS proxy off, but rules {', '.join(fqdn_rules)} use FQDNs in network rules, which Azure "
                                "resolves only through the DNS proxy. Fix: enable the policy's DNS proxy (dnsSettings.enableProxy), or set "
                                f"egress-matrix:azureDnsProxy: false (its DNS proxy: {facts.source('dns_proxy')})")
    ours = {g.name for g in plan.groups}
    if facts.groups is None or facts.groups_partial:
        known = f" other than {', '.join(str(p) for p in sorted(set(facts.groups.values())))}" if facts.groups else ""
        advisories.append(f"rule collection groups of {where}: not read offline; this stack's priorities "
                          f"{', '.join(str(g.priority) for g in plan.groups)} may be taken{known}, and the count of groups "
                          f"(at most {MAX_RCGS_PER_POLICY}) is not known: {_DECLARE['groups']}")
    if facts.groups is not None:
        for group in plan.groups:
            clash = sorted(_group(name) for name, priority in facts.groups.items() if priority == group.priority and name not in ours)
            if clash:
                raise AzureCompileError(f"rule collection group {group.name}: priority {group.priority} is taken on {where} by {', '.join(clash)}. "
                                        "Fix: move egress-matrix:azurePriorityBase to a free band (each stack on a shared policy needs its "
                                        f"own; the groups there: {facts.source('groups')})")
        total = len(set(facts.groups) | ours)
        if total > MAX_RCGS_PER_POLICY and not facts.groups_partial:  # a partial list counts nothing
            raise AzureCompileError(f"{where} would hold {total} rule collection groups, over {MAX_RCGS_PER_POLICY} ({facts.source('groups')}). "
                                    "Fix: use another policy")
    if facts.base_policy_id is None:
        advisories.append(f"base policy of {where}: not read offline; a Deny in a base policy's rules would win over this stack's "
                          f"rules: {_DECLARE['base_policy_id']}")
    elif facts.base_policy_id != NO_BASE_POLICY and facts.parent_groups is None:
        advisories.append(f"rules of the base policy {facts.base_policy_id} of {where}: not read offline; a Deny in them would win over "
                          f"this stack's rules: {_DECLARE['parent_groups']}")
    if facts.parent_groups:
        _check_parent(plan, facts, list(requirements), tag_members or {})
    return advisories


def disagreements(declared: ExistingPolicy, read: ExistingPolicy, plan: AzurePlan) -> list[str]:
    """Online: each declared fact the read contradicts. The read is judged; the declaration misleads offline previews."""
    ours = {g.name for g in plan.groups}
    lines = []
    for fact, label in FACTS.items():
        said, found = getattr(declared, fact), getattr(read, fact)
        if fact not in declared.sources or found is None:
            continue
        if fact == "groups":
            named = None if declared.groups_partial else {n: p for n, p in said.items() if not n.startswith(UNNAMED)}
            mismatch = group_mismatch(named, {p for n, p in said.items() if n.startswith(UNNAMED)}, found, ours)
            said, found = ({n: p for n, p in said.items() if n not in ours}, {n: p for n, p in found.items() if n not in ours})
            if not any(mismatch):
                continue
            if declared.groups_partial:  # only the priorities were declared: say those, not a complete list
                lines.append(f"{label} of Firewall Policy {plan.policy.existing_id}: {declared.source(fact)} says groups at "
                             f"{', '.join(str(p) for p in mismatch[2])}, but the policy as read has none there: the policy as read is judged. "
                             "Fix: correct the declaration (offline previews judge by it)")
                continue
        if fact == "base_policy_id" and isinstance(said, str) and isinstance(found, str):
            same = said.lower() == found.lower()
        else:
            same = said == found
        if not same:
            lines.append(f"{label} of Firewall Policy {plan.policy.existing_id}: {declared.source(fact)} says {_said(fact, said)}, "
                         f"but the policy as read has {_said(fact, found)}: the policy as read is judged. Fix: correct the "
                         "declaration (offline previews judge by it)")
    return lines


def group_mismatch(named: Optional[Mapping[str, int]], unnamed: set[int], found: Mapping[str, int],
                   ours: set[str]) -> tuple[list[str], list[str], list[int]]:
    """Where declared groups and a complete list of the policy's groups disagree: (declared names missing from the list
    or at another priority, names in the list not declared, unnamed priorities no group in the list holds). The
    stack's own groups are left out (on the policy after its first update, declared or not); a priority declared without
    its name matches any group at it; ``named`` None: only priorities were declared (a partial list: nothing else is
    compared)."""
    found = {n: p for n, p in found.items() if n not in ours}
    missing = sorted(p for p in unnamed if p not in set(found.values()))
    if named is None:
        return [], [], missing
    said = {n: p for n, p in named.items() if n not in ours}
    wrong = sorted(n for n, p in said.items() if found.get(n) != p)
    extra = sorted(n for n, p in found.items() if n not in said and p not in unnamed)
    return wrong, extra, missing


def _said(fact: str, value: Any) -> str:
    if fact == "dns_proxy":
        return "it on" if value else "it off"
    if fact == "parent_groups":
        return f"{len(value)} group(s) of rules" + (" (different rules)" if value else "")
    if fact == "groups":
        return ", ".join(f"{_group(n)} {p}" for n, p in sorted(value.items(), key=lambda kv: (kv[1], kv[0]))) or "no other groups"
    return str(value)


def judge_existing_policy(plan: AzurePlan, declared: ExistingPolicy, facts: ExistingPolicy, requirements: Iterable[Requirement],
                          tag_members: Optional[Mapping[str, set[str]]] = None) -> tuple[list[str], list[str]]:
    """The one judgement of an existing policy, online (``facts`` read) and offline (``facts`` is ``declared``):
    (lines saying each fact and where it came from, warnings: declarations the read contradicts, facts not read).
    Raises AzureCompileError where a known fact refuses the stack."""
    notes = [f"hub policy {plan.policy.name}: {line}" for line in fact_lines(facts)]
    warnings = disagreements(declared, facts, plan) if facts is not declared else []
    return notes, warnings + check_existing_policy(plan, facts, requirements, tag_members)


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
                                f"attach to a policy whose parent does not deny them (its rules: {facts.source('parent_groups')})")
