"""The Pulumi program under the SDK's mocks: the dev stack's config in, the resolved matrix out."""
from __future__ import annotations

import json
import runpy
from pathlib import Path

import pulumi
import pytest
import yaml

from egress.exports import allowlist_exports
from egress.project import open_project
from egress.render import requirement_json
from egress_preview.program import PreviewMocks
from pulumi_harness import resolved, settle

ROOT = Path(__file__).resolve().parents[1]


class Mocks(pulumi.runtime.Mocks):
    def __init__(self, config: dict[str, str] | None = None):
        self.azure = PreviewMocks(config or {})

    def new_resource(self, args):
        if args.typ.startswith("azure-native:"):  # ARM ids as the provider computes them: the program checks its IP Groups' ids
            return self.azure.new_resource(args)
        return f"{args.name}-id", {**args.inputs, "arn": f"arn:mock:{args.name}"}

    def call(self, args):
        return {}


def stack_config(stack: str) -> dict[str, str]:
    """What the CLI would hand the program: every value a string, structured values as JSON."""
    config = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}




AZURE_GROUPS = {"dev": ["egress-dev-aks", "egress-dev-kkp", "egress-dev-openshift"], "aks-china": ["egress-aks-china-aks"], "aks-spoke": ["egress-payments-aks"],
                "ibm-vpc": None, "kkp-aws": None}
AWS_GROUPS = {"dev": ["egress-dev-nodes-http-host", "egress-dev-nodes-tls-sni", "egress-dev-seed-http-host", "egress-dev-seed-tls-sni"],
              "kkp-aws": ["egress-kkp-eu-west-1-bastion-rules", "egress-kkp-eu-west-1-nodes-rules", "egress-kkp-eu-west-1-seed-rules"]}
# Fixed slots, base + 100 x (10 x kind + role): dev's nodes and seed TLS lists, then their HTTP lists; kkp-aws's nodes, seed, bastion.
AWS_PRIORITIES = {"dev": [1100, 1300, 2100, 2300], "kkp-aws": [100, 300, 400]}


@pytest.mark.parametrize("stack", ["dev", "aks-china", "aks-spoke", "ibm-vpc", "kkp-aws"])
def test_program_exports_the_resolved_matrix(stack, loop, monkeypatch):
    monkeypatch.chdir(ROOT)
    pulumi.runtime.set_mocks(Mocks(stack_config(stack)), project="egress-matrix", stack=stack, preview=False)
    pulumi.runtime.set_all_config(stack_config(stack))
    outputs = {}
    original = pulumi.export
    monkeypatch.setattr(pulumi, "export", lambda name, value: (outputs.__setitem__(name, value), original(name, value)))
    runpy.run_path(str(ROOT / "__main__.py"))
    catalog, profile, expected = open_project(ROOT).requirements(stack)
    assert outputs["requirementCount"] == len(expected)
    assert outputs["requirements"] == [requirement_json(r) for r in expected]
    assert outputs["allowlistExports"] == allowlist_exports(catalog, profile)
    assert bool(outputs["allowlistExports"]) is (stack == "ibm-vpc")
    if AZURE_GROUPS[stack] is None:
        assert "azureRuleCollectionGroups" not in outputs
    else:
        assert resolved(loop, outputs["azureRuleCollectionGroups"]) == AZURE_GROUPS[stack]
    if stack not in AWS_GROUPS:
        assert "awsRuleGroupArns" not in outputs
    else:
        assert sorted(resolved(loop, outputs["awsRuleGroupArns"])) == AWS_GROUPS[stack]
        assert resolved(loop, outputs["awsFirewallPolicyArn"]) == f"arn:mock:egress-{profile.cluster}"  # created
        assert [ref["priority"] for ref in resolved(loop, outputs["awsRuleGroupReferences"])] == AWS_PRIORITIES[stack]
        assert resolved(loop, outputs["awsSecurityGroupIds"])
    settle(loop)


class RecordingMocks(Mocks):
    def __init__(self):
        self.registered = []

    def new_resource(self, args):
        self.registered.append(args.typ)
        return super().new_resource(args)


def test_bad_stack_config_fails_with_one_message_and_registers_nothing(loop, monkeypatch):
    monkeypatch.chdir(ROOT)
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack="dev", preview=False)
    config = stack_config("dev")
    config["egress-matrix:location"] = "atlantis"
    pulumi.runtime.set_all_config(config)
    exported = []
    monkeypatch.setattr(pulumi, "export", lambda name, value: exported.append(name))
    with pytest.raises(pulumi.RunError) as info:
        runpy.run_path(str(ROOT / "__main__.py"))
    settle(loop)  # what was queued before the error has reached the mocks: "nothing registered" is then the whole truth
    message = str(info.value)
    assert message.startswith("ProfileError: Pulumi config of stack 'dev': stack 'dev': field 'config.egress-matrix:location' = 'atlantis'")
    assert "unknown location for cloud azure-public" in message
    assert exported == [] and mocks.registered == []


class ExistingPolicyMocks(RecordingMocks):
    """getFirewallPolicy finds a policy with ``rule_order`` and one foreign group at priority 100."""

    def __init__(self, rule_order):
        super().__init__()
        self.rule_order = rule_order

    def call(self, args):
        assert args.token == "aws:networkfirewall/getFirewallPolicy:getFirewallPolicy"
        return {"arn": args.args["arn"], "firewallPolicies": [{
            "statefulEngineOptions": [{"ruleOrder": self.rule_order}], "statefulDefaultActions": ["aws:drop_established"],
            "statefulRuleGroupReferences": [{"resourceArn": "arn:aws:network-firewall:eu-west-1:123456789012:stateful-rulegroup/shared-threats",
                                             "priority": 100}]}]}


POLICY_ARN = "arn:aws:network-firewall:eu-west-1:123456789012:firewall-policy/hub"


def _kkp_aws_with_existing_policy(monkeypatch, mocks, **extra):
    monkeypatch.chdir(ROOT)
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack="kkp-aws", preview=False)
    config = stack_config("kkp-aws")
    config.pop("egress-matrix:awsFirewallPolicy")
    config.update({"egress-matrix:awsFirewallPolicyArn": POLICY_ARN, **extra})
    pulumi.runtime.set_all_config(config)
    warnings = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warnings.append(message))
    return warnings


@pytest.mark.parametrize("rule_order,message", [
    ("DEFAULT_ACTION_ORDER", f"AwsCompileError: Pulumi config of stack 'kkp-aws': firewall policy {POLICY_ARN} uses rule order DEFAULT_ACTION_ORDER"),
    ("STRICT_ORDER", f"AwsCompileError: Pulumi config of stack 'kkp-aws': firewall policy {POLICY_ARN} already references "
                     "arn:aws:network-firewall:eu-west-1:123456789012:stateful-rulegroup/shared-threats at priority 100"),
])
def test_an_existing_policy_is_read_and_refused_before_anything_is_registered(rule_order, message, loop, monkeypatch):
    mocks = ExistingPolicyMocks(rule_order)
    _kkp_aws_with_existing_policy(monkeypatch, mocks)
    with pytest.raises(pulumi.RunError) as info:
        runpy.run_path(str(ROOT / "__main__.py"))
    settle(loop)
    assert str(info.value).startswith(message)
    assert mocks.registered == []


def test_an_existing_policy_with_free_priorities_gets_the_references_it_lacks(loop, monkeypatch):
    mocks = ExistingPolicyMocks("STRICT_ORDER")
    warnings = _kkp_aws_with_existing_policy(monkeypatch, mocks, **{"egress-matrix:awsPriorityBase": "1000"})
    runpy.run_path(str(ROOT / "__main__.py"))
    settle(loop)
    assert [w for w in warnings if w.startswith("firewall policy")] == [  # (the rest: capacity warnings)
                        f"firewall policy {POLICY_ARN} does not reference egress-kkp-eu-west-1-nodes-rules at priority 1000, "
                        "egress-kkp-eu-west-1-seed-rules at priority 1200, egress-kkp-eu-west-1-bastion-rules at priority 1300 yet: add the "
                        "references exported as awsRuleGroupReferences to it"]
    assert "aws:networkfirewall/firewallPolicy:FirewallPolicy" not in mocks.registered
    assert mocks.registered.count("aws:networkfirewall/ruleGroup:RuleGroup") == 3
