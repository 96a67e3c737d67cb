"""What AWS gets, from an AwsPlan (pure): ``render(plan)`` -> {relative path: text}, exactly as ``egress render`` writes it.

- ``aws/rule-groups/<group>.json``: each CreateRuleGroup request body (botocore's shapes; the tests validate them).
- ``aws/rules.suricata``: what the firewall engine runs, every group in policy order with its IP set variables expanded: the
  rules string of Suricata groups, and for domain lists the rules AWS documents that it generates from a list
  (Network Firewall Developer Guide, suricata-examples: a pass per target, then a drop per target type).
- ``aws/firewall-policy.json``: the CreateFirewallPolicy body when the stack creates the policy, or
  ``aws/rule-group-references.json`` when it names an existing one (what that policy must reference). Rule group ARNs
  exist only once the groups do: the files carry ``arn:aws:network-firewall:<region>:<account>:stateful-rulegroup/<name>``.
- ``aws/security-groups.json``: the groups and their egress rules, as AuthorizeSecurityGroupEgress permissions.
- ``aws/left-out.txt``: the recommended/optional requirements AWS cannot express, left out with why (none: no file).
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Iterable, Mapping

from ..options import left_out_text
from .plan import SID_BASE, SID_SPAN, AwsPlan, RuleGroup, SecurityGroupPlan


def rule_group_body(group: RuleGroup) -> dict[str, Any]:
    """The CreateRuleGroup request for one group (the component passes the same values to the provider)."""
    if group.form == "domain-list":
        source: dict[str, Any] = {"RulesSourceList": {"Targets": list(group.targets), "TargetTypes": [group.target_type],
                                                      "GeneratedRulesType": "ALLOWLIST"}}
    else:
        source = {"RulesString": group.rules_string}
    return {
        "RuleGroupName": group.name, "Type": "STATEFUL", "Capacity": group.capacity, "Description": group.description,
        "RuleGroup": {"RuleVariables": {"IPSets": {name: {"Definition": list(cidrs)} for name, cidrs in group.variables.items()}},
                      "RulesSource": source,
                      "StatefulRuleOptions": {"RuleOrder": "STRICT_ORDER"}},
    }


def rule_group_arn(name: str) -> str:
    return f"arn:aws:network-firewall:<region>:<account>:stateful-rulegroup/{name}"


def policy_references(plan: AwsPlan) -> list[dict[str, Any]]:
    return [{"ResourceArn": rule_group_arn(g.name), "Priority": g.priority} for g in sorted(plan.rule_groups, key=lambda g: g.priority)]


def firewall_policy_body(plan: AwsPlan) -> dict[str, Any]:
    """The CreateFirewallPolicy request for a policy the stack creates (the component passes the same values)."""
    policy = plan.policy
    assert policy is not None and policy.name
    return {
        "FirewallPolicyName": policy.name,
        "Description": f"egress-matrix {plan.cluster}: strict order, drop established flows no rule passes",
        "FirewallPolicy": {
            "StatelessDefaultActions": ["aws:forward_to_sfe"], "StatelessFragmentDefaultActions": ["aws:forward_to_sfe"],
            "StatefulRuleGroupReferences": policy_references(plan),
            "StatefulDefaultActions": list(policy.stateful_default_actions),
            "StatefulEngineOptions": {"RuleOrder": "STRICT_ORDER", "StreamExceptionPolicy": policy.stream_exception_policy},
            "PolicyVariables": {"RuleVariables": {"HOME_NET": {"Definition": list(policy.home_net)}}},
        },
    }


def _generated_sid(group: str, key: str) -> int:
    # AWS numbers the rules it generates per group (sid 1, 2, ...); one file needs them unique, so they get stable ids too.
    return SID_BASE + int(hashlib.sha256(f"{group}|{key}".encode()).hexdigest()[:12], 16) % SID_SPAN


def domain_list_rules(group: str, source: dict[str, Any]) -> list[str]:
    """The Suricata rules AWS generates from a domain-list ALLOWLIST, per target type (suricata-examples, 'Allowlist'
    samples): a pass per target, then the drop of every other TLS ClientHello / HTTP request."""
    rules = []
    for target_type in source["TargetTypes"]:
        tls = target_type == "TLS_SNI"
        app, buffer, case = ("tls", "tls.sni", " nocase;") if tls else ("http", "http.host", "")
        prefix = "ssl_state:client_hello; " if tls else ""
        what = "TLS" if tls else "HTTP"
        for target in source["Targets"]:
            match = f'dotprefix; content:"{target}";{case} endswith;' if target.startswith(".") else f'content:"{target}"; startswith;{case} endswith;'
            rules.append(f'pass {app} $HOME_NET any -> $EXTERNAL_NET any ({prefix}{buffer}; {match} msg:"matching {what} allowlisted FQDNs"; '
                         f"flow:to_server, established; sid:{_generated_sid(group, target if tls else 'http|' + target)}; rev:1;)")
        catch_all = "ssl_state:client_hello; " if tls else 'http.header_names; content:"|0d 0a|"; startswith; '
        rules.append(f'drop {app} $HOME_NET any -> $EXTERNAL_NET any ({catch_all}msg:"not matching any {what} allowlisted FQDNs"; '
                     f"flow:to_server, established; sid:{_generated_sid(group, '(drop)' if tls else 'http|(drop)')}; rev:1;)")
    return rules


_VARIABLE = re.compile(r"\$([A-Za-z][A-Za-z0-9_]*)")


def expand(text: str, variables: Mapping[str, Iterable[str]]) -> str:
    """A rule with each IP set variable the group defines (``$HOME_NET``, a source group's ``$G_<GROUP>``) replaced by
    its addresses; any other ``$NAME`` (``$EXTERNAL_NET``, a policy's) is left as it is."""
    def value(match: re.Match) -> str:
        definition = variables.get(match.group(1))
        if definition is None:
            return match.group(0)
        definition = list(definition)
        return definition[0] if len(definition) == 1 else f"[{','.join(definition)}]"
    return _VARIABLE.sub(value, text)


def engine_rules(groups: Iterable[tuple[int, dict[str, Any]]]) -> str:
    """What the engine runs for (priority, CreateRuleGroup body) pairs: every group's rules in priority order, domain
    lists as the rules AWS generates from them, the group's own IP set variables expanded (``$HOME_NET``, a source
    group's). Built from the bodies (not the plan) so the policy pack can rebuild it from deployed resources."""
    lines = []
    for priority, body in sorted(groups, key=lambda pair: pair[0]):
        group = body["RuleGroup"]
        variables = {name: value["Definition"] for name, value in group["RuleVariables"]["IPSets"].items()}
        source = group["RulesSource"]
        form = "domain-list" if "RulesSourceList" in source else "suricata"
        lines.append(f"# {body['RuleGroupName']} (priority {priority}, {form}, capacity {body['Capacity']})")
        texts = domain_list_rules(body["RuleGroupName"], source["RulesSourceList"]) if form == "domain-list" else source["RulesString"].splitlines()
        lines.extend(expand(text, variables) for text in texts)
    return "".join(line + "\n" for line in lines)


def _permission(rule) -> dict[str, Any]:
    family = "Ipv6Ranges" if ":" in rule.cidr else "IpRanges"
    cidr_key = "CidrIpv6" if ":" in rule.cidr else "CidrIp"
    return {"IpProtocol": rule.protocol, "FromPort": rule.from_port, "ToPort": rule.to_port,
            family: [{cidr_key: rule.cidr, "Description": rule.description}]}


def security_group_document(groups: tuple[SecurityGroupPlan, ...]) -> dict[str, Any]:
    return {"SecurityGroups": [{"GroupName": g.name, "Role": g.role, "IpPermissionsEgress": [_permission(r) for r in g.rules]} for g in groups]}


def _text(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def render(plan: AwsPlan) -> dict[str, str]:
    files = {f"aws/rule-groups/{g.name}.json": _text(rule_group_body(g)) for g in plan.rule_groups}
    if plan.rule_groups:
        files["aws/rules.suricata"] = engine_rules((g.priority, rule_group_body(g)) for g in plan.rule_groups)
    if plan.policy is not None and plan.policy.name:
        files["aws/firewall-policy.json"] = _text(firewall_policy_body(plan))
    elif plan.policy is not None:
        files["aws/rule-group-references.json"] = _text({"FirewallPolicyArn": plan.policy.existing_arn,
                                                        "StatefulRuleGroupReferences": policy_references(plan)})
    if plan.security_groups:
        files["aws/security-groups.json"] = _text(security_group_document(plan.security_groups))
    if plan.broadening:
        files["aws/domain-list-broadening.txt"] = "".join(
            f"{b.role} {b.target_type} {b.target}: {b.allows}\n" for b in plan.broadening if b.allows)
    if plan.left_out:
        files["aws/left-out.txt"] = left_out_text("AWS", plan.left_out)
    return files
