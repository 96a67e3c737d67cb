"""AwsNetworkFirewallEgress and AwsSecurityGroupEgress under the Pulumi SDK mocks: exact resources, names and inputs;
the engine receives exactly the request bodies validated against botocore's model; auto-named rule groups; diff
locality (one new endpoint changes one rule group, one new CIDR adds one security-group rule)."""
from __future__ import annotations

import botocore.session
import botocore.validate
import pulumi
import pytest

from egress.targets.aws.compile import compile_aws
from egress.targets.aws.render import firewall_policy_body, rule_group_body

from aws_stacks import FORMS, dev, req
from components.engine_values import engine_numbers
from pulumi_harness import RecordingMonitor, by_name

MODEL = botocore.session.get_session().get_service_model("network-firewall")
ACCOUNT = "123456789012"


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        state = dict(args.inputs)
        if args.typ.startswith("aws:networkfirewall/"):
            kind = "stateful-rulegroup" if "RuleGroup" in args.typ else "firewall-policy"
            state["arn"] = f"arn:aws:network-firewall:eu-central-1:{ACCOUNT}:{kind}/{args.name}-abc1234"
        return f"{args.name}-id", state

    def call(self, args):
        return {}


def deploy(plan, vpc_id="vpc-0123456789abcdef0"):
    from components.aws_network_firewall import AwsNetworkFirewallEgress
    from components.aws_security_groups import AwsSecurityGroupEgress

    mocks = Mocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack="dev", preview=False, monitor=monitor)
    outputs = {}

    @pulumi.runtime.test
    def run():
        firewall = AwsNetworkFirewallEgress("egress-aws-firewall", plan)
        groups = AwsSecurityGroupEgress("egress-aws-security-groups", plan, vpc_id=vpc_id)
        return pulumi.Output.all(firewall.rule_group_arns, firewall.rule_group_references, firewall.policy_arn,
                                 groups.security_group_ids).apply(
            lambda v: outputs.update(arns=v[0], references=v[1], policy=v[2], security_groups=v[3]))

    run()
    return monitor.registrations, outputs


def plan_of(form: str, **overrides):
    catalog, profile, reqs = dev(form, **overrides)
    return compile_aws(catalog, profile, reqs)


def _validated(operation: str, body: dict) -> dict:
    report = botocore.validate.ParamValidator().validate(body, MODEL.operation_model(operation).input_shape)
    assert not report.has_errors(), report.generate_report()
    return body


def _as_create_rule_group(inputs: dict, name: str) -> dict:
    """What the engine received for a RuleGroup, mapped back to a CreateRuleGroup body (written independently of the
    component's mapping, so a key the SDK translated or dropped shows up as a difference)."""
    group = inputs["ruleGroup"]
    source = group["rulesSource"]
    if "rulesSourceList" in source:
        listed = source["rulesSourceList"]
        rules_source = {"RulesSourceList": {"Targets": listed["targets"], "TargetTypes": listed["targetTypes"],
                                            "GeneratedRulesType": listed["generatedRulesType"]}}
    else:
        rules_source = {"RulesString": source["rulesString"]}
    assert set(inputs) == {"capacity", "description", "ruleGroup", "type"}, inputs.keys()
    assert set(group) == {"rulesSource", "ruleVariables", "statefulRuleOptions"}, group.keys()
    return {"RuleGroupName": name, "Type": inputs["type"], "Capacity": inputs["capacity"], "Description": inputs["description"],
            "RuleGroup": {"RuleVariables": {"IPSets": {s["key"]: {"Definition": s["ipSet"]["definitions"]} for s in group["ruleVariables"]["ipSets"]}},
                          "RulesSource": rules_source, "StatefulRuleOptions": {"RuleOrder": group["statefulRuleOptions"]["ruleOrder"]}}}


@pytest.mark.parametrize("form", FORMS)
def test_rule_groups_reach_the_engine_exactly_as_validated(form):
    plan = plan_of(form, aws_firewall_policy=True)
    registrations, outputs = deploy(plan)
    by = by_name(registrations)
    component = by["egress-aws-firewall"]
    for group in plan.rule_groups:
        registered = by[group.name]
        assert registered["type"] == "aws:networkfirewall/ruleGroup:RuleGroup" and registered["parent"] == component["urn"]
        assert "name" not in registered["inputs"] and not registered["delete_before_replace"]  # auto-named: create-before-delete
        body = _validated("CreateRuleGroup", rule_group_body(group))
        assert _as_create_rule_group(engine_numbers(registered["inputs"]), group.name) == body
        assert "#" not in body["RuleGroup"]["RulesSource"].get("RulesString", "")  # AWS refuses comment lines (t-p-aws#40856)
    assert outputs["arns"] == {g.name: f"arn:aws:network-firewall:eu-central-1:{ACCOUNT}:stateful-rulegroup/{g.name}-abc1234"
                               for g in plan.rule_groups}


def test_the_created_policy_references_every_group_by_priority_with_strict_order_and_drop_established():
    plan = plan_of("suricata", aws_firewall_policy=True)
    registrations, outputs = deploy(plan)
    policy = by_name(registrations)["egress-dev"]
    assert policy["type"] == "aws:networkfirewall/firewallPolicy:FirewallPolicy" and "name" not in policy["inputs"]
    body = _validated("CreateFirewallPolicy", firewall_policy_body(plan))["FirewallPolicy"]
    received = engine_numbers(policy["inputs"])["firewallPolicy"]
    assert received == {
        "statelessDefaultActions": ["aws:forward_to_sfe"], "statelessFragmentDefaultActions": ["aws:forward_to_sfe"],
        "statefulDefaultActions": ["aws:drop_established", "aws:alert_established"],
        "statefulEngineOptions": {"ruleOrder": "STRICT_ORDER", "streamExceptionPolicy": "REJECT"},
        "statefulRuleGroupReferences": [{"resourceArn": outputs["arns"][g.name], "priority": g.priority} for g in plan.rule_groups],
        "policyVariables": {"ruleVariables": [{"key": "HOME_NET", "ipSet": {"definitions": ["10.0.0.0/16", "10.1.0.0/16"]}}]},
    }
    assert [r["Priority"] for r in body["StatefulRuleGroupReferences"]] == [r["priority"] for r in received["statefulRuleGroupReferences"]]
    assert outputs["policy"] == f"arn:aws:network-firewall:eu-central-1:{ACCOUNT}:firewall-policy/egress-dev-abc1234"
    assert {d.split(":")[-1] for d in policy["dependencies"]} >= {g.name for g in plan.rule_groups}


def test_without_a_policy_setting_only_the_groups_and_their_references_are_produced():
    plan = plan_of("domain-list", aws_firewall_policy=False)
    registrations, outputs = deploy(plan)
    assert not [r for r in registrations if r["type"].endswith("FirewallPolicy")]
    assert outputs["policy"] is None
    assert outputs["references"] == [{"resourceArn": outputs["arns"][g.name], "priority": g.priority} for g in plan.rule_groups]


def test_security_groups_one_egress_rule_resource_per_cidr_and_port_range():
    plan = plan_of("suricata")
    registrations, outputs = deploy(plan)
    by = by_name(registrations)
    groups = [r for r in registrations if r["type"] == "aws:ec2/securityGroup:SecurityGroup"]
    assert sorted(r["name"] for r in groups) == sorted(g.name for g in plan.security_groups)
    for group in plan.security_groups:
        registered = by[group.name]
        assert registered["inputs"] == {"vpcId": "vpc-0123456789abcdef0", "tags": {"Name": group.name, "egress-matrix:role": group.role},
                                        "description": f"egress-matrix dev: egress of the {group.role} role"}
        assert "egress" not in registered["inputs"] and "ingress" not in registered["inputs"]  # never inline rules
        rules = [r for r in registrations if r["type"] == "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule" and r["parent"] == registered["urn"]]
        assert sorted((r["name"], engine_numbers(r["inputs"])["fromPort"]) for r in rules) == sorted(
            (f"{group.name}-{rule.protocol}-{rule.from_port}-{rule.cidr.replace('/', '_')}", rule.from_port) for rule in group.rules)
        for rule, registered_rule in zip(sorted(group.rules, key=lambda r: r.key), sorted(rules, key=lambda r: r["name"])):
            assert engine_numbers(registered_rule["inputs"]) == {
                "securityGroupId": f"{group.name}-id", "ipProtocol": rule.protocol, "fromPort": rule.from_port, "toPort": rule.to_port,
                "cidrIpv4": rule.cidr, "description": rule.description}
    assert outputs["security_groups"] == {g.name: f"{g.name}-id" for g in plan.security_groups}


def _inputs(registrations):
    return {(r["type"], r["name"]): r["inputs"] for r in registrations}


@pytest.mark.parametrize("form", FORMS)
def test_one_new_endpoint_changes_one_rule_group_and_keeps_every_sid(form):
    catalog, profile, reqs = dev(form)
    before = compile_aws(catalog, profile, reqs)
    after = compile_aws(catalog, profile, [*reqs, req("new-endpoint.example.org", "fqdn", "https")])
    old, new = _inputs(deploy(before)[0]), _inputs(deploy(after)[0])
    assert old.keys() == new.keys()
    changed = sorted(key for key in old if old[key] != new[key])
    expected_group = f"egress-dev-nodes-{'tls-sni' if form == 'domain-list' else 'rules'}"
    assert changed == [("aws:networkfirewall/ruleGroup:RuleGroup", expected_group)]
    if form == "suricata":
        sids = {rule.key: rule.sid for g in before.rule_groups for rule in g.rules}
        assert all(sids.get(rule.key, rule.sid) == rule.sid for g in after.rule_groups for rule in g.rules)


def test_one_new_cidr_adds_one_security_group_rule():
    catalog, profile, reqs = dev("suricata")
    before = compile_aws(catalog, profile, reqs)
    after = compile_aws(catalog, profile, [*reqs, req("198.51.100.0/24", "cidr", "tcp", (9000,))])
    old, new = _inputs(deploy(before)[0]), _inputs(deploy(after)[0])
    added = sorted(set(new) - set(old))
    assert [key for key in added if key[0].startswith("aws:vpc/")] == [
        ("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule", "egress-dev-nodes-0-tcp-9000-198.51.100.0_24")]
    assert not set(old) - set(new)
    assert all(old[key] == new[key] for key in old if key[0].startswith("aws:ec2/") or key[0].startswith("aws:vpc/"))
