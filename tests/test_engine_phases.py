"""The pack as the real engine drives it (reference/pulumi.md §1.4): Analyze with checked inputs, AnalyzeStack with
provider-shaped outputs, the engine's unknown sentinels and propertyDependencies, at a first ``pulumi preview``, at an
update preview over a deployed state, and after ``up``."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from pulumi.runtime.rpc import UNKNOWN

from egress_preview.pack import run_pack
from egress_preview.program import run_program

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from rule_breaks import drop_aws_target, drop_azure_fqdn, edit_squid_conf  # noqa: E402  (the program's components, patched)

STACKS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
CANT_RUN = "during preview:"  # the servicer's "can't run policy ... during preview: ..." (pulumi_policy/policy.py)


def _stopping(violations):
    """What would fail the real gate: a mandatory violation, or any policy that could not run."""
    return [(v.policy, v.level, v.resource, v.message[:200]) for v in violations if v.level == "mandatory" or CANT_RUN in v.message]


@pytest.mark.parametrize("stack", STACKS)
def test_first_preview_of_every_stack_judges_everything(stack):
    """A first deployment's preview: every computed output unknown, every input computed from one unknown. No policy
    answers "can't run" and none reports anything mandatory: the inputs allow judging everything."""
    recorded = run_program(ROOT, stack, phase="preview")
    assert recorded.phase == "preview" and any(r.unknowns for r in recorded.resources if not r.type.startswith("kubernetes:")) == (
        any(r.type.startswith(("aws:", "azure-native:")) for r in recorded.resources))
    assert _stopping(run_pack(recorded)) == []


def _without_changelogs(monkeypatch):
    drop_azure_fqdn(monkeypatch, "changelogs.ubuntu.com")
    return "azure-native:network:FirewallPolicyRuleCollectionGroup 'egress-aks'", "aks-os-updates-changelogs"


def _without_docker(monkeypatch):
    drop_aws_target(monkeypatch, "download.docker.com", only="-seed-")
    return "aws:networkfirewall/ruleGroup:RuleGroup 'egress-dev-seed-tls-sni'", "kkp-kubeone-docker-apt"


def _without_ubuntu_archive(monkeypatch):
    edit_squid_conf(monkeypatch, "dstdomain -n archive.ubuntu.com ", "dstdomain -n ")
    return "kubernetes:core/v1:ConfigMap 'egress-proxy-configmap-egress-proxy-egress-proxy-config'", "kkp-os-ubuntu-archive"


BREAKS = {"azure rule collection group": ("dev", _without_changelogs), "aws rule group": ("dev", _without_docker),
          "squid ConfigMap": ("proxy-only", _without_ubuntu_archive)}


@pytest.mark.parametrize("case", sorted(BREAKS))
def test_update_preview_that_removes_a_required_destination_fails_naming_it(case, monkeypatch):
    """A deployed stack; a change removes one required destination from one resource. The update's preview (that
    resource an update step: its read-only outputs unknown, the others same steps with their old outputs) fails with
    mandatory violations naming the requirement, from the resource policy and from the stack policy."""
    stack, breaking = BREAKS[case]
    deployed = run_program(ROOT, stack)
    resource, entry = breaking(monkeypatch)
    preview = run_program(ROOT, stack, phase="preview", prior=deployed.resources)
    before = {r.label(): r for r in deployed.resources}
    changed = next(r for r in preview.resources if r.label() == resource)
    assert changed.props != before[resource].props  # an update step
    if not resource.startswith("kubernetes:"):  # the cloud providers' read-only outputs are unknown until it runs
        assert changed.unknowns
    stopping = _stopping(run_pack(preview))
    assert {(p, lvl, res) for p, lvl, res, _ in stopping} == {("required-egress-complete-before-write", "mandatory", resource),
                                                              ("required-egress-complete", "mandatory", resource)}
    assert all(entry in message for *_, message in stopping)
    # Every other resource is a same step, with its old outputs (an update keeps a rule group's ARN: the policy is same).
    assert [r.label() for r in preview.resources if r.label() != resource and (r.unknowns or r.props != before[r.label()].props)] == []


@pytest.mark.parametrize("case", sorted(BREAKS))
def test_up_refuses_the_broken_write_before_it_happens(case, monkeypatch):
    """At up, stack policies run after every step was executed; the write is refused by a resource policy (Analyze,
    on the checked inputs), which the engine runs before the step: that resource is not written."""
    stack, breaking = BREAKS[case]
    resource, entry = breaking(monkeypatch)
    recorded = run_program(ROOT, stack)
    from egress_policies import POLICIES
    from pulumi_policy import ResourceValidationPolicy

    resource_policies = [p for p in POLICIES if isinstance(p, ResourceValidationPolicy)]
    before = [v for v in run_pack(recorded, policies=resource_policies) if v.level == "mandatory"]
    assert [(v.policy, v.resource) for v in before] == [("required-egress-complete-before-write", resource)]
    assert entry in before[0].message


def test_outputs_after_up_with_ids_in_another_case_still_join():
    """ARM ids are case-insensitive: the service may return an IP Group's id in another case than the rules carry."""
    recorded = run_program(ROOT, "dev")
    shouted = [dataclasses.replace(r, props={**r.props, "id": r.props["id"].upper()}) if r.type == "azure-native:network:IpGroup" else r
               for r in recorded.resources]
    assert any(r.props.get("id", "").isupper() for r in shouted)
    assert _stopping(run_pack(dataclasses.replace(recorded, resources=shouted))) == []


def test_the_harness_presents_what_providers_return():
    """After up an RCG's outputs carry no path parameters (its policy comes from its id); a Secret's inputs are what
    pulumi-kubernetes' Check leaves (base64 data); at a preview unknowns travel as the engine's sentinel."""
    from egress_preview.pack import analyze_requests, analyze_stack_request
    from google.protobuf import json_format

    recorded = run_program(ROOT, "dev")
    stack = json_format.MessageToDict(analyze_stack_request(recorded.resources))
    rcg = next(r for r in stack["resources"] if r["type"] == "azure-native:network:FirewallPolicyRuleCollectionGroup")
    assert not {"resourceGroupName", "firewallPolicyName", "ruleCollectionGroupName"} & set(rcg["properties"])
    assert rcg["properties"]["provisioningState"] == "Succeeded" and "/firewallPolicies/" in rcg["properties"]["id"]
    preview = run_program(ROOT, "dev", phase="preview")
    stack = json_format.MessageToDict(analyze_stack_request(preview.resources))
    rcg = next(r for r in stack["resources"] if r["type"] == "azure-native:network:FirewallPolicyRuleCollectionGroup")
    assert rcg["properties"]["id"] == UNKNOWN and rcg["propertyDependencies"]  # the engine's sentinel on the wire
    secrets = [r for r in run_program(ROOT, "openshift").resources if r.type == "kubernetes:core/v1:Secret"]
    for request in analyze_requests(secrets, {}):
        props = json_format.MessageToDict(request.properties)
        assert "stringData" not in props and props.get("data")


def test_egress_preview_shows_the_pack_what_a_real_preview_would(run_cli, tmp_path):
    """`egress preview --phase preview`: a first deployment as `pulumi preview` presents it, judged with no mandatory
    violation; with --deployed (an earlier run's resources.json) an update, here of an unchanged stack: all same steps."""
    import json

    code, out, err = run_cli("preview", "--stack", "dev", "--phase", "preview", "--out", str(tmp_path / "first"), "--project", str(ROOT))
    assert code == 0, err
    assert "as `pulumi preview` shows a first deployment" in out and "values not known until the update runs" in out
    first = json.loads((tmp_path / "first" / "resources.json").read_text())
    assert first["phase"] == "preview" and any(r.get("unknowns") for r in first["resources"])
    code, out, err = run_cli("preview", "--stack", "dev", "--out", str(tmp_path / "up"), "--project", str(ROOT))
    assert code == 0, err
    code, out, err = run_cli("preview", "--stack", "dev", "--phase", "preview", "--deployed", str(tmp_path / "up" / "resources.json"),
                             "--out", str(tmp_path / "update"), "--project", str(ROOT))
    assert code == 0, err
    assert "shows an update of the deployed state" in out and "values not known" not in out


def test_the_offline_provider_answers_with_the_stack_subscription(monkeypatch):
    """The program checks the azure-native provider's subscription before registering anything; offline the mocks
    answer with the stack's azureSubscriptionId, so the check runs (and holds) in every offline preview."""
    from egress_preview.program import PreviewMocks

    answers = []
    original = PreviewMocks.call

    def call(self, args):
        answer = original(self, args)
        answers.append((args.token, dict(answer)))
        return answer
    monkeypatch.setattr(PreviewMocks, "call", call)
    recorded = run_program(ROOT, "dev")
    subscription = recorded.config["egress-matrix:azureSubscriptionId"]
    assert [(t, a.get("subscriptionId")) for t, a in answers if t == "azure-native:authorization:getClientConfig"] == [
        ("azure-native:authorization:getClientConfig", subscription)]


def test_update_preview_of_a_matrix_change_in_one_group_passes():
    """A feature turned off changes one Azure rule collection group (an update step: its id unknown, no path parameters
    in its outputs) while the others are same steps: the groups are still one policy's, chained, with no false finding."""
    from egress_preview.program import stack_config

    config, secrets = stack_config(ROOT / "stacks" / "Pulumi.dev.yaml")
    deployed = run_program(ROOT, "dev", config, secrets)
    changed = dict(config, **{"egress-matrix:features": '["pod-api-access","azure-monitor","azure-policy","kubeone","cert-manager"]'})
    preview = run_program(ROOT, "dev", changed, secrets, phase="preview", prior=deployed.resources)
    updated = [r.name for r in preview.resources if r.unknowns]
    assert "egress-kkp" in updated and "egress-aks" not in updated
    assert _stopping(run_pack(preview)) == []


@pytest.mark.parametrize("shape", ["elements", "whole"])
def test_a_reference_set_the_bridge_shows_unknown_is_judged_around(shape):
    """pulumi-aws (a Terraform bridge) may preview a set's elements, or the whole set, as unknown: the firewall policy's
    rule-group references then hide no crash and no count of the stand-in text."""
    from egress.deployed import UNKNOWN

    first = run_program(ROOT, "dev", phase="preview")
    policy = next(r for r in first.resources if r.type == "aws:networkfirewall/firewallPolicy:FirewallPolicy")
    refs = policy.props["firewallPolicy"]["statefulRuleGroupReferences"]
    unknown = [UNKNOWN] * len(refs) if shape == "elements" else UNKNOWN
    props = {**policy.props, "firewallPolicy": {**policy.props["firewallPolicy"], "statefulRuleGroupReferences": unknown}}
    paths = ([f"firewallPolicy.statefulRuleGroupReferences[{i}]" for i in range(len(refs))] if shape == "elements"
             else ["firewallPolicy.statefulRuleGroupReferences"])
    edited = dataclasses.replace(first, resources=[dataclasses.replace(r, props=props, unknowns=tuple(paths)) if r is policy else r
                                                   for r in first.resources])
    found = run_pack(edited)
    assert not [v for v in found if "could not judge" in v.message or CANT_RUN in v.message]
    assert not [v for v in found if v.policy == "aws-network-firewall-capacity"]


def test_provider_outputs_carry_unknown_tags_through():
    """An AWS resource whose tags are not known at a preview: its tagsAll is unknown too, not a crash."""
    from egress.deployed import UNKNOWN
    from egress_preview.provider_shapes import provider_outputs

    shaped = provider_outputs("aws:ec2/securityGroup:SecurityGroup", {"tags": UNKNOWN, "vpcId": "vpc-1"})
    assert shaped["tagsAll"] == UNKNOWN and provider_outputs("aws:ec2/securityGroup:SecurityGroup", {"tags": {"a": "b"}})["tagsAll"] == {"a": "b"}
