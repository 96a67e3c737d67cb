"""The policy own-entries-reviewed: advisory by default, mandatory when the pack's config says so (as the engine takes
an enforcement level per policy), with its expiryWarningDays setting checked like the engine checks it."""
from __future__ import annotations

import json

import pytest

from egress.errors import InputError
from egress_policies import POLICIES
from egress_preview.pack import run_pack
from egress_preview.pack_config import load_pack_config
from policy_harness import FIXTURES, edited, load, recording

POLICY = next(p for p in POLICIES if p.name == "own-entries-reviewed")


def _recorded(fixture: str):
    case = load(FIXTURES / "own-entries-reviewed" / f"{fixture}.yaml")
    return edited(recording(case["stack"]), [], case.get("config"))


def test_advisory_by_default_and_mandatory_when_configured(tmp_path):
    recorded = _recorded("denied-broad-own-entry")
    assert [v.level for v in run_pack(recorded, None, [POLICY])] == ["advisory"]
    path = tmp_path / "pack.json"
    path.write_text(json.dumps({"own-entries-reviewed": "mandatory"}))
    found = run_pack(recorded, load_pack_config(path), [POLICY])
    assert [(v.level, v.resource) for v in found] == [("mandatory", "(stack)")] and "stack/storage" in found[0].message


def test_expiry_warning_days_is_a_setting(tmp_path):
    recorded = _recorded("allowed-narrow-own-entry")  # expires 2099-12-31
    path = tmp_path / "pack.json"
    path.write_text(json.dumps({"own-entries-reviewed": {"enforcementLevel": "advisory", "expiryWarningDays": 100000}}))
    assert [v.message.split(" (")[0] for v in run_pack(recorded, load_pack_config(path), [POLICY])] == ["own entry stack/stripe"]
    path.write_text(json.dumps({"own-entries-reviewed": {"expiryWarningDays": -1}}))
    with pytest.raises(InputError, match="expiryWarningDays"):
        load_pack_config(path)
