"""A stack's own catalogs: files, folders, a package's entry point, stack entries; namespacing, bands, expiry."""
from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

import pytest

from egress.catalog.own import expiry_notices
from egress.project import Project
from egress.targets.azure.compile import azure_band

ROOT = Path(__file__).resolve().parents[1]

PAYMENTS = """schema: 1
kind: platform
platform: payments
title: Payments team
features:
  stripe-webhooks: Stripe webhooks signing keys
defaults: {role: payments, level: required, protocol: https}
entries:
  - id: stripe-api
    destination: api.stripe.com
    purpose: Charges and refunds
    approval: {owner: team-payments, reference: PAY-101}
  - id: stripe-files
    destination: files.stripe.com
    feature: stripe-webhooks
    purpose: Dispute evidence uploads
    approval: {owner: team-payments, reference: PAY-102, expires: 2027-01-31}
  - id: stripe-old
    destination: old.stripe.com
    purpose: A retired endpoint
    approval: {owner: team-payments, reference: PAY-099, expires: 2026-12-01}
"""

STACK = """config:
  egress-matrix:platforms: [kkp]
  egress-matrix:nodeSources: [10.0.0.0/16]
  egress-matrix:sourceGroups:
    payments: [10.0.32.0/24]
  egress-matrix:catalogs: [own-teams]
  egress-matrix:entries:
    - id: datadog-eu
      destination: api.datadoghq.eu
      purpose: Metrics from the payments pods
      role: payments
      owner: team-payments
      reference: https://tickets.example.com/PAY-7
"""


@pytest.fixture
def own_project(project_copy: Path, monkeypatch) -> Project:
    (project_copy / "own-teams").mkdir()
    (project_copy / "own-teams" / "payments.yaml").write_text(PAYMENTS)
    (project_copy / "stacks" / "Pulumi.own.yaml").write_text(STACK)
    monkeypatch.setenv("EGRESS_TODAY", "2027-01-10")
    return Project(project_copy)


def test_own_entries_resolve_namespaced_for_their_group(own_project):
    catalog, profile, requirements = own_project.requirements("own")
    own = {r.destination: r for r in requirements if r.approvals}
    assert sorted(own) == ["api.datadoghq.eu", "api.stripe.com"]  # the feature is off; the expired entry is out
    stripe = own["api.stripe.com"]
    assert (stripe.role, stripe.sources, stripe.entry_ids, stripe.platforms, stripe.citations) == (
        "payments", ("10.0.32.0/24",), ("payments/stripe-api",), ("payments",), ())
    assert [(a.owner, a.reference, a.expires) for a in stripe.approvals] == [("team-payments", "PAY-101", None)]
    assert own["api.datadoghq.eu"].entry_ids == ("stack/datadog-eu",)
    assert catalog.expired == ("payments/stripe-old",)
    # requirements: roles first in their fixed order, then groups by name
    assert [r.role for r in requirements][-2:] == ["payments", "payments"]


def test_an_own_feature_turns_on_like_a_vendor_one(own_project):
    stack = own_project.stack_file("own")
    stack.write_text(stack.read_text().replace("  egress-matrix:catalogs:", "  egress-matrix:features: [stripe-webhooks]\n  egress-matrix:catalogs:"))
    _, _, requirements = own_project.requirements("own")
    files = next(r for r in requirements if r.destination == "files.stripe.com")
    assert files.approvals[0].expires == datetime.date(2027, 1, 31)


def test_expiry_leaves_entries_out_on_the_day_and_warns_within_30_days(own_project, monkeypatch):
    catalog, _, _ = own_project.requirements("own")
    assert expiry_notices(catalog, datetime.date(2027, 1, 10)) == [
        "own entry payments/stripe-old has expired and is no longer allowed: renew its approval (a new 'expires') or remove it",
        "own entry payments/stripe-files expires on 2027-01-31 (21 days; owner team-payments, reference PAY-102, expires 2027-01-31): "
        "after that it is no longer allowed; renew the approval or remove it",
    ]
    monkeypatch.setenv("EGRESS_TODAY", "2026-11-30")  # the day before: still allowed, and warned about
    catalog, _, _ = own_project.requirements("own")
    assert catalog.expired == () and any(e.id == "payments/stripe-old" for e in catalog.entries)
    assert expiry_notices(catalog, datetime.date(2026, 11, 30))[0].startswith("own entry payments/stripe-old expires on 2026-12-01 (1 days")
    monkeypatch.setenv("EGRESS_TODAY", "2026-12-01")  # on the date itself it no longer resolves
    assert own_project.requirements("own")[0].expired == ("payments/stripe-old",)


def test_own_catalogs_take_azure_bands_after_the_vendor_ones_in_listed_order(own_project):
    catalog, _, _ = own_project.requirements("own")
    assert catalog.own == ("stack", "registries", "payments")
    assert [azure_band(catalog, name) for name in ("aks", "ibm-vpc", "stack", "registries", "payments")] == [0, 3, 20, 21, 22]


def test_the_vendor_catalog_is_unchanged_by_a_stack(own_project):
    before = own_project.catalog()
    own_project.requirements("own")
    assert own_project.catalog() == before and not any(e.catalog for e in before.entries)


def _write_package(site: Path) -> None:
    """An installed distribution as pip leaves it in site-packages: the package and its dist-info with the entry point."""
    package = site / "contoso_egress"
    (package / "catalog").mkdir(parents=True)
    (package / "__init__.py").write_text("from pathlib import Path\n\ndef catalog():\n    return Path(__file__).parent / 'catalog'\n")
    (package / "catalog" / "contoso.yaml").write_text(PAYMENTS.replace("platform: payments", "platform: contoso")
                                                       .replace("role: payments", "role: nodes"))
    info = site / "contoso_egress-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: contoso-egress\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[egress_matrix.catalogs]\ncontoso = contoso_egress:catalog\n")


def test_a_catalog_an_installed_package_ships_is_picked_up_by_name(project_copy, tmp_path):
    site = tmp_path / "site"
    _write_package(site)
    (project_copy / "stacks" / "Pulumi.pkg.yaml").write_text(
        'config:\n  egress-matrix:platforms: [kkp]\n  egress-matrix:nodeSources: [10.0.0.0/16]\n  egress-matrix:catalogs: ["package:contoso"]\n')
    code = ("import json, sys; from pathlib import Path; from egress.project import Project\n"
            f"c, p, r = Project(Path({str(project_copy)!r})).requirements('pkg')\n"
            "print(json.dumps(sorted((x.destination, x.entry_ids[0]) for x in r if x.approvals)))")
    env = {"PYTHONPATH": f"{site}:{ROOT}", "EGRESS_TODAY": "2027-01-10", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=project_copy)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [["api.stripe.com", "contoso/stripe-api"]]


def test_commands_warn_on_stderr_and_keep_their_output(own_project, run_cli):
    code, out, err = run_cli("matrix", "--stack", "own", "--format", "json", "--project", str(own_project.root))
    assert code == 0 and json.loads(out)
    message = " ".join(err.split())
    assert "warning: own entry payments/stripe-old has expired" in message
    assert "warning: own entry payments/stripe-files expires on 2027-01-31 (21 days;" in message


def test_outputs_cite_the_approval_of_an_own_entry(own_project, run_cli):
    code, out, _ = run_cli("matrix", "--stack", "own", "--format", "json", "--project", str(own_project.root))
    stripe = next(r for r in json.loads(out)["requirements"] if r["destination"] == "api.stripe.com")
    assert (stripe["citations"], stripe["approvals"]) == ([], [{"entry": "payments/stripe-api", "owner": "team-payments", "reference": "PAY-101"}])
    code, out, _ = run_cli("matrix", "--stack", "own", "--format", "csv", "--project", str(own_project.root))
    assert "payments,api.stripe.com,fqdn,https,443,required,Charges and refunds,payments/stripe-api approved by team-payments (PAY-101)," in out


def test_a_pinned_band_stays_when_a_catalog_that_sorts_earlier_arrives(own_project):
    catalogs = own_project.root / "own-teams"
    (catalogs / "payments.yaml").write_text(PAYMENTS.replace("title: Payments team\n", "title: Payments team\nazure_band: 30\n"))
    catalog, _, _ = own_project.requirements("own")
    assert azure_band(catalog, "payments") == 30
    (catalogs / "analytics.yaml").write_text(PAYMENTS.replace("platform: payments", "platform: analytics").replace("stripe-webhooks", "analytics-x"))
    catalog, _, _ = own_project.requirements("own")
    assert catalog.own == ("stack", "registries", "analytics", "payments")  # the folder's files in name order
    assert [azure_band(catalog, name) for name in catalog.own] == [20, 21, 22, 30]
    (catalogs / "analytics.yaml").write_text((catalogs / "analytics.yaml").read_text().replace("title: Payments team\n", "title: A\nazure_band: 30\n"))
    with pytest.raises(Exception, match="payments.yaml: field 'azure_band' = 30: band 30 is platform analytics's"):
        own_project.requirements("own")
