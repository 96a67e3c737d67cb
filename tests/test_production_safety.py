"""Safe against production (issue 17, items 1-2): firewall resources are registered protected, and `egress diff` names
every change that would replace or delete one (or move a security-group rule), failing unless the stack plans a
migration. Each scenario is a stack edit the review reproduced as an outage."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from egress.project import open_project
from egress_preview.dangers import FIREWALL_KINDS
from egress_preview.diff import compare, markdown
from egress_preview.preview import preview, snapshot
from egress_preview.program import ProgramError
from project_tree import copy_project, git, git_repository



@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return copy_project(tmp_path_factory.mktemp("project"))


@pytest.fixture(scope="module")
def base(project) -> dict:
    return snapshot(preview(open_project(project), "dev"))


# 61 address requirements of the nodes: one more than a security group holds per address family (with the two 0.0.0.0/0
# rules the domain lists need, 63).
MANY_ADDRESSES = "".join(f"\n  - {{id: kt{i}, destination: 198.18.{i}.0/24, protocol: tcp, ports: [22], purpose: test, "
                         "citation: {source: kkp-proxy-whitelisting, section: kubelet - Binary}}" for i in range(61))


def _head(project: Path, *edits: tuple[str, str], matrix_tail: str = "") -> dict:
    stack_file, matrix_file = project / "stacks" / "Pulumi.dev.yaml", project / "matrix" / "kkp.yaml"
    original, original_matrix = stack_file.read_text(), matrix_file.read_text()
    text = original
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    stack_file.write_text(text)
    matrix_file.write_text(original_matrix.rstrip("\n") + matrix_tail + "\n")
    try:
        return snapshot(preview(open_project(project), "dev"))
    finally:
        stack_file.write_text(original)
        matrix_file.write_text(original_matrix)


ALLOW = ("  egress-matrix:targets:", "  egress-matrix:allowFirewallReplacement: true\n  egress-matrix:targets:")


def test_firewall_resources_are_registered_protected_and_their_rules_are_not(base):
    protected = {(r["type"], r["name"]) for r in base["resources"] if r["protect"]}
    firewall = {(r["type"], r["name"]) for r in base["resources"] if r["type"] in FIREWALL_KINDS}
    # Azure policy + 3 RCGs, AWS policy + 4 rule groups + 2 SGs, the proxy Service, the Proxy, Seed and Cluster patches
    assert protected == firewall and len(firewall) == 15
    # A security group's rules are its children: they would inherit protect, and then no endpoint could ever be removed.
    rules = [r for r in base["resources"] if r["type"] == "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"]
    assert rules and not any(r["protect"] for r in rules)
    # ... and are deleted with their group: a refused group delete cannot empty it first (the engine deletes dependents first).
    assert all(r["deletedWith"] == r["parent"] for r in rules)
    (service,) = [r for r in base["resources"] if r["type"] == "kubernetes:core/v1:Service"]
    assert service["replaceOnChanges"] == ["spec.clusterIP"] and service["props"]["spec"]["clusterIP"] == "172.30.0.10"
    assert base["allowFirewallReplacement"] is False and base["cluster"] == "dev"


def test_a_planned_migration_registers_nothing_protected(project):
    head = _head(project, ALLOW)
    assert head["allowFirewallReplacement"] is True and not any(r["protect"] for r in head["resources"])


def _danger_lines(base: dict, head: dict) -> list[str]:
    return [f"{d.kind} {d.type} {d.name}: {d.detail}" for d in compare(base, head)["dangers"]]


def test_a_resource_group_change_names_the_replaced_policy_and_what_it_does(project, base):
    head = _head(project, ("azureResourceGroup: rg-egress-dev", "azureResourceGroup: rg-egress-new"))
    result = compare(base, head)
    assert _danger_lines(base, head) == [
        'replace azure-native:network:FirewallPolicy egress-policy: resourceGroupName: "rg-egress-dev" -> "rg-egress-new"',
        *(f'replace azure-native:network:FirewallPolicyRuleCollectionGroup egress-{p}: resourceGroupName: "rg-egress-dev" -> "rg-egress-new"'
          for p in ("aks", "kkp", "openshift")),
        # the rules reference the IP Group (issue 17 review S1): named, though not protected
        'replace azure-native:network:IpGroup egress-nodes: resourceGroupName: "rg-egress-dev" -> "rg-egress-new"']
    text = markdown("dev", "main", result)
    assert "#### :rotating_light: Dangers to production" in text
    assert "is emptied before its delete fails: all egress denied. Associate the firewall with the new policy first" in text
    assert result["blocking"] == result["dangers"]


def test_a_cluster_rename_is_a_replacement_of_every_firewall_resource_not_unrelated_add_and_remove(project, base):
    head = _head(project, ("clusterName: dev", "clusterName: dev2"))
    lines = _danger_lines(base, head)
    assert "replace aws:ec2/securityGroup:SecurityGroup egress-dev-nodes-0: renamed to egress-dev2-nodes-0" in lines
    assert "replace aws:networkfirewall/ruleGroup:RuleGroup egress-dev-nodes-tls-sni: renamed to egress-dev2-nodes-tls-sni" in lines
    assert ('replace azure-native:network:FirewallPolicyRuleCollectionGroup egress-aks: ruleCollectionGroupName: "egress-dev-aks" -> '
            '"egress-dev2-aks"') in lines
    assert 'replace azure-native:network:IpGroup egress-nodes: ipGroupsName: "egress-dev-nodes" -> "egress-dev2-nodes"' in lines  # referenced
    assert len(lines) == 11 and all(line.startswith("replace ") for line in lines)  # the created Azure policy keeps its name


def test_dropping_a_target_names_every_deleted_firewall_resource(project, base):
    head = _head(project, ("targets: [azure, aws, kubernetes]", "targets: [azure, kubernetes]"))
    lines = _danger_lines(base, head)
    assert len(lines) == 7 and all(line.startswith("delete aws:") and line.endswith("its target was dropped") for line in lines)


def test_a_cluster_ip_change_is_a_replacement_of_the_proxy_service(project, base):
    head = _head(project, ("egressProxyClusterIp: 172.30.0.10", "egressProxyClusterIp: 172.30.0.11"))
    (line,) = [line for line in _danger_lines(base, head)]
    assert line == 'replace kubernetes:core/v1:Service egress-proxy-service-egress-proxy-egress-proxy: spec.clusterIP: "172.30.0.10" -> "172.30.0.11"'
    assert "lose it" in markdown("dev", "main", compare(base, head))


def test_an_endpoint_change_is_no_danger(project, base):
    head = _head(project, ("features: [pod-api-access, azure-monitor,", "features: [pod-api-access, defender, azure-monitor,"))
    assert compare(base, head)["dangers"] == [] and compare(base, head)["rule_moves"] == []


def test_crossing_60_security_group_rules_fails_closed(project):
    with pytest.raises(ProgramError, match=r"egress-dev-nodes-0 would hold 63 IPv4 rules.*fail closed.*awsSecurityGroupCounts to nodes=2"):
        _head(project, matrix_tail=MANY_ADDRESSES)


def test_attaching_a_second_group_flags_every_rule_that_changes_group(project):
    counts = ("  egress-matrix:targets:", "  egress-matrix:awsSecurityGroupCounts: [nodes=2]\n  egress-matrix:targets:")
    created = _head(project, counts, matrix_tail=MANY_ADDRESSES.split("\n  - {id: kt55,")[0])  # 55 rules: still one group
    assert [len([r for r in created["resources"] if r.get("parent") == g["urn"]]) for g in created["resources"]
            if g["type"] == "aws:ec2/securityGroup:SecurityGroup" and g["name"].startswith("egress-dev-nodes")] == [57, 0]
    both = (counts[0], counts[1].replace("\n", "\n  egress-matrix:awsSecurityGroupsAttached: [nodes=2]\n", 1))
    attached = _head(project, both, matrix_tail=MANY_ADDRESSES)
    result = compare(created, attached)
    moves = result["rule_moves"]
    assert moves and {m.old_group for m in moves} == {"egress-dev-nodes-0"} and {m.new_group for m in moves} == {"egress-dev-nodes-1"}
    assert result["dangers"] == []
    assert "#### Security-group rules changing group" in markdown("dev", "main", result)


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return git_repository(tmp_path_factory.mktemp("repo"))  # this test's own: it commits to it


def test_egress_diff_exits_non_zero_on_a_danger_unless_the_stack_allows_it(repo, run_cli):
    stack_file = repo / "stacks" / "Pulumi.dev.yaml"
    original = stack_file.read_text()
    dropped = original.replace("targets: [azure, aws, kubernetes]", "targets: [azure, kubernetes]")
    try:
        stack_file.write_text(dropped)
        code, out, err = run_cli("diff", "--base", "HEAD", "--stack", "dev", "--project", str(repo))
        assert code == 1 and "#### :rotating_light: Dangers to production" in out
        assert "7 change(s) would replace, delete or strand a firewall resource; the first: deletes the security group egress-dev-nodes-0" in " ".join(err.split())
        # The flag in the same change does not make a deletion safe: the resource is not registered, so the engine reads its
        # protection from the state. An update that unprotects it first (the flag deployed with the target kept) does.
        stack_file.write_text(dropped.replace(*ALLOW))
        code, out, err = run_cli("diff", "--base", "HEAD", "--stack", "dev", "--project", str(repo))
        assert code == 1 and "- **delete** (blocks)" in out
        stack_file.write_text(original.replace(*ALLOW))
        subprocess.run([*git(repo), "commit", "-q", "-am", "unprotect for the migration"], check=True)
        stack_file.write_text(dropped.replace(*ALLOW))
        code, out, err = run_cli("diff", "--base", "HEAD", "--stack", "dev", "--project", str(repo))
        assert code == 0, err
        assert "all allowed by `allowFirewallReplacement`" in out and "was already set in the base: remove it" in out
    finally:
        stack_file.write_text(original)  # the repository is this test's own (module fixture used by it alone)


def test_a_replacement_is_allowed_by_the_flag_in_the_same_change_and_a_stale_flag_is_named(project, base):
    moved = ("azureResourceGroup: rg-egress-dev", "azureResourceGroup: rg-egress-new")
    head = _head(project, moved, ALLOW)
    result = compare(base, head)
    assert len(result["dangers"]) == 5 and result["blocking"] == []  # the policy, 3 groups, the IP Group their rules reference
    stale = compare(_head(project, ALLOW), head)
    assert "was already set in the base: remove it once the migration is applied" in markdown("dev", "main", stale)


def test_rules_moving_into_a_group_created_in_the_same_change_block_whatever_the_flag(project):
    counts = ("  egress-matrix:targets:", "  egress-matrix:awsSecurityGroupCounts: [nodes=2]\n  egress-matrix:targets:")
    one_group = _head(project, matrix_tail=MANY_ADDRESSES.split("\n  - {id: kt40,")[0])
    both = (counts[0], counts[1].replace("\n", "\n  egress-matrix:awsSecurityGroupsAttached: [nodes=2]\n  egress-matrix:allowFirewallReplacement: true\n", 1))
    at_once = _head(project, both, matrix_tail=MANY_ADDRESSES)
    result = compare(one_group, at_once)
    (danger,) = result["blocking"]
    assert danger.kind == "move" and danger.name == "egress-dev-nodes-1" and "no network interface carries it yet" in danger.line()


def test_the_first_update_of_this_release_says_nothing_is_protected_yet(base):
    unprotected = {**base, "resources": [{**r, "protect": False} for r in base["resources"]]}
    head = {**base, "resources": [r for r in base["resources"] if not r["type"].startswith("aws:")]}
    text = markdown("dev", "main", compare(unprotected, head))
    assert "7 not yet protected in the stack's state (the first update of this release records it), so `pulumi up` would go ahead" in text
