"""Deployed Azure resources back into the artefacts ``render`` writes, for the evaluator (policy pack, preview).

A rule collection group's ``ruleCollections`` input is the REST body as-is (the component passes it verbatim), so the
body is rebuilt from the resource alone; IP Groups the stack creates come back with their ids, so their addresses are
known. Groups or IP Groups that live outside the stack are not resources here: the evaluator reports what it assumes.
"""
from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Iterable, Optional

from ...deployed import UNKNOWN, DeployedResource, of_type

RCG_TYPE = "azure-native:network:FirewallPolicyRuleCollectionGroup"
IP_GROUP_TYPE = "azure-native:network:IpGroup"
POLICY_TYPE = "azure-native:network:FirewallPolicy"


IP_GROUP_FIELDS = ("sourceIpGroups", "destinationIpGroups")
NOT_CREATED = "(the policy this stack creates; not created yet)"


def _known(value: Any) -> Optional[str]:
    return str(value) if value and value != UNKNOWN else None


def rcg_name(resource: DeployedResource) -> str:
    return str(_known(resource.props.get("ruleCollectionGroupName")) or _known(resource.props.get("name")) or resource.name)


def policy_of(resource: DeployedResource) -> str:
    """The Firewall Policy an RCG belongs to, as resource group/policy name: from its inputs (a plan, a resource policy)
    or, in outputs, which carry no path parameters, from its ARM id (case-folded: ARM ids are case-insensitive). Unknown
    until the policy and the group exist on a first deployment."""
    group, policy = _known(resource.props.get("resourceGroupName")), _known(resource.props.get("firewallPolicyName"))
    if group and policy:
        return f"{group}/{policy}".lower()
    parts = str(_known(resource.props.get("id")) or "").split("/")
    lowered = [p.lower() for p in parts]
    if "resourcegroups" in lowered and "firewallpolicies" in lowered:
        return f"{parts[lowered.index('resourcegroups') + 1]}/{parts[lowered.index('firewallpolicies') + 1]}".lower()
    return NOT_CREATED


def policy_keys(resources: Iterable[DeployedResource]) -> dict[str, str]:
    """URN of each RCG -> its policy (policy_of). Where a preview cannot tell (an update step: outputs carry no path
    parameters and the id is unknown), from the policy it was computed from (propertyDependencies of
    firewallPolicyName, a FirewallPolicy of the stack whose id is known), else the one policy the stack's other groups
    are on: a program puts all its groups on one policy, and an unknown must not split them (two "unchained" groups, a
    clash of priorities unseen)."""
    resources = list(resources)
    policies = {r.urn: r for r in of_type(resources, POLICY_TYPE)}
    keys = {}
    for group in of_type(resources, RCG_TYPE):
        key = policy_of(group)
        if key == NOT_CREATED:
            for urn in group.depends_through("firewallPolicyName"):
                if urn in policies:
                    key = policy_of(DeployedResource(RCG_TYPE, "", "", {"id": policies[urn].props.get("id")}))
        keys[group.urn] = key
    known = {k for k in keys.values() if k != NOT_CREATED}
    if len(known) == 1:
        keys = {urn: (next(iter(known)) if key == NOT_CREATED else key) for urn, key in keys.items()}
    return keys


def _ids_folded(collections: Any) -> Any:
    """The rule collections with every IP Group id case-folded: ARM ids are case-insensitive, and the ids in rules and
    the ids of the groups may differ in case (a user's spelling, the service's)."""
    if not isinstance(collections, list):
        return collections
    out = []
    for collection in collections:
        if not isinstance(collection, dict):
            out.append(collection)
            continue
        rules = [{**rule, **{k: [str(i).lower() for i in rule[k]] for k in IP_GROUP_FIELDS if isinstance(rule.get(k), list)}}
                 if isinstance(rule, dict) else rule for rule in collection.get("rules") or []]
        out.append({**collection, "rules": rules})
    return out


def rcg_body(resource: DeployedResource) -> dict[str, Any]:
    return {"name": rcg_name(resource), "properties": {"priority": resource.props.get("priority"),
                                                      "ruleCollections": _ids_folded(resource.props.get("ruleCollections", []))}}


def referenced_ip_groups(resources: Iterable[DeployedResource]) -> set[str]:
    """Every IP Group id the RCGs reference, case-folded."""
    found: set[str] = set()
    for group in of_type(resources, RCG_TYPE):
        for collection in group.props.get("ruleCollections") or []:
            for rule in (collection.get("rules") or []) if isinstance(collection, dict) else []:
                for key in IP_GROUP_FIELDS:
                    found.update(str(i).lower() for i in (rule.get(key) or []) if isinstance(rule, dict) and i != UNKNOWN)
    return found


def _labels(group: DeployedResource) -> tuple[tuple[str, ...], bool]:
    """The '-' labels an IP Group's name is taken to end with, and whether all of them must match: the role or source
    group the component names it after (its logical name is '<component>-<role or group>', the group 'egress-<cluster>-<it>')
    where its parent is known, else its whole logical name, any trailing part of which may match."""
    parent = group.parent.rsplit("::", 1)[-1] if group.parent else ""
    name = group.name.lower()
    if parent and name.startswith(f"{parent.lower()}-"):
        return tuple(name[len(parent) + 1:].split("-")), True
    return tuple(name.split("-")), False


def _score(labels: tuple[tuple[str, ...], bool], ref: str) -> int:
    """How many trailing labels of the referenced IP Group's name match (0: none, or not all that must)."""
    wanted, whole = labels
    name = ref.rsplit("/", 1)[-1].split("-")
    shared = 0
    while shared < min(len(wanted), len(name) - 1) and wanted[-1 - shared] == name[-1 - shared]:
        shared += 1
    return 0 if whole and shared < len(wanted) else shared


def _paired_by_name(groups: list[DeployedResource], refs: dict[str, set[str]]) -> dict[str, str]:
    """Groups with no known name or id, each paired with an open reference (among ``refs[urn]``, those it may be): in
    rounds, every group whose one best match has that group as its own one best match, until no pair is certain. A group
    after 'nodes' and one after 'gpu-nodes' each get their own; where two fit equally well (a cluster 'dev' with groups
    'nodes' and 'dev-nodes': 'egress-dev-dev-nodes' reads both ways) neither is paired: left unjudged, never mixed up."""
    scores = {g.urn: {r: _score(_labels(g), r) for r in refs[g.urn]} for g in groups}

    def best(candidates: dict[str, int]) -> Optional[str]:
        top = max(candidates.values(), default=0)
        winners = [k for k, v in candidates.items() if v == top]
        return winners[0] if top and len(winners) == 1 else None

    pairs: dict[str, str] = {}
    while True:
        found = {urn: ref for urn, by_ref in scores.items() if (ref := best(by_ref)) is not None
                 and best({u: s[ref] for u, s in scores.items() if ref in s}) == urn}
        if not found:
            return pairs
        pairs.update(found)
        scores = {urn: {r: v for r, v in by_ref.items() if r not in found.values()} for urn, by_ref in scores.items() if urn not in found}


def ip_group_keys(resources: Iterable[DeployedResource]) -> dict[str, list[str]]:
    """URN of each IP Group -> the (case-folded) ids the rules reference it by; empty where that cannot be told yet.
    A known id is itself. A reference resolved through propertyDependencies is the group's URN
    (``resolve_ip_group_references``). On a first deployment (or an update of the group) a preview does not know a
    group's id, while the rules carry the id the program constructs (subscription, resource group, name): such a group
    is also paired with the one referenced id no known group has, by its name where known, else by the role or source
    group both names end with (the component names each group after it: ``_paired_by_name``)."""
    resources = list(resources)
    groups = of_type(resources, IP_GROUP_TYPE)
    referenced = referenced_ip_groups(resources)
    keys: dict[str, list[str]] = {}
    for group in groups:
        known_id = (_known(group.props.get("id")) or "").lower()
        keys[group.urn] = [known_id] if known_id else ([group.urn.lower()] if group.urn.lower() in referenced else [])
    open_refs = referenced - {k for found in keys.values() for k in found}
    rcgs = of_type(resources, RCG_TYPE)
    unnamed: dict[str, set[str]] = {}
    for group in (g for g in groups if not _known(g.props.get("id"))):
        # Only ids of rules the engine says were computed from this group (propertyDependencies; where it says nothing,
        # any): a group of the stack nothing references, or one of another subscription by the same name, pairs with none.
        eligible = set().union(*(referenced_ip_groups([r]) for r in rcgs
                                 if not r.depends_through("ruleCollections") or group.urn in r.depends_through("ruleCollections")))
        name = _known(group.props.get("ipGroupsName")) or _known(group.props.get("name"))
        if name:
            candidates = [r for r in open_refs & eligible if r.rsplit("/", 1)[-1] == name.lower()]
            if len(candidates) == 1:
                keys[group.urn].append(candidates[0])
                open_refs.discard(candidates[0])
        else:
            unnamed[group.urn] = eligible
    named_away = {u: refs & open_refs for u, refs in unnamed.items()}
    for urn, ref in _paired_by_name([g for g in groups if g.urn in unnamed], named_away).items():
        keys[urn].append(ref)
    return keys


def resolve_ip_group_references(resources: list[DeployedResource]) -> list[DeployedResource]:
    """RCGs whose rules reference an IP Group by an id the preview does not know yet: where the engine says the rules
    were computed from exactly one IP Group (propertyDependencies), that group's URN stands in for the unknown id."""
    by_urn = {r.urn: r for r in resources}
    out = []
    for resource in resources:
        unknown = [p for p in resource.unknown_under("ruleCollections") if any(f".{k}[" in p for k in IP_GROUP_FIELDS)]
        sources = [u for u in resource.depends_through("ruleCollections") if u in by_urn and by_urn[u].type == IP_GROUP_TYPE]
        if resource.type != RCG_TYPE or not unknown or len(sources) != 1:
            out.append(resource)
            continue
        collections = json.loads(json.dumps(resource.props.get("ruleCollections") or []))
        for collection in collections:
            for rule in collection.get("rules") or []:
                for key in IP_GROUP_FIELDS:
                    if isinstance(rule.get(key), list):
                        rule[key] = [sources[0] if i == UNKNOWN else i for i in rule[key]]
        out.append(replace(resource, props={**resource.props, "ruleCollections": collections},
                           unknowns=tuple(p for p in resource.unknowns if p not in unknown)))
    return out


def _text(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def artefacts(resources: Iterable[DeployedResource]) -> dict[str, str]:
    resources = resolve_ip_group_references(list(resources))
    files = {f"azure/{rcg_name(r)}.json": _text(rcg_body(r)) for r in of_type(resources, RCG_TYPE)}
    keys = ip_group_keys(resources)
    for group in of_type(resources, IP_GROUP_TYPE):
        name = str(_known(group.props.get("ipGroupsName")) or _known(group.props.get("name")) or group.name)
        for index, key in enumerate(keys[group.urn]):  # one file per id the rules know it by
            files[f"azure/ip-groups/{name}{f'.{index}' if index else ''}.json"] = _text(
                {"id": key, "name": name, "properties": {"ipAddresses": list(group.props.get("ipAddresses", []))}})
    return files
