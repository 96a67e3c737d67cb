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
    ip_sets = {s["key"]: {"Definition": list(s["ipSet"]["definitions"])} for s in (group.get("ruleVariables") or {}).get("ipSets", [])}
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
                                        for ref in document.get("statefulRuleGroupReferences", [])],
        "StatefulDefaultActions": list(document.get("statefulDefaultActions", [])),
        "StatefulEngineOptions": {"RuleOrder": engine.get("ruleOrder"), "StreamExceptionPolicy": engine.get("streamExceptionPolicy")}}}


def priorities(resources: list[DeployedResource]) -> dict[str, Optional[int]]:
    """Logical rule-group name -> its priority in the stack's firewall policy (None: not referenced by one)."""
    # An ARN a preview does not know yet (a rule group created by this update) joins nothing: that group keeps its slot.
    by_arn = {r.props.get("arn"): r.name for r in of_type(resources, RULE_GROUP_TYPE) if r.props.get("arn") not in (None, UNKNOWN)}
    found: dict[str, Optional[int]] = {r.name: None for r in of_type(resources, RULE_GROUP_TYPE)}
    for policy in of_type(resources, POLICY_TYPE):
        for ref in (policy.props.get("firewallPolicy") or {}).get("statefulRuleGroupReferences") or []:
            if ref.get("resourceArn") in by_arn and ref.get("priority") != UNKNOWN:
                found[by_arn[ref["resourceArn"]]] = int(ref.get("priority"))
    return found


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


def security_group_document(resources: list[DeployedResource]) -> dict[str, Any]:
    groups = []
    for group in sorted(of_type(resources, SECURITY_GROUP_TYPE), key=lambda g: g.name):
        tags = group.props.get("tags") or {}
        group_id = group.props.get("id")
        # By parent (known at any preview), or by the group's id where both are known: two unknown ids are not a match.
        rules = [r for r in of_type(resources, EGRESS_RULE_TYPE)
                 if r.parent == group.urn or (group_id not in (None, UNKNOWN) and r.props.get("securityGroupId") == group_id)]
        permissions = [permission(rule) for rule in sorted(rules, key=lambda r: r.name)]
        groups.append({"GroupName": tags.get("Name", group.name), "Role": tags.get(ROLE_TAG, ""), "IpPermissionsEgress": permissions})
    return {"SecurityGroups": groups}


def _text(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def artefacts(resources: Iterable[DeployedResource]) -> dict[str, str]:
    resources = list(resources)
    files: dict[str, str] = {}
    groups = of_type(resources, RULE_GROUP_TYPE)
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
