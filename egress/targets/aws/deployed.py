"""Deployed AWS resources back into the artefacts ``render`` writes (request bodies, the rules the engine runs, the
security groups), for the evaluator (policy pack, preview).

Rule groups are ordered by the priorities the stack's own firewall policy gives them; without one (an existing
policy references them), the priorities the program exported are not something a pack can see, so each group's fixed
slot by kind and role (read from its logical name; priorities.py) stands in: the same order, whatever awsPriorityBase.
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Optional

from ...deployed import UNKNOWN, DeployedResource, of_type
from .evaluate import POLICY_FILE, RULES_FILE, SECURITY_GROUPS_FILE
from .priorities import MAX_OFFSET, offset_of_name
from .render import engine_rules

RULE_GROUP_TYPE = "aws:networkfirewall/ruleGroup:RuleGroup"
POLICY_TYPE = "aws:networkfirewall/firewallPolicy:FirewallPolicy"
SECURITY_GROUP_TYPE = "aws:ec2/securityGroup:SecurityGroup"
EGRESS_RULE_TYPE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
ROLE_TAG = "egress-matrix:role"


def rule_group_body(resource: DeployedResource) -> dict[str, Any]:
    """A RuleGroup's inputs as the CreateRuleGroup body render writes (named by its logical name, as the plan is)."""
    props = resource.props
    group = props.get("ruleGroup") or {}
    source = group.get("rulesSource") or {}
    if source.get("rulesSourceList"):
        listed = source["rulesSourceList"]
        rules_source: dict[str, Any] = {"RulesSourceList": {"Targets": list(listed.get("targets", [])), "TargetTypes": list(listed.get("targetTypes", [])),
                                                            "GeneratedRulesType": listed.get("generatedRulesType")}}
    else:
        rules_source = {"RulesString": source.get("rulesString", "")}
    ip_sets = {s["key"]: {"Definition": list(s["ipSet"]["definitions"])}
               for s in sorted((group.get("ruleVariables") or {}).get("ipSets", []), key=lambda s: s["key"])}  # by name, as render
    return {"RuleGroupName": resource.name, "Type": props.get("type"), "Capacity": props.get("capacity"), "Description": props.get("description", ""),
            "RuleGroup": {"RuleVariables": {"IPSets": ip_sets}, "RulesSource": rules_source,
                          "StatefulRuleOptions": {"RuleOrder": (group.get("statefulRuleOptions") or {}).get("ruleOrder")}}}


def _policy_body(policy: DeployedResource) -> dict[str, Any]:
    document = policy.props.get("firewallPolicy") or {}
    engine = document.get("statefulEngineOptions") or {}
    return {"FirewallPolicyName": policy.props.get("name") or policy.name, "Description": policy.props.get("description", ""), "FirewallPolicy": {
        "StatelessDefaultActions": list(document.get("statelessDefaultActions", [])),
        "StatelessFragmentDefaultActions": list(document.get("statelessFragmentDefaultActions", [])),
        "StatefulRuleGroupReferences": [{"ResourceArn": ref.get("resourceArn"), "Priority": ref.get("priority")}
                                        for ref in _list(document.get("statefulRuleGroupReferences")) if isinstance(ref, dict)],
        "StatefulDefaultActions": list(document.get("statefulDefaultActions", [])),
        "StatefulEngineOptions": {"RuleOrder": engine.get("ruleOrder"), "StreamExceptionPolicy": engine.get("streamExceptionPolicy")}}}


def _list(value: Any) -> list:
    """A list as given; [] for nothing, or for a set a preview does not know yet (the bridge may show it whole unknown)."""
    return value if isinstance(value, list) else []


def priorities(resources: list[DeployedResource]) -> dict[str, Optional[int]]:
    """Logical rule-group name -> its priority in the stack's firewall policy (None: not referenced by one)."""
    # An ARN a preview does not know yet (a rule group created by this update) joins nothing: that group keeps its slot.
    by_arn = {r.props.get("arn"): r.name for r in of_type(resources, RULE_GROUP_TYPE) if r.props.get("arn") not in (None, UNKNOWN)}
    found: dict[str, Optional[int]] = {r.name: None for r in of_type(resources, RULE_GROUP_TYPE)}
    for policy in of_type(resources, POLICY_TYPE):
        for ref in _list((policy.props.get("firewallPolicy") or {}).get("statefulRuleGroupReferences")):
            if isinstance(ref, dict) and ref.get("resourceArn") in by_arn and isinstance(ref.get("priority"), int):
                found[by_arn[ref["resourceArn"]]] = int(ref.get("priority"))
    return found


def group_of_rule(rule: DeployedResource, groups: list[DeployedResource]) -> Optional[DeployedResource]:
    """The security group a rule is written to: the one whose id its ``securityGroupId`` is (what AWS acts on), or,
    when that id is not known yet (a preview), the one the engine says it was computed from (propertyDependencies);
    by its parent only where neither is there to tell."""
    target = rule.props.get("securityGroupId")
    if target not in (None, UNKNOWN):
        return next((g for g in groups if g.props.get("id") not in (None, UNKNOWN) and g.props.get("id") == target), None)
    sources = [g for g in groups if g.urn in rule.depends_through("securityGroupId")]
    if sources:
        return sources[0] if len(sources) == 1 else None
    return next((g for g in groups if g.urn == rule.parent), None)


def rules_of_group(group: DeployedResource, resources: list[DeployedResource]) -> list[DeployedResource]:
    groups = of_type(resources, SECURITY_GROUP_TYPE)
    return [r for r in of_type(resources, EGRESS_RULE_TYPE) if group_of_rule(r, groups) is group]


def misplaced_rules(resources: list[DeployedResource]) -> list[tuple[DeployedResource, str]]:
    """Rules whose group is not the parent they are registered under (or is no group of the stack): what the
    components write, and what the nodes carry, then differ."""
    groups = of_type(resources, SECURITY_GROUP_TYPE)
    out = []
    for rule in of_type(resources, EGRESS_RULE_TYPE):
        group = group_of_rule(rule, groups)
        if group is None:
            out.append((rule, "its securityGroupId is no security group of this stack"))
        elif rule.parent and rule.parent != group.urn and any(g.urn == rule.parent for g in groups):
            out.append((rule, f"it is written to {group.name} but registered under {rule.parent.rsplit('::', 1)[-1]}"))
    return out


def permission(rule: DeployedResource) -> dict[str, Any]:
    """A SecurityGroupEgressRule as the IpPermissionsEgress entry render writes."""
    p = rule.props
    v6 = bool(p.get("cidrIpv6"))
    ranges_key, cidr_key = ("Ipv6Ranges", "CidrIpv6") if v6 else ("IpRanges", "CidrIp")
    cidr = p.get("cidrIpv6") if v6 else p.get("cidrIpv4")
    out: dict[str, Any] = {"IpProtocol": str(p.get("ipProtocol")), ranges_key: [{cidr_key: cidr, "Description": p.get("description", "")}]}
    if str(p.get("ipProtocol")) != "-1":
        out.update(FromPort=p.get("fromPort"), ToPort=p.get("toPort"))
    return out


FORWARD = "aws:forward_to_sfe"
DROPPING = ("aws:drop_established", "aws:drop_strict")


def default_action_findings(policy: DeployedResource) -> list[str]:
    """What a Network Firewall policy's default actions open whatever its rule groups say: a stateless default other
    than forwarding to the stateful engine decides every packet before any rule group is read (``aws:pass``: all
    pass), stateless rule groups decide before the stateful ones (not judged here), and a stateful default without a
    drop passes every flow no rule drops."""
    document = policy.props.get("firewallPolicy") or {}
    out = []
    for key in ("statelessDefaultActions", "statelessFragmentDefaultActions"):
        actions = document.get(key)
        if isinstance(actions, list) and "aws:pass" in actions:
            out.append(f"firewall policy {policy.name}: {key} {actions} pass every {'fragment' if 'Fragment' in key else 'packet'} "
                       "before any rule group is read")
    if document.get("statelessRuleGroupReferences") not in (None, [], UNKNOWN):
        out.append(f"firewall policy {policy.name}: stateless rule groups decide flows before the stateful rules, and are not judged")
    stateful = document.get("statefulDefaultActions")
    if isinstance(stateful, list) and not set(stateful) & set(DROPPING):
        out.append(f"firewall policy {policy.name}: statefulDefaultActions {stateful} drop nothing: every flow no rule drops passes")
    return out


def referenced_rule_groups(policy: DeployedResource, resources: list[DeployedResource]) -> tuple[list[DeployedResource], list[str], bool]:
    """(the stack's rule groups ``policy`` references, the ARNs it references that are no group of the stack, whether
    which groups it references is open). An ARN a preview does not know yet is told by the engine's propertyDependencies:
    the groups the policy document was computed from."""
    groups = of_type(resources, RULE_GROUP_TYPE)
    by_arn = {str(g.props.get("arn")): g for g in groups if g.props.get("arn") not in (None, UNKNOWN)}
    refs = (policy.props.get("firewallPolicy") or {}).get("statefulRuleGroupReferences") or []
    found: list[DeployedResource] = []
    foreign: list[str] = []
    unknown = 0
    for ref in refs if isinstance(refs, list) else []:
        arn = ref.get("resourceArn") if isinstance(ref, dict) else UNKNOWN
        if arn in (None, UNKNOWN):
            unknown += 1
        elif str(arn) in by_arn:
            found.append(by_arn[str(arn)])
        else:
            foreign.append(str(arn))
    if unknown:
        candidates = [g for g in groups if g.urn in policy.depends_through("firewallPolicy") and g not in found]
        if len(candidates) != unknown:
            return found, foreign, True
        found += candidates
    return found, foreign, refs == UNKNOWN


def security_group_document(resources: list[DeployedResource]) -> dict[str, Any]:
    groups = []
    for group in sorted(of_type(resources, SECURITY_GROUP_TYPE), key=lambda g: g.name):
        tags = group.props.get("tags") or {}
        rules = rules_of_group(group, resources)
        permissions = [permission(rule) for rule in sorted(rules, key=lambda r: r.name)]
        groups.append({"GroupName": tags.get("Name", group.name), "Role": tags.get(ROLE_TAG, ""), "IpPermissionsEgress": permissions})
    return {"SecurityGroups": groups}


def _text(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def artefacts(resources: Iterable[DeployedResource]) -> dict[str, str]:
    resources = list(resources)
    files: dict[str, str] = {}
    groups = of_type(resources, RULE_GROUP_TYPE)
    stack_policies = of_type(resources, POLICY_TYPE)
    if stack_policies:  # only what the stack's policy references runs (which is open: unknowns.py says so)
        referenced, _, open_ = referenced_rule_groups(stack_policies[0], resources)
        if not open_:
            groups = [g for g in groups if g in referenced]
    order = priorities(resources)
    # Not referenced by the stack's policy: its slot above the default base; a name the compiler does not give, after them all.
    for position, name in enumerate(sorted(name for name, found in order.items() if found is None)):
        slot = offset_of_name(name)
        order[name] = 100 + (slot if slot is not None else MAX_OFFSET + 100 * (position + 1))
    bodies = []
    for group in sorted(groups, key=lambda g: (order[g.name], g.name)):
        body = rule_group_body(group)
        files[f"aws/rule-groups/{group.name}.json"] = _text(body)
        bodies.append((order[group.name], body))
    if bodies:
        files[RULES_FILE] = engine_rules(bodies)
    policies = of_type(resources, POLICY_TYPE)
    if policies:
        files[POLICY_FILE] = _text(_policy_body(policies[0]))
    if of_type(resources, SECURITY_GROUP_TYPE):
        files[SECURITY_GROUPS_FILE] = _text(security_group_document(resources))
    return files
