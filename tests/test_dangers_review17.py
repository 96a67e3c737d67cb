"""egress diff names the changes a hostile review (issue 17) found it let through with exit 0: rules moved into a new
source group's security group or into a new Network Firewall rule group, an entry moved into an Azure group written
later in the chain, a group taking a priority another leaves, a new subscription or provider, a referenced IP Group
replaced, and the groups replaced with their policy. Each builds the base and the head stack as tests/
test_production_safety.py does, from a copy of the project."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from egress.project import open_project
from egress_preview.diff import compare, markdown
from egress_preview.preview import preview, snapshot
from project_tree import ROOT, copy_project, git, git_repository


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    directory = copy_project(tmp_path_factory.mktemp("project"))
    shutil.copytree(ROOT / "teams", directory / "teams")
    return directory


def _snap(project: Path, stack: str, *edits: tuple[str, str], files: dict[str, str] | None = None) -> dict:
    """The stack's preview with ``edits`` to its stack file and ``files`` written (both undone after)."""
    stack_file = project / "stacks" / f"Pulumi.{stack}.yaml"
    original, saved = stack_file.read_text(), {}
    text = original
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    stack_file.write_text(text)
    for path, content in (files or {}).items():
        target = project / path
        saved[target] = target.read_text() if target.exists() else None
        target.write_text(content)
    try:
        return snapshot(preview(open_project(project), stack))
    finally:
        stack_file.write_text(original)
        for target, content in saved.items():
            target.unlink() if content is None else target.write_text(content)


def _dangers(result: dict) -> list[tuple[str, str, str]]:
    return [(d.kind, d.type.rsplit(":", 1)[1], d.name) for d in result["dangers"]]


TARGETS = "  egress-matrix:targets:"
STRIPE = ("    - {id: stripe, destination: 198.51.100.7, protocol: tcp, ports: [8443], purpose: card payments, owner: team-payments, "
          "reference: SEC-1ROLE}\n")
# the nodes' rule group keeps its deployed capacity, so the only change is the entry's move
PIN = "  egress-matrix:awsRuleGroupCapacities: ['egress-kkp-eu-west-1-nodes-rules=100']\n"


def test_a_rule_moved_into_a_new_source_groups_security_group_blocks_whatever_the_flag(project):
    base = _snap(project, "kkp-aws", (TARGETS, PIN + "  egress-matrix:entries:\n" + STRIPE.replace("ROLE", "") + TARGETS))
    moved = PIN + "  egress-matrix:sourceGroups: {payments: [10.60.17.0/24]}\n  egress-matrix:entries:\n" + STRIPE.replace("ROLE", ", role: payments")
    for allow in ("", "  egress-matrix:allowFirewallReplacement: true\n"):
        result = compare(base, _snap(project, "kkp-aws", (TARGETS, allow + moved + TARGETS)))
        security_group = [d for d in result["blocking"] if d.type == "aws:ec2/securityGroup:SecurityGroup"]
        assert [(d.kind, d.name) for d in security_group] == [("move", "egress-kkp-eu-west-1-payments-0")]
        assert "1 rule(s) from egress-kkp-eu-west-1-nodes-0" in security_group[0].detail
        assert "nodes -> payments rule tcp-8443-198.51.100.7_32: egress-kkp-eu-west-1-nodes-0 -> egress-kkp-eu-west-1-payments-0" in \
            [m.line() for m in result["rule_moves"]]


# a second stack entry keeps the stack's group (without it the group is deleted, after every write: a deletion, named)
OTHER = ("  egress-matrix:entries:\n", "  egress-matrix:entries:\n    - {id: statuspage, destination: status.contoso.example, purpose: status "
         "page, owner: sre-team, reference: OPS-1}\n")


def test_an_entry_moved_into_a_later_written_azure_group_is_a_gap_and_blocks(project):
    base = _snap(project, "aks-contoso", OTHER)
    stack = (project / "stacks" / "Pulumi.aks-contoso.yaml").read_text()
    entry = stack[stack.index("    - id: pagerduty-events"):stack.index("  egress-matrix:targets:")]
    team = (project / "teams" / "payments" / "payments.yaml").read_text()
    moved = team.rstrip("\n") + "\n  - id: pagerduty-events\n    destination: events.eu.pagerduty.com\n    role: nodes\n" \
        "    purpose: Alertmanager pages the on-call engineer\n    approval: {owner: sre-team, reference: \"https://tickets.contoso.example/OPS-2210\"}\n"
    head = _snap(project, "aks-contoso", OTHER, (entry, ""), files={"teams/payments/payments.yaml": moved})
    result = compare(base, head)
    assert ("move", "FirewallPolicyRuleCollectionGroup", "egress-payments") in _dangers(result)
    (danger,) = [d for d in result["blocking"] if d.name == "egress-payments"]
    assert "from egress-stack, written before it" in danger.detail and "events.eu.pagerduty.com" in danger.detail
    assert "add the entry to its new place first (keep the old one), then remove the old one in a later update" in danger.line()
    # the two-step way: added first (both groups allow it) is no danger, removed later is none either
    both = _snap(project, "aks-contoso", OTHER, files={"teams/payments/payments.yaml": moved})
    assert compare(base, both)["dangers"] == [] and compare(both, head)["dangers"] == []


def _aaa(project: Path) -> str:
    """Another team file in the payments folder, sorting before payments.yaml."""
    return (project / "teams" / "payments" / "payments.yaml").read_text().replace("platform: payments", "platform: aaa") \
        .replace("stripe-files", "aaa-files").replace("stripe-api", "aaa-api").replace(".stripe.com", ".aaa.example")


def test_a_team_file_that_sorts_earlier_taking_another_groups_priority_blocks(project):
    base = _snap(project, "aks-contoso")
    aaa = _aaa(project)
    result = compare(base, _snap(project, "aks-contoso", files={"teams/payments/aaa.yaml": aaa}))
    (danger,) = [d for d in result["blocking"] if d.kind == "priority"]
    assert danger.name == "egress-aaa" and danger.detail.startswith("5200, which egress-payments holds")
    assert "azure_band: <20-646>" in danger.line()
    # a pinned band keeps every group where it is: no danger
    pinned = aaa.replace("platform: aaa\n", "platform: aaa\nazure_band: 60\n")
    assert compare(base, _snap(project, "aks-contoso", files={"teams/payments/aaa.yaml": pinned}))["dangers"] == []


def test_a_new_subscription_replaces_the_created_policy_its_groups_and_ip_groups(project):
    base = _snap(project, "dev")
    head = _snap(project, "dev", ("azureSubscriptionId: 00000000-0000-0000-0000-000000000000", "azureSubscriptionId: 44444444-4444-4444-4444-444444444444"))
    result = compare(base, head)
    found = _dangers(result)
    assert ("replace", "FirewallPolicy", "egress-policy") in found and ("replace", "IpGroup", "egress-nodes") in found
    assert [d for d in found if d[1] == "FirewallPolicyRuleCollectionGroup"] == [
        ("replace", "FirewallPolicyRuleCollectionGroup", f"egress-{p}") for p in ("aks", "kkp", "openshift")]
    (policy,) = [d for d in result["dangers"] if d.name == "egress-policy"]
    assert "subscription: 00000000-0000-0000-0000-000000000000 -> 44444444-4444-4444-4444-444444444444" in policy.detail
    assert policy in result["blocking"]


def test_dropping_the_policy_subscriptions_provider_replaces_every_group(project):
    base = _snap(project, "aks-contoso")
    head = _snap(project, "aks-contoso", ("azureSubscriptionId: 33333333-3333-3333-3333-333333333333",
                                          "azureSubscriptionId: 11111111-1111-1111-1111-111111111111"))
    result = compare(base, head)
    groups = [d for d in result["blocking"] if d.type.endswith("FirewallPolicyRuleCollectionGroup")]
    assert len(groups) == 6 and all("provider: egress-policy-subscription -> default" in d.detail for d in groups)


def test_a_referenced_ip_group_replaced_under_a_hub_policy_blocks(project):
    base = _snap(project, "aks-spoke")
    result = compare(base, _snap(project, "aks-spoke", ("location: westeurope", "location: northeurope")))
    (danger,) = result["blocking"]
    assert (danger.kind, danger.name) == ("replace", "egress-nodes") and 'location: "westeurope" -> "northeurope"' in danger.detail
    assert "IpGroupsHasFirewallPolicyReferences" in danger.line()


def test_a_location_change_names_the_groups_replaced_with_the_created_policy(project):
    base = _snap(project, "dev")
    result = compare(base, _snap(project, "dev", ("location: westeurope", "location: northeurope")))
    groups = [d for d in result["dangers"] if d.type.endswith("FirewallPolicyRuleCollectionGroup")]
    assert len(groups) == 3 and all(d.detail == "its policy egress-policy is replaced" for d in groups)


def test_egress_diff_exits_1_on_a_move_into_a_later_group(tmp_path, run_cli):
    (tmp_path / "repo").mkdir()
    repo = git_repository(tmp_path / "repo")
    shutil.copytree(ROOT / "teams", repo / "teams")
    subprocess.run([*git(repo), "add", "teams"], check=True)
    subprocess.run([*git(repo), "commit", "-q", "-m", "teams"], check=True)
    aaa = _aaa(repo)
    (repo / "teams" / "payments" / "aaa.yaml").write_text(aaa)
    code, out, err = run_cli("diff", "--base", "HEAD", "--stack", "aks-contoso", "--project", str(repo))
    assert code == 1 and "- **priority** (blocks)" in out and "egress-aaa takes priority 5200" in " ".join(err.split())


def _source_groups(per_group: int, external_policy: bool) -> list[tuple[str, str]]:
    groups = "  egress-matrix:sourceGroups: {" + ", ".join(f"g{k}: [10.60.{k + 20}.0/24]" for k in range(4)) + "}\n"
    entries = "  egress-matrix:entries:\n" + "".join(
        f"    - {{id: e{k}-{i}, destination: 198.51.{k}.{i}, protocol: tcp, ports: [443], purpose: test entry, owner: t, reference: T-1, "
        f"role: g{k}}}\n" for k in range(4) for i in range(per_group))
    edits = [(TARGETS, groups + entries + TARGETS)]
    if external_policy:
        edits.append(("  egress-matrix:awsFirewallPolicy: true\n",
                      "  egress-matrix:awsFirewallPolicyArn: arn:aws:network-firewall:eu-west-1:123456789012:firewall-policy/hub\n"))
    return edits


@pytest.mark.parametrize("external_policy", [False, True])
def test_source_groups_outgrowing_one_rule_group_move_rules_into_a_new_one_and_block(project, monkeypatch, external_policy):
    monkeypatch.setattr("egress.targets.aws.groups.MAX_RULES_STRING_BYTES", 20_000)  # ~140 rules, not ~7,500
    base = _snap(project, "kkp-aws", *_source_groups(30, external_policy))
    allow = (TARGETS, "  egress-matrix:allowFirewallReplacement: true\n" + TARGETS)
    result = compare(base, _snap(project, "kkp-aws", *_source_groups(50, external_policy), allow))
    moves = [d for d in result["blocking"] if d.kind == "move"]
    assert moves and all(d.type == "aws:networkfirewall/ruleGroup:RuleGroup" and d.name.startswith("egress-kkp-eu-west-1-groups-")
                         and "from egress-kkp-eu-west-1-groups-rules: sid " in d.detail for d in moves)
    assert ("does not reference it" if external_policy else "only then is the policy this stack creates updated") in moves[0].line()
    moved = sum(len(m.rules) for m in result["rule_group_moves"])
    assert moved == sum(int(d.detail.split(" rule(s)")[0]) for d in moves) > 0
    assert f"{moved} rule(s) leave one rule group for another" in markdown("kkp-aws", "main", result)
