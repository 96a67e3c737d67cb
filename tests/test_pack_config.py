"""--policy-pack-config (issue 17, item 10): checked as the engine checks it (levels, each policy's config schema) before
the preview runs, one clear error naming file, policy, setting, value and fix; never a traceback, never a value the
policy misreads (the string "no" was a true reportBeyondMatrix)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from egress.errors import EgressError, InputError
from egress_preview.pack_config import load_pack_config

ROOT = Path(__file__).resolve().parents[1]


def _load(tmp_path: Path, document) -> dict:
    path = tmp_path / "policy.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return load_pack_config(path)


def test_the_shipped_config_and_the_engines_forms_load_unchanged(tmp_path):
    shipped = json.loads((ROOT / "policy" / "config" / "default.json").read_text())
    assert load_pack_config(ROOT / "policy" / "config" / "default.json") == shipped
    forms = {"all": "advisory", "trusted-ca-valid": {"expiryWarningDays": 7}, "aws-security-group-quotas": {"enforcementLevel": "disabled"},
             "egress-least-privilege": {"enforcementLevel": "remediate", "reportBeyondMatrix": False}}
    assert _load(tmp_path, forms) == forms
    assert _load(tmp_path, "  \n") == {}  # the engine reads an empty file as no config


@pytest.mark.parametrize("document, message", [
    ({"aws-security-group-quotas": {"rulesPerFamily": "sixty"}},
     "policy 'aws-security-group-quotas': field 'rulesPerFamily' = 'sixty': 'sixty' is not of type 'integer'. Fix: give an integer from "
     "1 to 1000 (The account's 'Inbound or outbound rules per security group' quota (AWS default 60).)"),
    ({"aws-security-group-quotas": {"rulesPerFamily": 60.5}}, "field 'rulesPerFamily' = 60.5: 60.5 is not of type 'integer'"),
    ({"aws-security-group-quotas": {"rulesPerFamily": True}}, "field 'rulesPerFamily' = True: True is not of type 'integer'"),
    ({"aws-security-group-quotas": {"rulesPerFamily": 5000}}, "5000 is greater than the maximum of 1000"),
    ({"egress-least-privilege": {"reportBeyondMatrix": "no"}}, "field 'reportBeyondMatrix' = 'no': 'no' is not of type 'boolean'. Fix: give a boolean"),
    ({"trusted-ca-valid": {"expiryWarningDays": -1}}, "-1 is less than the minimum of 0. Fix: give an integer from 0"),
    ({"trusted-ca-valid": {"expiryWarningDay": 3}}, "field 'expiryWarningDay' = 3: this policy has no such setting. Fix: its settings are: expiryWarningDays"),
    ({"api-allowlist-not-open": {"threshold": 3}}, "this policy has no such setting. Fix: give only its enforcement level, e.g. {\"api-allowlist-not-open\": \"mandatory\"}"),
    ({"trusted-ca-valid": "strict"}, "field '(level)' = 'strict': not an enforcement level. Fix: use one of: advisory, mandatory, remediate, disabled"),
    ({"trusted-ca-valid": {"enforcementLevel": 3}}, "field 'enforcementLevel' = 3: not an enforcement level (an integer)"),
    ({"trusted-ca-valid": 5}, "field '(value)' = 5: an integer, but a policy's config is an enforcement level or an object"),
    ({"trusted-ca-valid": None}, "field '(value)' = None: null, but a policy's config is an enforcement level or an object"),
    ({"all": {"expiryWarningDays": 3}}, "policy 'all': field 'expiryWarningDays' = 3: 'all' sets only an enforcement level"),
    ({"trusted-ca-vaild": "mandatory"}, "field 'policy' = 'trusted-ca-vaild': this pack has no such policy. Fix: use one of: all, "),
    ([1], "field '(document)' = [1]: a policy pack config is a JSON object, not an array"),
    (3, "field '(document)' = 3: a policy pack config is a JSON object, not an integer"),
])
def test_a_bad_config_is_one_error_naming_policy_setting_and_value(tmp_path, document, message):
    with pytest.raises(InputError) as caught:
        _load(tmp_path, document)
    assert str(caught.value).startswith(f"{tmp_path / 'policy.json'}: ")
    assert message in str(caught.value)


def test_unreadable_json_keeps_its_message(tmp_path):
    with pytest.raises(EgressError, match=r"policy.json: not a readable policy pack config \(.*\)\. Fix: pass the JSON file"):
        _load(tmp_path, "{nope")


def test_preview_stops_before_the_program_runs(run_cli, tmp_path, monkeypatch):
    """The wrongly typed value that used to raise TypeError inside the pack: one error, and no program was run."""
    import egress_preview.preview as preview_module

    monkeypatch.setattr(preview_module, "run_program", lambda *a, **k: pytest.fail("the program ran after a bad policy config"))
    (tmp_path / "policy.json").write_text('{"aws-security-group-quotas": {"rulesPerFamily": "sixty"}}')
    code, out, err = run_cli("preview", "--stack", "dev", "--out", str(tmp_path / "out"), "--policy-pack-config", str(tmp_path / "policy.json"),
                             "--project", str(ROOT))
    assert code == 1 and out == "" and "Traceback" not in err
    assert "field 'rulesPerFamily' = 'sixty'" in " ".join(err.split()) and not (tmp_path / "out").exists()
