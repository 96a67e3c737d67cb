"""egress diff for own egress: own entries added, removed and re-approved with their approvals (owner, reference,
expiry), requirements of a source group marked as the group's, and each changed rule with the group it is for."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from egress_preview.diff import compare, markdown
from egress_preview.diff_own import RuleGroups, compare_own
from project_tree import git, git_repository

STACK = """config:
  egress-matrix:clusterName: own
  egress-matrix:targets: [azure]
  egress-matrix:azureResourceGroup: rg-own
  egress-matrix:azureSubscriptionId: 00000000-0000-0000-0000-000000000000
  egress-matrix:platforms: [aks]
  egress-matrix:cloud: azure-public
  egress-matrix:location: westeurope
  egress-matrix:nodeSources: [10.40.16.0/20]
  egress-matrix:sourceGroups:
    payments: [10.40.17.0/24]
  egress-matrix:entries:
    - {id: stripe, destination: api.stripe.com, role: payments, purpose: Payments API, owner: team-payments, reference: PAY-123, expires: "2027-03-01"}
    - {id: old, destination: old.example.com, role: payments, purpose: Old API, owner: team-payments, reference: PAY-1}
"""


def _req(role, destination, entry, owner="team-payments", reference="PAY-1", expires=None, **extra):
    approval = {"entry": entry, "owner": owner, "reference": reference, **({"expires": expires} if expires else {})}
    return {"role": role, "destination": destination, "protocol": "https", "ports": [443], "entries": [entry], "citations": [],
            "approvals": [approval], **extra}


def _snapshot(requirements, resources=()):
    return {"requirements": list(requirements), "resources": list(resources), "violations": [], "coverage": []}


def test_own_entries_added_removed_and_reapproved_with_their_approvals():
    base = [_req("payments", "api.stripe.com", "stack/stripe", reference="PAY-123", expires="2027-03-01"),
            _req("payments", "old.example.com", "stack/old")]
    head = [_req("payments", "api.stripe.com", "stack/stripe", reference="PAY-124", expires="2027-09-01"),
            _req("nodes", "api.datadoghq.eu", "stack/datadog", owner="team-platform", reference="OPS-9")]
    own = compare_own(base, head)
    assert [e["entry"] for e in own["added"]] == ["stack/datadog"] and [e["entry"] for e in own["removed"]] == ["stack/old"]
    text = markdown("own", "main", compare(_snapshot(base), _snapshot(head)))
    assert ("#### Own entries added\n\n| Entry | For | Destinations | Owner | Reference | Expires |\n|---|---|---|---|---|---|\n"
            "| `stack/datadog` | nodes | `api.datadoghq.eu` https/443 | team-platform | OPS-9 | never |") in text
    assert "#### Own entries removed" in text and "| `stack/old` | group payments | `old.example.com` https/443 | team-payments | PAY-1 | never |" in text
    assert ("- `stack/stripe` (group payments): owner team-payments, reference PAY-123, expires 2027-03-01 → owner team-payments, "
            "reference PAY-124, expires 2027-09-01") in text
    # the requirement tables: the group marked as one, the approval standing where a citation would
    assert "| group payments | `old.example.com` | https/443 | stack/old | stack/old approved by team-payments (PAY-1) |" in text
    assert "| nodes | `api.datadoghq.eu` | https/443 | stack/datadog | stack/datadog approved by team-platform (OPS-9) |" in text


def test_a_rule_is_marked_with_the_group_whose_own_entries_it_names():
    reqs = [_req("payments", "api.stripe.com", "stack/stripe"), _req("nodes", "api.datadoghq.eu", "stack/stripe-eu")]
    groups = RuleGroups(reqs)
    assert groups.of({"description": "egress-matrix entries: stack/stripe"}) == ["payments"]
    assert groups.of({"description": "egress-matrix entries: stack/stripe-eu"}) == []  # a longer id is not the group's entry
    assert groups.of("pass tls $G any -> any 443 (msg:\"x\"; metadata:egress_entry stack/stripe; sid:5;)") == ["payments"]
    squid = {"props": {"data": {"squid.conf": "# stack-core-payments-https: payments -> HTTPS 443\n#   entries: stack/stripe\n"
                                               "acl stack-core-payments-https dstdomain -n api.stripe.com\n"}}}
    headers = groups.squid_headers(squid)
    assert headers == {"stack-core-payments-https": "payments"}
    assert groups.suffix("acl stack-core-payments-https dstdomain -n api.stripe.com", headers) == " (for group payments)"
    rcg = {"type": "azure-native:network:FirewallPolicyRuleCollectionGroup", "name": "egress-own-stack", "props": {"ruleCollections": [
        {"name": "stack-application", "rules": [{"name": "stack-core-payments-https", "targetFqdns": ["api.stripe.com"],
                                                 "description": "egress-matrix entries: stack/stripe"}]}]}}
    result = compare(_snapshot([]), _snapshot(reqs, [rcg]))
    assert result["rules_added"] == [["+ stack-application/stack-core-payments-https (for group payments)"]]
    assert "  - `+ stack-application/stack-core-payments-https (for group payments)`" in markdown("own", "main", result)


@pytest.fixture
def repo(tmp_path) -> Path:
    directory = git_repository(tmp_path)
    (directory / "stacks" / "Pulumi.own.yaml").write_text(STACK)
    subprocess.run([*git(directory), "add", "-A"], check=True)
    subprocess.run([*git(directory), "commit", "-q", "-m", "own"], check=True)
    return directory


def test_egress_diff_of_a_change_to_the_stacks_own_entries(repo, run_cli, monkeypatch):
    monkeypatch.setenv("EGRESS_TODAY", "2026-11-24")
    stack = repo / "stacks" / "Pulumi.own.yaml"
    stack.write_text(STACK.replace('reference: PAY-123, expires: "2027-03-01"', 'reference: PAY-124, expires: "2027-09-01"').replace(
        "    - {id: old, destination: old.example.com, role: payments, purpose: Old API, owner: team-payments, reference: PAY-1}\n",
        "    - {id: datadog, destination: api.datadoghq.eu, role: nodes, purpose: Metrics, owner: team-platform, reference: OPS-9}\n"))
    code, out, err = run_cli("diff", "--base", "HEAD", "--stack", "own", "--project", str(repo))
    assert code == 0, err
    assert "**Requirements** +1 / -1 · **Resources** +0 / ~1 / -0" in out
    assert "| `stack/datadog` | nodes | `api.datadoghq.eu` https/443 | team-platform | OPS-9 | never |" in out
    assert "| `stack/old` | group payments | `old.example.com` https/443 | team-payments | PAY-1 | never |" in out
    assert "- `stack/stripe` (group payments): owner team-payments, reference PAY-123, expires 2027-03-01 → owner team-payments, reference PAY-124" in out
    assert "- **~** `azure-native:network:FirewallPolicyRuleCollectionGroup` **egress-stack**" in out
    assert "  - `~ stack-application/stack-core-payments-https (-old.example.com) (for group payments)`" in out
    assert "  - `+ stack-application/stack-core-https (1: api.datadoghq.eu)`" in out  # the nodes' rule: no group


def test_an_approval_cannot_break_the_table_of_requirements_added():
    from egress_preview.diff_own import requirement_source

    cell = requirement_source({"approvals": [{"entry": "stack/x", "owner": "team | ops", "reference": "OPS-1 | <!--"}]})
    assert "|" not in cell.replace("\\|", "") and "\n" not in cell
