"""What AWS gets, from an AwsPlan (pure): ``render(plan)`` -> {relative path: text}, exactly as ``egress render`` writes it.

- ``aws/rule-groups/<group>.json``: each CreateRuleGroup request body (botocore's shapes; the tests validate them).
- ``aws/rules.suricata``: what the firewall engine runs, every group in policy order with ``$HOME_NET`` expanded: the
  rules string of Suricata groups, and for domain lists the rules AWS documents that it generates from a list
  (Network Firewall Developer Guide, suricata-examples: a pass per target, then a drop per target type).
- ``aws/security-groups.json``: the groups and their egress rules, as AuthorizeSecurityGroupEgress permissions.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

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
        "RuleGroup": {"RuleVariables": {"IPSets": {"HOME_NET": {"Definition": list(group.home_net)}}}, "RulesSource": source,
                      "StatefulRuleOptions": {"RuleOrder": "STRICT_ORDER"}},
    }


def _generated_sid(group: RuleGroup, key: str) -> int:
    # AWS numbers the rules it generates per group (sid 1, 2, ...); one file needs them unique, so they get stable ids too.
    return SID_BASE + int(hashlib.sha256(f"{group.name}|{key}".encode()).hexdigest()[:12], 16) % SID_SPAN


def domain_list_rules(group: RuleGroup) -> list[str]:
    """The Suricata rules AWS generates from a domain-list ALLOWLIST (suricata-examples, 'Allowlist' samples)."""
    tls = group.target_type == "TLS_SNI"
    app, buffer, case = ("tls", "tls.sni", " nocase;") if tls else ("http", "http.host", "")
    prefix = "ssl_state:client_hello; " if tls else ""
    what = "TLS" if tls else "HTTP"
    rules = []
    for target in group.targets:
        match = f'dotprefix; content:"{target}";{case} endswith;' if target.startswith(".") else f'content:"{target}"; startswith;{case} endswith;'
        rules.append(f'pass {app} $HOME_NET any -> $EXTERNAL_NET any ({prefix}{buffer}; {match} msg:"matching {what} allowlisted FQDNs"; '
                     f"flow:to_server, established; sid:{_generated_sid(group, target)}; rev:1;)")
    catch_all = "ssl_state:client_hello; " if tls else 'http.header_names; content:"|0d 0a|"; startswith; '
    rules.append(f'drop {app} $HOME_NET any -> $EXTERNAL_NET any ({catch_all}msg:"not matching any {what} allowlisted FQDNs"; '
                 f"flow:to_server, established; sid:{_generated_sid(group, '(drop)')}; rev:1;)")
    return rules


def engine_rules(plan: AwsPlan) -> str:
    """Every group's rules in policy (priority) order, ``$HOME_NET`` expanded to the group's own sources."""
    lines = []
    for group in sorted(plan.rule_groups, key=lambda g: g.priority):
        home_net = group.home_net[0] if len(group.home_net) == 1 else f"[{','.join(group.home_net)}]"
        lines.append(f"# {group.name} (priority {group.priority}, {group.form}, capacity {group.used}/{group.capacity})")
        texts = domain_list_rules(group) if group.form == "domain-list" else [rule.text for rule in group.rules]
        lines.extend(text.replace("$HOME_NET", home_net) for text in texts)
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
        files["aws/rules.suricata"] = engine_rules(plan)
    if plan.security_groups:
        files["aws/security-groups.json"] = _text(security_group_document(plan.security_groups))
    if plan.broadening:
        files["aws/domain-list-broadening.txt"] = "".join(
            f"{b.target_type} {b.target}: {b.allows}\n" for b in plan.broadening if b.allows)
    return files
