"""egress explain for own egress: a destination an own entry needs names the entry's catalog, owner, reference, expiry,
where it is written and the source group; --role takes a group; --rule names own entries with their approvals (an
own entry has no citation), on Azure and on AWS (whose metadata carries 'egress_entry stack/stripe')."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from egress.explain import ExplainError, explain_destination, explain_rule
from egress.project import Project
from egress.targets import TARGETS

AZURE = """config:
  egress-matrix:platforms: [aks]
  egress-matrix:cloud: azure-public
  egress-matrix:location: westeurope
  egress-matrix:clusterName: own
  egress-matrix:targets: [azure]
  egress-matrix:azureResourceGroup: rg-own
  egress-matrix:azureSubscriptionId: 00000000-0000-0000-0000-000000000000
  egress-matrix:nodeSources: [10.40.16.0/20]
  egress-matrix:sourceGroups:
    payments: [10.40.17.0/24]
  egress-matrix:catalogs: [own-teams]
  egress-matrix:entries:
    - {id: stripe, destination: api.stripe.com, role: payments, purpose: Payments API, owner: team-payments, reference: PAY-123, expires: "2027-03-01"}
"""

TEAM = """schema: 1
kind: platform
platform: datadog-eu
title: Datadog from the platform team
entries:
  - id: intake
    role: nodes
    level: required
    destination: api.datadoghq.eu
    protocol: https
    purpose: Metrics
    approval: {owner: team-platform, reference: https://tickets.example.com/OPS-9}
"""

AWS = """config:
  aws:region: eu-west-1
  egress-matrix:platforms: [kkp]
  egress-matrix:awsRegion: eu-west-1
  egress-matrix:clusterName: own-aws
  egress-matrix:nodeSources: [10.60.0.0/16]
  egress-matrix:targets: [aws]
  egress-matrix:awsRoles: [nodes]
  egress-matrix:awsNetworkFirewallRules: suricata
  egress-matrix:awsFirewallPolicy: true
  egress-matrix:awsVpcId: vpc-0a1b2c3d4e5f60718
  egress-matrix:sourceGroups:
    payments: [10.60.17.0/24]
  egress-matrix:entries:
    - {id: stripe, destination: api.stripe.com, role: payments, purpose: Payments API, owner: team-payments, reference: PAY-123}
"""


@pytest.fixture
def own(project_copy: Path, monkeypatch) -> Path:
    (project_copy / "own-teams").mkdir()
    (project_copy / "own-teams" / "datadog-eu.yaml").write_text(TEAM)
    (project_copy / "stacks" / "Pulumi.own.yaml").write_text(AZURE)
    (project_copy / "stacks" / "Pulumi.own-aws.yaml").write_text(AWS)
    monkeypatch.setenv("EGRESS_TODAY", "2026-11-24")
    return project_copy


def _artefacts(project: Project, stack: str):
    catalog, profile, reqs = project.requirements(stack)
    return catalog, profile, reqs, {name: TARGETS[name].render(TARGETS[name].compile(catalog, profile, reqs, stack)) for name in profile.targets}


def test_explain_names_owner_reference_expiry_catalog_and_group(own, run_cli):
    """The acceptance line of issue 19: `egress explain api.stripe.com:443 --stack <it>` names the owner and reference."""
    code, out, err = run_cli("explain", "api.stripe.com:443", "--stack", "own", "--project", str(own))
    assert code == 0, err
    assert out.splitlines()[:7] == [
        "api.stripe.com:443 (stack own)",
        "Required by 1 requirement(s):",
        "  payments -> api.stripe.com https/443, required (exact)",
        "    entries: stack/stripe",
        "    why: Payments API",
        "    approved: stack/stripe: owner team-payments, reference PAY-123, expires 2027-03-01 (catalog stack; written in "
        "config.egress-matrix:entries[0] 'stripe')",
        "    source group: payments (10.40.17.0/24)",
    ]
    assert ("  azure payments -> api.stripe.com https/443: allowed by rule collection group egress-own-stack, collection stack-application, "
            "rule stack-core-payments-https") in out


def test_json_carries_the_approval_and_the_group(own, run_cli):
    code, out, err = run_cli("explain", "api.datadoghq.eu", "--stack", "own", "--format", "json", "--project", str(own))
    assert code == 0, err
    need = json.loads(out)["requirements"][0]
    assert (need["role"], need["citations"], need["group"], need["sources"]) == ("nodes", [], None, [])
    assert need["approvals"] == [{"entry": "datadog-eu/intake", "catalog": "datadog-eu", "owner": "team-platform",
                                  "reference": "https://tickets.example.com/OPS-9", "expires": None,
                                  "written": "own-teams/datadog-eu.yaml: entry 'intake' (line 6) of own catalog 'datadog-eu' "
                                             "(listed in egress-matrix:catalogs)"}]


def test_role_takes_a_source_group_of_the_stack(own):
    catalog, profile, reqs, artefacts = _artefacts(Project(own), "own")
    by_group = explain_destination(catalog, profile, reqs, artefacts, "api.stripe.com:443", role="payments")
    assert [n.entry_ids for n in by_group.requirements] == [("stack/stripe",)]
    by_nodes = explain_destination(catalog, profile, reqs, artefacts, "api.stripe.com:443", role="nodes")
    assert not by_nodes.required and [(d.role, d.outcome) for d in by_nodes.decisions] == [("nodes", "denied")]  # the nodes do not get it
    with pytest.raises(ExplainError, match=r"unknown role or source group 'paymnts'\. Fix: use one of: nodes, control-plane, seed, bastion, "
                                           r"workstation; or a source group of the stack: payments"):
        explain_destination(catalog, profile, reqs, artefacts, "api.stripe.com:443", role="paymnts")


def test_a_rule_names_its_own_entries_with_their_approvals(own, run_cli):
    code, out, err = run_cli("explain", "--rule", "stack-core-payments-https", "--stack", "own", "--project", str(own))
    assert code == 0, err
    assert ("    stack/stripe (stack, for payments): Payments API [approved: owner team-payments, reference PAY-123, expires 2027-03-01 "
            "(catalog stack; written in config.egress-matrix:entries[0] 'stripe')]") in out
    assert "    payments -> api.stripe.com https/443, required" in out


def test_an_aws_suricata_rule_gives_the_whole_namespaced_id(own):
    catalog, profile, reqs, artefacts = _artefacts(Project(own), "own-aws")
    line = next(line for line in artefacts["aws"]["aws/rules.suricata"].splitlines() if "api.stripe.com" in line)
    sid = line.split("sid:")[1].split(";")[0]
    result = explain_rule(catalog, reqs, artefacts, f"sid:{sid}", profile)
    (match,) = result.matches
    assert [(e.id, e.known, e.approval.owner, e.approval.reference) for e in match.entries] == [("stack/stripe", True, "team-payments", "PAY-123")]
    assert [(n.role, n.destination, n.group) for n in match.requirements] == [("payments", "api.stripe.com", "payments")]
