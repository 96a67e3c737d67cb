"""egress catalog check with own catalogs (every stack's, or one with --stack): errors name file, line, field, value and
fix; a summary of what each stack adds; warnings for own entries that expire soon or repeat a vendor entry. And
docs/MATRIX.md's section on catalogs and their Azure bands, taken from the platform files."""
from __future__ import annotations

from pathlib import Path

import pytest

from egress.catalog import load_catalog
from egress.docs import judged_on, matrix_markdown

ROOT = Path(__file__).resolve().parents[1]

PAYMENTS = """schema: 1
kind: platform
platform: payments
defaults: {role: payments, level: required, protocol: https}
entries:
  - id: stripe-api
    destination: api.stripe.com
    purpose: Charges and refunds
    approval: {owner: team-payments, reference: PAY-101, expires: 2027-01-31}
  - id: stripe-old
    destination: old.stripe.com
    purpose: A retired endpoint
    approval: {owner: team-payments, reference: PAY-099, expires: 2026-12-01}
  - id: stripe-files
    destination: files.stripe.com
    level: optional
    purpose: Dispute evidence uploads
    approval: {owner: team-payments, reference: PAY-102}
"""

STACK = """config:
  egress-matrix:platforms: [aks]
  egress-matrix:cloud: azure-public
  egress-matrix:location: westeurope
  egress-matrix:nodeSources: [10.0.0.0/16]
  egress-matrix:sourceGroups:
    payments: [10.0.32.0/24]
  egress-matrix:catalogs: [own-teams]
  egress-matrix:entries:
    - {id: mcr, destination: mcr.microsoft.com, purpose: Images, owner: team-platform, reference: OPS-7}
"""


@pytest.fixture
def own(project_copy: Path, monkeypatch) -> Path:
    (project_copy / "own-teams").mkdir()
    (project_copy / "own-teams" / "payments.yaml").write_text(PAYMENTS)
    (project_copy / "stacks" / "Pulumi.own.yaml").write_text(STACK)
    monkeypatch.setenv("EGRESS_TODAY", "2027-01-10")
    return project_copy


def test_check_summarises_each_stacks_own_entries_and_warns(own, run_cli):
    code, out, err = run_cli("catalog", "check", "--stack", "own", "--project", str(own))
    lines = [" ".join(line.split()) for line in err.strip().split("\n")]
    assert code == 0 and out == "" and lines[0].startswith("ok: ") and lines[0].endswith(" 1 stack resolves")
    assert "stack own: 3 own entries (payments 2, stack 1), 2 resolve, 1 expired; source groups: payments" in lines
    warnings = [line for line in lines if line.startswith("warning: ")]
    assert warnings == [
        "warning: own entry payments/stripe-old has expired and is no longer allowed: renew its approval (a new 'expires') or remove it",
        "warning: own entry payments/stripe-api expires on 2027-01-31 (21 days; owner team-payments, reference PAY-101, expires 2027-01-31): "
        "after that it is no longer allowed; renew the approval or remove it",
        "warning: own entry stack/mcr duplicates vendor entry aks-public-mcr: nodes -> mcr.microsoft.com https/443 is required already; "
        "remove the own entry (the vendor entry keeps it allowed) or keep it deliberately (it stays allowed if the vendor entry goes)",
    ]
    code, _, err = run_cli("catalog", "check", "--project", str(ROOT))  # every stack of the project
    assert code == 0 and err.startswith("ok: ") and f"{len(list((ROOT / 'stacks').glob('Pulumi.*.yaml')))} stacks resolve" in err.split("\n")[0]


def test_an_own_catalogs_defect_is_one_error_with_file_line_field_value_and_fix(own, run_cli):
    catalog = own / "own-teams" / "payments.yaml"
    catalog.write_text(PAYMENTS.replace("destination: files.stripe.com", "destination: files.stripe.com:443"))
    code, out, err = run_cli("catalog", "check", "--stack", "own", "--project", str(own))
    message = " ".join(err.split())
    assert code == 1 and out == "" and message.count("Error: ") == 1
    assert f"{catalog}: entry 'stripe-files' (line 14): field 'destination' = 'files.stripe.com:443'" in message and "Fix: " in message


def test_an_unknown_stack_is_one_error(own, run_cli):
    code, _, err = run_cli("catalog", "check", "--stack", "nope", "--project", str(own))
    assert code == 1 and "stack 'nope' not found. Fix: use one of:" in " ".join(err.split())


def test_docs_document_catalogs_and_the_azure_bands_from_the_platform_files(project_copy):
    aks = project_copy / "matrix" / "aks.yaml"
    text = aks.read_text()
    assert "\nazure_band: 0  #" in text
    aks.write_text(text.replace("\nazure_band: 0  #", "\nazure_band: 12  #"))
    document = matrix_markdown(load_catalog(project_copy / "matrix"))
    section = document.split("## Catalogs\n")[1].split("\n## ")[0]
    assert "| `stack` | the stack's own entries, `egress-matrix:entries`:" in section
    assert "entry point `<name>` in group `egress_matrix.catalogs`" in section
    assert "so a band is 100 priorities wide. Bands 0-19 are the vendor platforms'" in section
    rows = [line for line in section.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert rows[0] == "| 1 | `kkp` (vendor) | 1100 |" and "| 12 | `aks` (vendor) | 2200 |" in rows
    assert rows[-3:] == ["| 20 | `stack` | 3000 |", "| 21 | `registries` | 3100 |",
                         "| 22, 23, ... | `egress-matrix:catalogs`, in listed order | 3200, 3300, ... |"]


def test_the_committed_matrix_doc_is_current():
    committed = (ROOT / "docs" / "MATRIX.md").read_text(encoding="utf-8")
    # judged on the date it records: the file is regenerated when a row's date passes, not made stale by the calendar
    assert committed == matrix_markdown(load_catalog(ROOT / "matrix"), judged_on(committed)), "run: egress docs matrix"
