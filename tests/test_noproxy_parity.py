"""status.noProxy parity with the cluster-network-operator's own unit tests (tests/data/openshift_noproxy_parity.yaml,
transcribed from upstream with their commits): every case our stack settings can state gives the upstream string
byte for byte. The data file also holds the validation and installer cases the Kubernetes target's ClusterProxy
will be held to."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from egress.noproxy import openshift_no_proxy
from egress.profile import Profile

PARITY = yaml.safe_load((Path(__file__).parent / "data" / "openshift_noproxy_parity.yaml").read_text())
EXPRESSIBLE = [case for case in PARITY["merge_cases"] if case.get("expressible")]


def test_the_transcription_is_complete():
    assert len(PARITY["merge_cases"]) == 23 and len(EXPRESSIBLE) == 13
    assert all(case["profile"] and ("want" in case or "want_derived" in case) for case in EXPRESSIBLE)


@pytest.mark.parametrize("case", EXPRESSIBLE, ids=[case["name"] for case in EXPRESSIBLE])
def test_status_no_proxy_matches_the_operator_byte_for_byte(case, catalog):
    profile = Profile.model_validate(case["profile"])
    assert openshift_no_proxy(catalog, profile, case["spec_no_proxy"]) == case.get("want", case.get("want_derived"))
