"""Destination and port parsing/matching: exact cases plus properties (hypothesis)."""
from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from egress.addresses import (
    AddressError, PortRange, classify, host_matches, normalize_ports, parse_cidr, parse_destination, parse_port,
    parse_url, ports_contain, wildcard_covers,
)

LABEL = st.from_regex(r"[a-z][a-z0-9]{0,9}", fullmatch=True)
HOST = st.lists(LABEL, min_size=2, max_size=5).map(".".join)


@pytest.mark.parametrize("text,kind", [
    ("mcr.microsoft.com", "fqdn"), ("*.data.mcr.microsoft.com", "wildcard"), ("md-*.blob.storage.azure.net", "wildcard"),
    ("https://dl.k8s.io", "url"), ("download.docker.com/linux/ubuntu", "url"), ("10.0.0.0/16", "cidr"),
    ("192.0.2.1", "ip"), ("2001:db8::1", "ip"), ("AzureCloud.westeurope", "service-tag"), ("AzureMonitor", "service-tag"),
    ("*", "any"),
])
def test_classify_and_parse(text, kind):
    assert classify(text) == kind
    assert parse_destination(text) == kind


@pytest.mark.parametrize("text,problem", [
    ("Mcr.Microsoft.com", "lower case"),
    ("www.contoso.*", "left-most label"),
    ("*.*.contoso.com", "left-most label"),
    ("a**.contoso.com", "exactly one"),
    ("bad_name.example.com", "not a DNS label"),
    ("localhost", "at least two labels"),
    ("10.0.0.1/16", "host bits"),
    ("300.1.1.1", "broken IP"),
    ("ftp://example.com/x", "scheme"),
    ("example.com:8080/x", "port inside a URL"),
])
def test_bad_destinations(text, problem):
    with pytest.raises(AddressError) as info:
        parse_destination(text)
    assert problem in str(info.value)


def test_kind_must_agree_with_spelling():
    with pytest.raises(AddressError, match="written as a wildcard"):
        parse_destination("*.example.com", "fqdn")


@pytest.mark.parametrize("pattern,host,expected", [
    ("*.example.com", "a.example.com", True),
    ("*.example.com", "a.b.example.com", True),
    ("*.example.com", "example.com", False),  # the apex is its own entry
    ("*.example.com", "badexample.com", False),
    ("md-*.blob.x.net", "md-abc.blob.x.net", True),
    ("md-*.blob.x.net", "xmd-abc.blob.x.net", False),
    ("umsa*.blob.core.windows.net", "umsa123.blob.core.windows.net", True),
    ("example.com", "example.com", True),
    ("example.com", "a.example.com", False),
])
def test_host_matches(pattern, host, expected):
    assert host_matches(pattern, host) is expected


@given(HOST, LABEL)
def test_wildcard_matches_every_subdomain_never_apex(apex, sub):
    assert host_matches(f"*.{apex}", f"{sub}.{apex}")
    assert not host_matches(f"*.{apex}", apex)


@given(HOST, LABEL, LABEL)
def test_wildcard_cover_is_consistent_with_matching(apex, a, b):
    inner = f"*.{a}.{apex}"
    assert wildcard_covers(f"*.{apex}", inner)
    assert host_matches(f"*.{apex}", f"{b}.{a}.{apex}")
    assert not wildcard_covers(f"*.{a}.{apex}", f"*.{apex}")


@pytest.mark.parametrize("item,expected", [(443, PortRange(443, 443)), ("30000-32767", PortRange(30000, 32767)), ("53", PortRange(53, 53))])
def test_parse_port(item, expected):
    assert parse_port(item) == expected


@pytest.mark.parametrize("item,problem", [(0, "outside"), (70000, "outside"), ("200-100", "reversed"), ("http", "not a port"), (True, "not a port")])
def test_bad_ports(item, problem):
    with pytest.raises(AddressError, match=problem):
        parse_port(item)


@given(st.lists(st.tuples(st.integers(1, 65535), st.integers(0, 500)), min_size=1, max_size=20), st.integers(1, 65535))
def test_normalize_ports_keeps_membership_and_is_canonical(pairs, probe):
    ranges = [PortRange(s, min(65535, s + w)) for s, w in pairs]
    canonical = normalize_ports(ranges)
    assert ports_contain(canonical, probe) == ports_contain(ranges, probe)
    assert normalize_ports(reversed(ranges)) == canonical
    assert all(a.end + 1 < b.start for a, b in zip(canonical, canonical[1:]))


@given(st.ip_addresses(v=4), st.integers(8, 32))
def test_canonical_cidrs_parse_and_host_bits_are_rejected(address, prefix):
    network = ipaddress.ip_network(f"{address}/{prefix}", strict=False)
    assert parse_cidr(str(network)) == network
    if network.network_address != address:
        with pytest.raises(AddressError, match="host bits"):
            parse_cidr(f"{address}/{prefix}")


def test_url_keeps_host_and_path():
    url = parse_url("https://github.com/containernetworking/plugins/releases/")
    assert (url.scheme, url.host, url.path) == ("https", "github.com", "/containernetworking/plugins/releases/")
