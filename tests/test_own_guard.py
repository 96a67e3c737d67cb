"""Guard rails for own egress (egress/targets/guard.py): an own entry that allows any destination, addresses beyond
maxPublicShare, a public suffix or more than maxPortSpan ports is one clear error unless it says why (broad), and
allowBroadEgress does not lift that; a source group that is the internet is refused like a role's sources; an own
entry that repeats a vendor entry's flow is reported."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from egress.project import Project
from egress.targets import TARGETS
from egress.targets.guard import BreadthError, check_breadth, duplicate_notices, duplicates, own_entry_findings

BASE = """config:
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
"""


def _stack(project: Path, entries: list[dict], extra: str = "", name: str = "own") -> Project:
    text = BASE + extra + "  egress-matrix:entries:\n" + "".join(f"    - {json.dumps(e)}\n" for e in entries)
    (project / "stacks" / f"Pulumi.{name}.yaml").write_text(text)
    return Project(project)


def _entry(**fields) -> dict:
    return {"id": "wide", "destination": "api.stripe.com", "role": "payments", "purpose": "Payments API", "owner": "team-payments",
            "reference": "PAY-123", **fields}


WIDE = [
    ({"destination": "*"}, "field 'destination' = '*' (https/443) allows any destination"),
    ({"destination": "0.0.0.0/0", "protocol": "tcp", "ports": [443]},
     "field 'destination' = '0.0.0.0/0' (tcp/443) covers 100% of public IPv4 (more than maxPublicShare 1%)"),
    ({"destination": "2000::/3", "protocol": "tcp", "ports": [443]},
     "field 'destination' = '2000::/3' (tcp/443) covers 100% of public IPv6 (more than maxPublicShare 1%)"),
    ({"destination": "co.uk"}, "field 'destination' = 'co.uk' (https/443) is or covers the public suffix 'co.uk': it allows every domain under it"),
    ({"destination": "*.co.uk"}, "field 'destination' = '*.co.uk' (https/443) is or covers the public suffix 'co.uk'"),
    ({"protocol": "tcp", "ports": ["1-65535"]},
     "field 'ports' = '1-65535' (tcp to api.stripe.com) opens 65535 ports (more than maxPortSpan 1024)"),
]


@pytest.mark.parametrize("fields, problem", WIDE, ids=[w[1].split("'")[3] for w in WIDE])
def test_a_wide_stack_entry_is_one_clear_error_naming_key_value_and_fix(project_copy, run_cli, fields, problem):
    _stack(project_copy, [_entry(**fields)])
    out_dir = project_copy / "out"
    code, out, err = run_cli("render", "--stack", "own", "--out", str(out_dir), "--project", str(project_copy))
    message = " ".join(err.split())
    assert code == 1 and out == "" and "Traceback" not in err and not out_dir.exists()  # nothing written
    assert f"stacks/Pulumi.own.yaml: stack 'own': config.egress-matrix:entries[0] 'wide' (own entry stack/wide): {problem}" in message
    assert "Fix: narrow it to what the workload really calls" in message and "give the entry broad: '<reason>'" in message


def test_broad_with_a_reason_accepts_it_and_allow_broad_egress_does_not(project_copy):
    project = _stack(project_copy, [_entry(destination="*.co.uk", broad="partners on many UK domains, reviewed quarterly")])
    catalog, profile, requirements = project.requirements("own")
    plan = TARGETS["azure"].compile(catalog, profile, requirements, "test")  # the guard runs first; it passes
    assert [rule.target_fqdns for group in plan.groups if group.platform == "stack" for collection in group.collections
            for rule in collection.rules] == [("*.co.uk",)]
    project = _stack(project_copy, [_entry(destination="*.co.uk")], extra='  egress-matrix:allowBroadEgress: "lab stack, anything goes"\n')
    catalog, profile, requirements = project.unchecked_requirements("own")
    with pytest.raises(BreadthError, match=r"own entry stack/wide\): field 'destination' = '\*\.co\.uk'"):
        check_breadth(catalog, profile, requirements, "test")


def test_a_narrow_own_entry_and_vendor_rows_pass(project_copy):
    project = _stack(project_copy, [_entry(), _entry(id="metrics", destination="10.99.0.0/16", protocol="tcp", ports=["8000-9000"])])
    catalog, profile, requirements = project.requirements("own")
    assert own_entry_findings(catalog, profile, requirements) == []
    check_breadth(catalog, profile, requirements, "test")


def test_an_entry_of_a_listed_catalog_is_named_by_its_catalog_and_file(project_copy, run_cli):
    (project_copy / "own-teams").mkdir()
    (project_copy / "own-teams" / "payments.yaml").write_text(
        "schema: 1\nkind: platform\nplatform: payments\nentries:\n"
        "  - {id: everything, role: payments, level: required, destination: '*', protocol: https, purpose: Anything,"
        " approval: {owner: team-payments, reference: PAY-9}}\n")
    _stack(project_copy, [_entry()], extra="  egress-matrix:catalogs: [own-teams]\n")
    code, out, err = run_cli("catalog", "check", "--stack", "own", "--project", str(project_copy))
    message = " ".join(err.split())
    assert code == 1 and out == ""
    assert (f"stacks/Pulumi.own.yaml: stack 'own': own-teams/payments.yaml: entry 'everything' (line 5) of own catalog "
            "'payments' (listed in egress-matrix:catalogs) (own entry payments/everything): field 'destination' = '*' (https/443) allows "
            "any destination") in message


def test_a_source_group_that_is_the_internet_is_refused_like_a_role(project_copy):
    project = _stack(project_copy, [_entry()])
    stack = project.stack_file("own")
    stack.write_text(stack.read_text().replace("payments: [10.40.17.0/24]", "payments: [0.0.0.0/1, 128.0.0.0/1]"))
    catalog, profile, requirements = project.unchecked_requirements("own")
    with pytest.raises(BreadthError, match=r"egress-matrix:sourceGroups\.payments = \['0\.0\.0\.0/1', '128\.0\.0\.0/1'\] covers 100% of "
                                           r"public IPv4 .* open relay"):
        check_breadth(catalog, profile, requirements, "test")


def test_an_own_entry_repeating_a_vendor_flow_is_reported_once_per_flow(project_copy):
    project = _stack(project_copy, [_entry(id="mcr", destination="mcr.microsoft.com", role="nodes"),
                                    _entry(id="mcr-payments", destination="mcr.microsoft.com")])  # a group's own flow: no duplicate
    catalog, _, requirements = project.requirements("own")
    assert [(own, vendor, req.destination) for own, vendor, req in duplicates(catalog, requirements)] == [
        ("stack/mcr", ("aks-public-mcr",), "mcr.microsoft.com")]  # not again for the hosts mcr.microsoft.com's expansion implies
    assert duplicate_notices(catalog, requirements) == [
        "own entry stack/mcr duplicates vendor entry aks-public-mcr: nodes -> mcr.microsoft.com https/443 is required already; remove "
        "the own entry (the vendor entry keeps it allowed) or keep it deliberately (it stays allowed if the vendor entry goes)"]
