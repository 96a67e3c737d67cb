"""AwsNetworkFirewallEgress: Network Firewall stateful rule groups (and optionally their policy) from an ``AwsPlan``.

- Rule groups are auto-named (logical name = the plan's group name, plus Pulumi's suffix): capacity and rule order
  are fixed at creation, so a change replaces the group, and an auto-named replacement is create-before-delete, so
  the policy is repointed before the old group is deleted. A fixed name would make it delete-first, which AWS refuses
  while the policy still references the group (reference/aws-egress.md §4; terraform-provider-aws#19616).
- Rules travel as ``rules_string`` (ordered text), never ``stateful_rule`` blocks, which the provider reorders
  (terraform-provider-aws#24977) and rewrites (#35147); no comment lines are sent (#40856).
The plan decides everything; this file maps the CreateRuleGroup / CreateFirewallPolicy bodies the tests validate
against botocore's model onto the provider's inputs, field by field.
"""
from __future__ import annotations

from typing import Any, Optional

import pulumi
import pulumi_aws as aws

from egress.targets.aws.plan import AwsPlan
from egress.targets.aws.render import firewall_policy_body, rule_group_body

TYPE_TOKEN = "egress:aws:NetworkFirewallEgress"


def _ip_sets(variables: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "ip_set": {"definitions": list(value["Definition"])}} for key, value in sorted(variables.items())]


def rule_group_args(body: dict[str, Any]) -> dict[str, Any]:
    """A CreateRuleGroup body as ``aws.networkfirewall.RuleGroup`` inputs (the name is left to auto-naming)."""
    group = body["RuleGroup"]
    source = group["RulesSource"]
    if "RulesSourceList" in source:
        listed = source["RulesSourceList"]
        rules_source: dict[str, Any] = {"rules_source_list": {"generated_rules_type": listed["GeneratedRulesType"],
                                                              "target_types": list(listed["TargetTypes"]), "targets": list(listed["Targets"])}}
    else:
        rules_source = {"rules_string": source["RulesString"]}
    return {"type": body["Type"], "capacity": body["Capacity"], "description": body["Description"],
            "rule_group": {"rules_source": rules_source, "rule_variables": {"ip_sets": _ip_sets(group["RuleVariables"]["IPSets"])},
                           "stateful_rule_options": {"rule_order": group["StatefulRuleOptions"]["RuleOrder"]}}}


def firewall_policy_args(body: dict[str, Any], arns: dict[str, pulumi.Input[str]]) -> dict[str, Any]:
    """A CreateFirewallPolicy body as ``aws.networkfirewall.FirewallPolicy`` inputs, the groups' real ARNs in place of
    the rendered ``.../stateful-rulegroup/<name>`` ones."""
    policy = body["FirewallPolicy"]
    engine = policy["StatefulEngineOptions"]
    return {"description": body["Description"], "firewall_policy": {
        "stateless_default_actions": list(policy["StatelessDefaultActions"]),
        "stateless_fragment_default_actions": list(policy["StatelessFragmentDefaultActions"]),
        "stateful_default_actions": list(policy["StatefulDefaultActions"]),
        "stateful_engine_options": {"rule_order": engine["RuleOrder"], "stream_exception_policy": engine["StreamExceptionPolicy"]},
        "stateful_rule_group_references": [{"resource_arn": arns[ref["ResourceArn"].rsplit("/", 1)[1]], "priority": ref["Priority"]}
                                           for ref in policy["StatefulRuleGroupReferences"]],
        "policy_variables": {"rule_variables": _ip_sets(policy["PolicyVariables"]["RuleVariables"])},
    }}


class AwsNetworkFirewallEgress(pulumi.ComponentResource):
    """The plan's stateful rule groups, and the STRICT_ORDER firewall policy referencing them when the stack creates one."""

    rule_group_arns: pulumi.Output[dict]
    rule_group_references: pulumi.Output[list]
    policy_arn: pulumi.Output[Optional[str]]

    def __init__(self, name: str, plan: AwsPlan, protect: bool = True, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TYPE_TOKEN, name, None, opts)

        # Protected: a replacement (a capacity change) under a policy this stack does not manage would stop half-way, the
        # old group still referenced. Logical names carry the cluster's name because Pulumi auto-names the groups from them.
        child = pulumi.ResourceOptions(parent=self, protect=protect)
        groups = sorted(plan.rule_groups, key=lambda g: g.priority)
        arns = {g.name: aws.networkfirewall.RuleGroup(g.name, **rule_group_args(rule_group_body(g)), opts=child).arn for g in groups}
        references = [{"resourceArn": arns[g.name], "priority": g.priority} for g in groups]
        policy_arn: pulumi.Input[Optional[str]] = plan.policy.existing_arn if plan.policy else None
        if plan.policy is not None and plan.policy.name:
            created = aws.networkfirewall.FirewallPolicy(plan.policy.name, **firewall_policy_args(firewall_policy_body(plan), arns), opts=child)
            policy_arn = created.arn
        self.rule_group_arns = pulumi.Output.from_input(arns)
        self.rule_group_references = pulumi.Output.from_input(references)
        self.policy_arn = pulumi.Output.from_input(policy_arn)
        self.register_outputs({"ruleGroupArns": self.rule_group_arns, "ruleGroupReferences": self.rule_group_references,
                               "policyArn": self.policy_arn})
