"""The policy pack: every policy's allowed and denied fixtures give exactly the recorded violations, every policy is
registered, documented and has fixtures of both kinds, and the pack's entry point only builds the PolicyPack."""
from __future__ import annotations

import dataclasses

import ast

import pytest
from pulumi_policy import Severity, StackValidationPolicy

from egress_policies import MODULES, POLICIES
from egress_preview.policy_docs import policies_markdown
from policy_harness import FIXTURES, ROOT, judge, load

CASES = sorted(FIXTURES.glob("*/*.yaml"))


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_fixture_gives_exactly_the_expected_violations(path):
    """Exactly the expected violations. Resource policies report in the order resources registered, which the SDK's
    threads may interleave differently between components from run to run: the lists are compared in one order."""
    fixture = load(path)

    def ordered(violations):
        return sorted(violations, key=lambda v: (v["resource"], v["level"], v["message"]))
    assert ordered(judge(path.parent.name, fixture)) == ordered(fixture["expect"])


def test_every_policy_is_registered_documented_and_has_allowed_and_denied_fixtures():
    names = [p.name for p in POLICIES]
    assert len(set(names)) == len(names) == len(MODULES)
    files = sorted(p.stem for p in (ROOT / "policy" / "egress_policies").glob("*.py") if p.stem not in ("__init__", "support", "objects"))
    assert sorted(m.__name__.rsplit(".", 1)[1] for m in MODULES) == files  # one policy per module, none left out
    assert sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) == sorted(names)  # no fixtures for an unknown policy
    for module in MODULES:
        policy = module.POLICY
        assert module.NAME == policy.name and module.__name__.endswith(policy.name.replace("-", "_"))
        assert policy.description and policy.remediation_steps and isinstance(policy.severity, Severity)
        assert policy.enforcement_level is not None
        cases = {path.stem: load(path) for path in (FIXTURES / policy.name).glob("*.yaml")}
        allowed = [c for name, c in cases.items() if name.startswith("allowed-")]
        denied = [c for name, c in cases.items() if name.startswith("denied-")]
        assert allowed and denied and len(allowed) + len(denied) == len(cases), policy.name
        assert all(c["expect"] == [] for c in allowed) and all(c["expect"] for c in denied), policy.name
        assert all(e["level"] == policy.enforcement_level.value for c in denied for e in c["expect"]), policy.name


def test_policies_doc_is_current():
    assert (ROOT / "docs" / "POLICIES.md").read_text(encoding="utf-8") == policies_markdown(FIXTURES), "run: egress docs policies"


def test_pack_entry_point_only_builds_the_policy_pack():
    tree = ast.parse((ROOT / "policy" / "__main__.py").read_text(encoding="utf-8"))
    statements = [node for node in tree.body if not isinstance(node, (ast.Import, ast.ImportFrom))]
    statements = [s for s in statements if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]  # docstring
    assert len(statements) == 1 and isinstance(statements[0].value, ast.Call) and statements[0].value.func.id == "PolicyPack"
    project = (ROOT / "policy" / "PulumiPolicy.yaml").read_text(encoding="utf-8")
    assert "runtime:" in project and "version: " in project
    requirements = (ROOT / "policy" / "requirements.txt").read_text(encoding="utf-8").split()
    assert "pulumi-policy==1.21.0" in requirements  # the core is installed into policy/venv with --no-deps (docs/CI.md; tests/test_workflows.py checks)


def test_stack_policies_pin_their_violations_to_resources():
    """A stack policy's violation names the resource that should carry the fix, not just the stack."""
    fixture = load(FIXTURES / "azure-rcg-writes-chained" / "denied-chain-broken.yaml")
    assert isinstance(next(p for p in POLICIES if p.name == "azure-rcg-writes-chained"), StackValidationPolicy)
    assert [v["resource"] for v in judge("azure-rcg-writes-chained", fixture)] == [
        "azure-native:network:FirewallPolicyRuleCollectionGroup 'egress-openshift'"]


def test_an_unknown_value_never_stops_a_policy_and_what_cannot_be_judged_is_said():
    """In a real first preview some values are not known yet. Pulumi answers a policy that reads one with a single
    advisory "can't run" (a mandatory policy included), so the pack reads around them: an unknown in a resource a
    policy ignores changes nothing; an IP Group id not known yet is paired with the id the rules reference (the program
    constructs it); what still cannot be judged is its own mandatory finding, never "allowed" and never a crash."""
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

    from egress_preview.pack import run_pack
    from policy_harness import edited, recording

    unknown_elsewhere = edited(recording("dev"), [{"resource": "egress-proxy-deployment-egress-proxy-egress-proxy", "set": "metadata.namespace",
                                                   "value": UNKNOWN_STRING_VALUE}])
    broken = edited(unknown_elsewhere, [{"resource": "egress-aks", "set": "ruleCollections.1.rules.2.targetFqdns",
                                         "value": ["azure.archive.ubuntu.com", "security.ubuntu.com"]}])
    assert [(v.policy, v.level) for v in run_pack(broken) if v.level == "mandatory"] == [("required-egress-complete-before-write", "mandatory"),
                                                                                          ("required-egress-complete", "mandatory")]
    unknown_id = edited(recording("dev"), [{"resource": "egress-nodes", "set": "id", "value": UNKNOWN_STRING_VALUE},
                                           {"resource": "egress-nodes", "set": "name", "value": UNKNOWN_STRING_VALUE}])
    assert [v for v in run_pack(unknown_id) if v.level == "mandatory" or "during preview" in v.message] == []
    # The rules' reference unknown too.
    rcg = next(r for r in recording("dev").resources if r.name == "egress-aks")
    unknown_refs = edited(unknown_id, [{"resource": "egress-aks", "set": f"ruleCollections.{c}.rules.{i}.sourceIpGroups", "value": [UNKNOWN_STRING_VALUE]}
                                       for c, collection in enumerate(rcg.props["ruleCollections"]) for i, rule in enumerate(collection["rules"])
                                       if rule.get("sourceIpGroups")])
    # The engine says which IP Group the rules were computed from (propertyDependencies): resolved, judged, allowed.
    assert [v for v in run_pack(unknown_refs) if v.level == "mandatory" or "during preview" in v.message] == []
    without_dependencies = dataclasses.replace(unknown_refs, resources=[dataclasses.replace(r, property_dependencies=()) if r.name == "egress-aks" else r
                                                                        for r in unknown_refs.resources])
    found = run_pack(without_dependencies)
    assert not [v for v in found if "during preview:" in v.message]  # no "can't run"
    cannot = sorted({(v.policy, v.level, v.resource) for v in found if "cannot judge" in v.message})
    assert cannot == [("egress-not-open", "mandatory", "azure-native:network:FirewallPolicyRuleCollectionGroup 'egress-aks'"),
                      ("required-egress-complete", "mandatory", "azure-native:network:FirewallPolicyRuleCollectionGroup 'egress-aks'")]
    assert all("sourceIpGroups" in v.message for v in found if "cannot judge" in v.message)


def test_the_pack_finds_the_matrix_outside_the_project(tmp_path, monkeypatch):
    """Run from a folder that is no project (a pack installed apart from it), the pack reads the matrix next to the
    core it was installed from (egress is a namespace package: no __file__)."""
    from egress_policies.support import _matrix_dir

    monkeypatch.chdir(tmp_path)
    assert _matrix_dir() == ROOT / "matrix" and any(_matrix_dir().glob("*.yaml"))
