"""A reason that lifts a guard rail (allowBroadEgress, broad, direct.because, noTlsInspection.reason) is refused when it
is a placeholder (issue 17 review): the fix texts' own '<reason>', a TODO/TBD/FIXME/xxx note, or one word repeated."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from egress.addresses import AddressError
from egress.own_settings import StackEntry
from egress.profile import Profile
from egress.reasons import check_reason


@pytest.mark.parametrize("reason, problem", [
    ("<reason>   x", "holds the placeholder '<reason>', not a reason"),
    ("lab cluster, see <ticket>", "holds the placeholder '<ticket>', not a reason"),
    ("accepted: '<your reason here>'", "holds the placeholder '<your reason here>', not a reason"),
    ("TODO: later", "says 'TODO': a reason to write later is no reason yet"),
    ("tbd by the network team", "says 'tbd'"),
    ("FIXME before prod", "says 'FIXME'"),
    ("xxx xxx xxx xxx", "says 'xxx'"),
    ("reason: XXXXX pending", "says 'XXXXX'"),
    ("aaaaaaaaaa", "is no reason (at least 10 characters besides surrounding spaces, and two different words)"),
    ("test test test", "two different words"),
    ("Broad broad BROAD", "two different words"),
])
def test_a_placeholder_is_no_reason(reason, problem):
    with pytest.raises(AddressError) as info:
        check_reason(reason)
    assert problem in str(info.value) and "Fix:" in str(info.value)
    with pytest.raises(ValidationError):
        StackEntry(id="x", destination="0.0.0.0/0", protocol="tcp", ports=["1-65535"], purpose="p", owner="o", reference="r", broad=reason)
    with pytest.raises(ValidationError):
        Profile.model_validate({"platforms": ["kkp"], "allowBroadEgress": reason})


@pytest.mark.parametrize("reason", ["lab cluster without a firewall, OPS-42", "vendor documents any destination (tunnel)",
                                    "NTP to any server: the document lists none", "Todoist API needs it, ticket OPS-7", "box-xxxl fleet, OPS-9",
                                    "targets use the narrower AzureCloud.<region> tag", "the host '<vault-name>.vault.azure.net' is no host"])
def test_reasons_in_words_pass(reason):
    assert check_reason(reason) == reason
