"""Catalog YAML errors (issue 17 review): a value YAML 1.1 and 1.2 read differently names its full path
('approval.reference' within its entry, not 'reference'); a date, null, boolean or number where text belongs is shown as
written ('2026-01-01', not datetime.date(2026, 1, 1)) and told to be quoted in the catalog file (not "in the stack file")."""
from __future__ import annotations

import pytest

OLD = 'reference: "https://tickets.contoso.example/SEC-4711"'


@pytest.mark.parametrize("value, expect", [
    ("yes", "field 'approval.reference' = 'yes': YAML 1.2 (Pulumi) reads it as text, YAML 1.1 as a boolean"),
    ("2026-01-01", "field 'approval.reference' = '2026-01-01': not text: YAML reads it as a date. Fix: quote it: '2026-01-01'"),
    ("null", "field 'approval.reference' = 'null': not text: YAML reads it as no value (null, '~' or nothing). Fix: write the text, quoted"),
    ("4711", "field 'approval.reference' = '4711': not text: YAML reads it as a number. Fix: quote it: '4711'"),
])
def test_a_team_file_value_is_named_by_its_path_and_shown_as_written(project_copy, run_cli, value, expect):
    team = project_copy / "teams" / "payments" / "payments.yaml"
    text = team.read_text()
    assert OLD in text
    team.write_text(text.replace(OLD, f"reference: {value}", 1))
    code, out, err = run_cli("matrix", "--stack", "aks-contoso", "--project", str(project_copy))
    message = " ".join(err.split())
    assert code == 1 and "Traceback" not in err, err
    assert "teams/payments/payments.yaml" in message and expect in message, message
    assert "stack file" not in message and "datetime" not in message
