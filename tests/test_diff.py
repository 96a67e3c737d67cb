"""egress diff: a commit that enables one add-on shows exactly that add-on's requirements and rules added; the
comment stays under GitHub's limit; a bad base ref is one clear error."""
from __future__ import annotations

from pathlib import Path

import pytest

from egress.project import open_project
from egress_preview.diff import GITHUB_COMMENT_LIMIT, DiffError, base_snapshot, compare, markdown, truncate
from project_tree import git_repository

ROOT = Path(__file__).resolve().parents[1]
@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A git repository holding the project, one commit."""
    return git_repository(tmp_path_factory.mktemp("repo"))


def test_enabling_one_add_on_shows_exactly_its_requirements_and_rules(repo, run_cli):
    stack_file = repo / "stacks" / "Pulumi.dev.yaml"
    original = stack_file.read_text()
    stack_file.write_text(original.replace("features: [pod-api-access, azure-monitor,", "features: [pod-api-access, defender, azure-monitor,"))
    try:
        code, out, err = run_cli("diff", "--base", "HEAD", "--stack", "dev", "--project", str(repo))
    finally:
        stack_file.write_text(original)
    assert code == 0, err
    catalog = open_project(ROOT).catalog()
    defender = {e.id for e in catalog.entries if e.feature == "defender"}
    added_rows = [line for line in out.splitlines() if line.startswith("| nodes |")]
    assert added_rows and all(set(row.split(" | ")[3].split(", ")) <= defender for row in added_rows)
    reasons = out.split("#### Requirements needed by other entries now")[1].split("####")[0].split()
    assert {word.strip("+,;") for word in reasons if word.startswith("+")} <= defender  # shared hosts: only defender's ids added
    assert "**Requirements** +" in out and " / -0 · **Resources** +0 / ~3 / -0 · " in out
    assert "- **~** `azure-native:network:FirewallPolicyRuleCollectionGroup` **egress-aks**" in out
    assert "  - `+ aks-application/aks-defender-https (" in out
    assert "acl aks-defender-https dstdomain" in out  # the egress proxy's new ACL, in its ConfigMap
    assert "- **~** `kubernetes:apps/v1:Deployment` **egress-proxy-deployment-egress-proxy-egress-proxy**" in out  # rolled by the config hash
    assert "Replacements" not in out and "aws:" not in out.split("#### Resources")[1].split("#### Policy pack")[0]


def test_a_capacity_change_is_called_out_as_a_replacement():
    group = {"type": "aws:networkfirewall/ruleGroup:RuleGroup", "name": "g", "props": {"capacity": 10, "ruleGroup": {}}}
    bigger = {**group, "props": {"capacity": 20, "ruleGroup": {}}}
    result = compare({"requirements": [], "resources": [group]}, {"requirements": [], "resources": [bigger]})
    text = markdown("s", "main", result)
    assert "#### Replacements (delete and create)" in text and "**g**: capacity: 10 -> 20" in text


def test_an_rcg_rename_is_called_out_as_a_replacement():
    old = {"type": "azure-native:network:FirewallPolicyRuleCollectionGroup", "name": "egress-aks",
           "props": {"ruleCollectionGroupName": "egress-dev-aks", "ruleCollections": []}}
    new = {**old, "props": {"ruleCollectionGroupName": "egress-prod-aks", "ruleCollections": []}}
    text = markdown("s", "main", compare({"requirements": [], "resources": [old]}, {"requirements": [], "resources": [new]}))
    assert 'ruleCollectionGroupName: "egress-dev-aks" -> "egress-prod-aks"' in text


def test_comment_stays_under_githubs_limit_with_a_truncated_line():
    text = "\n".join(f"- line {i} " + "x" * 100 for i in range(2000))
    cut = truncate(text)
    assert len(cut) <= GITHUB_COMMENT_LIMIT and "**Truncated: " in cut and cut.splitlines()[-1].startswith("**Truncated")
    assert truncate("short") == "short"


def test_bad_base_ref_is_one_clear_error(repo):
    with pytest.raises(DiffError, match="git ref 'no-such-ref'.*Fix: pass a commit"):
        base_snapshot(repo, "no-such-ref", "dev")


def test_a_resource_an_alias_adopts_is_a_change_not_a_removal():
    """user-ca-bundle moved from a ConfigMap to a ConfigMapPatch with an alias: the engine updates it in place, so the
    diff shows a change, not the trust bundle's ConfigMap removed."""
    from egress_preview.diff import compare

    def snapshot(resources):
        return {"stack": "openshift", "cluster": "openshift", "allowFirewallReplacement": False, "requirements": [], "violations": [],
                "resources": resources}

    old = {"type": "kubernetes:core/v1:ConfigMap", "name": "trusted-ca", "urn": "u1", "props": {"data": {"ca-bundle.crt": "A"}}}
    new = {"type": "kubernetes:core/v1:ConfigMapPatch", "name": "trusted-ca", "urn": "u2", "props": {"data": {"ca-bundle.crt": "A"}},
           "aliases": ["kubernetes:core/v1:ConfigMap::trusted-ca"]}
    result = compare(snapshot([old]), snapshot([new]))
    assert result["resources_removed"] == [] and result["resources_added"] == []
    without_alias = compare(snapshot([old]), snapshot([{**new, "aliases": []}]))
    assert [r["type"] for r in without_alias["resources_removed"]] == ["kubernetes:core/v1:ConfigMap"]
