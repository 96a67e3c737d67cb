"""egress learn: an IPv6 address with a zone ID ('fe80::1%eth0') is no destination, and Python's ip_address takes any
text after the '%' ('*', markup) as a zone: such a host is counted as ignored before any other check; an IPv4-mapped
IPv6 address is learned as the IPv4 address it reaches. Fixture tests/data/learn/zone-squid.log: the reviewer's
/tmp/r21b/zone2.log (review 21, item 5)."""
from __future__ import annotations

import pytest

from egress.learn import squid
from egress.learn.flows import ZONE, LearnError, Unusable, check_ip, is_ip, logged_host
from learn_support import proposals, run_learn


@pytest.mark.parametrize("value", ["[fe80::1%*.evil.example]", "::ffff:a9fe:a9fe%eth0", "2001:db8::5%a|b`c", "fe80::1%25eth0"])
def test_a_zoned_address_is_unusable_whatever_follows_the_percent(value):
    with pytest.raises(Unusable) as caught:
        logged_host(value)
    assert caught.value.reason == ZONE and not is_ip(value)


@pytest.mark.parametrize("value, host", [("::ffff:a9fe:a9fe", "169.254.169.254"), ("[::ffff:192.0.2.7]", "192.0.2.7"),
                                         ("2001:DB8::5", "2001:db8::5")])
def test_an_ipv4_mapped_address_is_learned_as_ipv4(value, host):
    assert logged_host(value) == host and check_ip(value, "f", 1, "c", "x") == host


def test_a_zoned_source_address_is_refused():
    with pytest.raises(LearnError, match="'fe80::1%eth0' is not an IP address"):
        check_ip("fe80::1%eth0", "access.log", 3, "the client address", "fix it")


def test_squid_connect_to_zoned_addresses_is_ignored_not_proposed(project_copy, run_cli):
    read = squid.parse(_log(), "access.log")
    assert read.flows == [] and read.because == {ZONE: [1, 2, 3]}
    code, out, err, text = run_learn(run_cli, project_copy, "proxy-only", "zone-squid.log")
    doc = proposals(text)
    assert doc["proposals"] == doc["findings"] == doc["unknown_sources"] == [], text
    assert {i["reason"]: i["records"] for i in doc["logs"][0]["ignored_because"]} == {ZONE: 3}
    assert "evil.example" not in out + text and "`c" not in out + text


def test_squid_connect_to_a_mapped_address_learns_the_ipv4_address():
    line = "1795176001.458      0 10.60.0.17 TCP_DENIED/403 3950 CONNECT [::ffff:a9fe:a9fe]:443 - HIER_NONE/- text/html"
    read = squid.parse(line, "access.log")
    assert [(f.host, f.address, f.port) for f in read.flows] == [("", "169.254.169.254", 443)]


def _log() -> str:
    from learn_support import DATA

    return (DATA / "zone-squid.log").read_text()
