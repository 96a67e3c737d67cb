"""One write judged before it happens: a resource that carries rules, against the requirements it is responsible for.

The engine runs stack policies only after every step was executed (reference/pulumi.md §1.4), so at ``pulumi up`` only
a resource policy, judging one resource's checked inputs, can stop a broken rule collection group, rule group,
security-group rule or squid.conf from being written. Which requirements a resource is responsible for is told by
substitution: the stack's own plan (compiled here from the stack's config, as the pack does, never read from the
program) is rendered, this resource's artefact put in place of the plan's, and the target judged both ways. What the
plan allows and the substituted artefacts do not is this write's to answer for; what they open beyond the plan, too.
A resource whose artefact equals the plan's answers for nothing and is not evaluated.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..deployed import DeployedResource
from ..flows import judge
from ..models import Catalog, Requirement
from ..profile import Profile
from .allows import target_allows
from .aws.deployed import EGRESS_RULE_TYPE, POLICY_TYPE as AWS_POLICY_TYPE, RULE_GROUP_TYPE, default_action_findings, permission
from .aws.deployed import rule_group_body as deployed_rule_group_body
from .aws.evaluate import RULES_FILE, SECURITY_GROUPS_FILE
from .aws.plan import AwsPlan, rule_resource_name
from .aws.priorities import MAX_OFFSET, offset_of_name
from .aws.render import engine_rules
from .azure.deployed import IP_GROUP_TYPE, RCG_TYPE, rcg_body as deployed_rcg_body
from .azure.plan import AzurePlan, ip_group_id
from .azure.render import plan_bodies
from .guard import accepted_flows, limits_of
from .kubernetes.evaluate import SQUID_CONF
from .unknowns import NEEDED

CONFIG_MAP_TYPE = "kubernetes:core/v1:ConfigMap"
WRITTEN_TYPES = (RCG_TYPE, IP_GROUP_TYPE, RULE_GROUP_TYPE, AWS_POLICY_TYPE, EGRESS_RULE_TYPE, CONFIG_MAP_TYPE)
_CANONICAL = "/egress/ip-groups/"  # IP Groups the stack creates, by name: their real ids (subscription) do not matter here


@dataclass(frozen=True)
class WriteVerdict:
    target: str
    missing: tuple[str, ...] = ()  # requirements the plan allows and this write would not
    extra: tuple[str, ...] = ()  # flows this write allows beyond what the plan allows
    open: tuple[str, ...] = ()  # breadth findings this write brings
    foreign: str = ""  # the resource is not one the stack's plan has: nothing it carries is judged as the stack's


def _text(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


# --- Azure ---------------------------------------------------------------------------------------------------------

def _azure_names(plan: AzurePlan) -> Callable[[str], Optional[str]]:
    """Which IP Group the stack creates a rule's reference (case-folded) names, by its canonical name, or None. With
    the subscription known, only its constructed id; without, its name in the stack's resource group (a group of the
    same name elsewhere is another group)."""
    names = {plan.ip_group_name(role).lower() for role in plan.ip_groups}
    group = (plan.resource_group or "").lower()
    ids = ({ip_group_id(plan.subscription_id, plan.resource_group, name).lower(): name for name in names}
           if plan.subscription_id and plan.resource_group else None)

    def created(ref: str) -> Optional[str]:
        if ids is not None:
            return ids.get(ref)
        parts = ref.split("/")
        in_group = not group or ("resourcegroups" in parts and parts[parts.index("resourcegroups") + 1:][:1] == [group])
        return parts[-1] if parts[-1] in names and in_group else None
    return created


def _canonical(ref: str, created: Callable[[str], Optional[str]]) -> str:
    name = created(ref.lower())
    return f"{_CANONICAL}{name}" if name else ref


def _canonical_ids(body: dict[str, Any], created: Callable[[str], Optional[str]]) -> dict[str, Any]:
    for collection in body["properties"]["ruleCollections"] or []:
        for rule in collection.get("rules") or []:
            for key in ("sourceIpGroups", "destinationIpGroups"):
                if isinstance(rule.get(key), list):
                    rule[key] = [_canonical(str(i), created) if not str(i).startswith(_CANONICAL) else i for i in rule[key]]
    return body


def _azure_planned(plan: AzurePlan) -> dict[str, str]:
    ids = {role: f"{_CANONICAL}{plan.ip_group_name(role).lower()}" for role in plan.ip_groups}
    created = _azure_names(plan)
    files = {}
    for body in plan_bodies(plan, ids):
        resource = DeployedResource(RCG_TYPE, body["name"], "", {"ruleCollectionGroupName": body["name"], **body["properties"]})
        files[f"azure/{body['name']}.json"] = _text(_canonical_ids(deployed_rcg_body(resource), created))
    for role in sorted(plan.ip_groups):
        name = plan.ip_group_name(role)
        files[f"azure/ip-groups/{name}.json"] = _text({"id": ids[role], "name": name, "properties": {"ipAddresses": list(plan.ip_groups[role])}})
    return files


def _azure_substitute(plan: AzurePlan, files: dict[str, str], resource: DeployedResource) -> dict[str, str]:
    if resource.type == RCG_TYPE:
        body = _canonical_ids(deployed_rcg_body(resource), _azure_names(plan))
        return {**files, f"azure/{body['name']}.json": _text(body)}
    name = str(resource.props.get("ipGroupsName") or resource.name)
    return {**files, f"azure/ip-groups/{name}.json": _text({"id": f"{_CANONICAL}{name.lower()}", "name": name,
                                                            "properties": {"ipAddresses": list(resource.props.get("ipAddresses") or [])}})}


# --- AWS -----------------------------------------------------------------------------------------------------------

def _aws_priorities(plan: AwsPlan, names: list[str]) -> dict[str, int]:
    given = {g.name: g.priority for g in plan.rule_groups}
    base = min(given.values(), default=100)
    return {n: given.get(n, base + (offset_of_name(n) if offset_of_name(n) is not None else MAX_OFFSET + 100)) for n in names}


def _aws_substitute(plan: AwsPlan, files: dict[str, str], resource: DeployedResource) -> dict[str, str]:
    out = dict(files)
    if resource.type == RULE_GROUP_TYPE:
        out[f"aws/rule-groups/{resource.name}.json"] = _text(deployed_rule_group_body(resource))
        bodies = {path.rsplit("/", 1)[-1][:-len(".json")]: json.loads(text) for path, text in out.items() if path.startswith("aws/rule-groups/")}
        order = _aws_priorities(plan, list(bodies))
        out[RULES_FILE] = engine_rules((order[name], body) for name, body in bodies.items())
        return out
    document = json.loads(files[SECURITY_GROUPS_FILE])
    group_index, rule_index = _planned_rule(plan, resource)  # by its logical name: the plan's rule it stands for
    entries = document["SecurityGroups"][group_index]["IpPermissionsEgress"]
    if entries[rule_index] != permission(resource):  # the same rule (keys in another order) leaves the plan's text as it is
        entries[rule_index] = permission(resource)
        out[SECURITY_GROUPS_FILE] = _text(document)
    return out


def _planned_rule(plan: AwsPlan, resource: DeployedResource) -> tuple[int, int]:
    for group_index, group in enumerate(plan.security_groups):
        for rule_index, rule in enumerate(group.rules):
            if rule_resource_name(group.name, rule) == resource.name:
                return group_index, rule_index
    raise LookupError(resource.name)


def _moved(plan: AzurePlan, resource: DeployedResource) -> str:
    """Where an RCG's inputs put it, when that is not the plan's policy ('' when it is, or cannot be told: the created
    policy's name is the provider's autoname, known only once it exists)."""
    policy = plan.policy
    group = policy.resource_group if policy.existing_id else plan.resource_group
    given_group, given_name = resource.props.get("resourceGroupName"), resource.props.get("firewallPolicyName")
    if isinstance(given_group, str) and group and given_group.lower() != group.lower():
        return f"resource group {given_group} (the plan's: {group})"
    if policy.existing_id and policy.name and isinstance(given_name, str) and given_name.lower() != policy.name.lower():
        return f"policy {given_name} (the plan's: {policy.name})"
    return ""


def foreign(target: str, plan: Any, files: dict[str, str], resource: DeployedResource) -> str:
    """Why ``resource`` is not one of the plan's rule carriers ('' when it is). A program registers exactly the plan's;
    another (a renamed group, a decoy, a rule under another group) would carry rules no requirement answers for, or stand
    where the plan's should, so it is refused rather than judged as an addition."""
    unmodelled = _unmodelled(resource)
    if unmodelled:
        return f"{resource.name} is {unmodelled[1]}: the rules it writes are not judged, so it is refused"
    if resource.type == RCG_TYPE:
        name, kind = deployed_rcg_body(resource)["name"], "rule collection group"
        path = f"azure/{name}.json"
        moved = _moved(plan, resource)
        if path in files and moved:
            return f"rule collection group {name} is written to {moved}, not the stack's policy: its rules would guard another firewall"
    elif resource.type == IP_GROUP_TYPE:
        name = str(resource.props.get("ipGroupsName") or resource.name)
        kind, path = "IP Group", f"azure/ip-groups/{name}.json"
    elif resource.type == RULE_GROUP_TYPE:
        name, kind, path = resource.name, "Network Firewall rule group", f"aws/rule-groups/{resource.name}.json"
    elif resource.type == EGRESS_RULE_TYPE:
        try:
            group_index, _ = _planned_rule(plan, resource)
        except LookupError:
            return f"security-group rule {resource.name} is not one the stack's plan has (a rule the matrix does not ask for, or renamed)"
        group = plan.security_groups[group_index].name
        parent = (resource.parent or "").rsplit("::", 1)[-1]
        return "" if parent == group else f"security-group rule {resource.name} belongs to group {group} in the stack's plan, not {parent or '(none)'}"
    else:
        return ""
    return "" if path in files else f"{kind} {name} is not one the stack's plan has (renamed, or not the program's): its rules answer for no requirement"


# --- Kubernetes ----------------------------------------------------------------------------------------------------

def _squid_substitute(files: dict[str, str], resource: DeployedResource) -> dict[str, str]:
    return {**files, SQUID_CONF: str(resource.props["data"]["squid.conf"])}


# Resources that can carry egress rules the pack does not model: refused before they are written, never passed unread.
UNMODELLED = {
    "aws:ec2/securityGroupRule:SecurityGroupRule": ("aws", "an aws:ec2/securityGroupRule (the stack writes aws:vpc/securityGroupEgressRule "
                                                    "resources, which the pack judges)"),
    "aws:ec2/securityGroup:SecurityGroup": ("aws", "a security group with inline egress or ingress rules (the stack's groups carry "
                                            "none; their rules are separate resources the pack judges)"),
    "kubernetes:core/v1:ConfigMapPatch": ("kubernetes", "a patch of a squid.conf (the pack judges the egress proxy's own ConfigMap)"),
}


def _unmodelled(resource: DeployedResource) -> Optional[tuple[str, str]]:
    found = UNMODELLED.get(resource.type)
    if found is None:
        return None
    if resource.type == "aws:ec2/securityGroup:SecurityGroup" and not (resource.props.get("egress") or resource.props.get("ingress")):
        return None
    data = resource.props.get("data")
    if resource.type.startswith("kubernetes:") and not (isinstance(data, dict) and "squid.conf" in data):
        return None
    return found


def carries_rules(resource: DeployedResource) -> Optional[str]:
    """The target whose rules ``resource`` carries, or None."""
    if _unmodelled(resource):
        return _unmodelled(resource)[0]  # type: ignore[index]
    if resource.type in (RCG_TYPE, IP_GROUP_TYPE):
        return "azure"
    if resource.type in (RULE_GROUP_TYPE, AWS_POLICY_TYPE, EGRESS_RULE_TYPE):
        return "aws"
    data = resource.props.get("data") if resource.type == CONFIG_MAP_TYPE else None
    return "kubernetes" if isinstance(data, dict) and "squid.conf" in data else None


def substitute(target: str, plan: Any, files: dict[str, str], resource: DeployedResource) -> dict[str, str]:
    """The plan's artefacts with ``resource``'s own in place of the plan's."""
    if target == "azure":
        return _azure_substitute(plan, files, resource)
    if target == "aws":
        return _aws_substitute(plan, files, resource)
    return _squid_substitute(files, resource)


def planned(target: str, plan: Any, render: Callable[[Any], dict[str, str]]) -> dict[str, str]:
    """The plan's artefacts, Azure's with IP Groups by name (the ids a resource carries depend on the subscription)."""
    return _azure_planned(plan) if target == "azure" else render(plan)


@dataclass
class StackPlan:
    """One stack's plan per target, rendered and judged once (the pack judges each resource against it)."""

    catalog: Catalog
    profile: Profile
    plans: dict[str, Any]
    files: dict[str, dict[str, str]]
    enforced: dict[str, list[Requirement]]
    evaluate: dict[str, Callable[..., Any]]
    _base: dict[str, tuple] = None  # type: ignore[assignment]
    _writes: dict[tuple, Optional[WriteVerdict]] = None  # type: ignore[assignment]

    def base(self, target: str) -> tuple:
        if self._base is None:
            self._base = {}
        if target not in self._base:
            self._base[target] = self._judge(target, self.files[target])
        return self._base[target]

    def _judge(self, target: str, files: dict[str, str]) -> tuple:
        verdict = self.evaluate[target](files, self.enforced[target], self.catalog)
        found = judge(target_allows(target, files, self.profile), limits_of(self.profile), accepted_flows(self.catalog, self.enforced[target]))
        return tuple(verdict.missing), tuple(verdict.extra), tuple(found)

    def judge_write(self, resource: DeployedResource) -> Optional[WriteVerdict]:
        """What writing ``resource`` would break or open, against the plan; None when it carries no rules of an enforced
        target, or when a field it needs is not known yet (a preview: the stack policies judge it with the engine's
        propertyDependencies, and this policy at `up`, where inputs are always known). Judged once for the three
        policies that report on it."""
        key = (resource.type, resource.name, resource.parent, json.dumps(resource.props, sort_keys=True, default=str))
        if self._writes is None:
            self._writes = {}
        if key not in self._writes:
            self._writes[key] = self._judge_write(resource)
        return self._writes[key]

    def _judge_write(self, resource: DeployedResource) -> Optional[WriteVerdict]:
        target = carries_rules(resource)
        if target not in self.plans or resource.unknown_under(*NEEDED.get(resource.type, ())):
            return None
        if resource.type == AWS_POLICY_TYPE:  # its rule groups are judged one by one; what its defaults open, here
            return WriteVerdict(target, open=tuple(default_action_findings(resource)))
        files = self.files[target]
        refused = foreign(target, self.plans[target], files, resource)
        if refused:
            return WriteVerdict(target, foreign=refused)
        changed = substitute(target, self.plans[target], files, resource)
        if changed == files:
            return WriteVerdict(target)
        missing, extra, found = self._judge(target, changed)
        base_missing, base_extra, base_found = self.base(target)
        return WriteVerdict(target, tuple(m for m in missing if m not in base_missing), tuple(e for e in extra if e not in base_extra),
                            tuple(f for f in found if f not in base_found))
