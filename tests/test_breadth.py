"""Breadth by coverage (issue 17, item 3): public share, port span, public suffixes, and judging flows; with properties
(hypothesis): however a range is spelled or split, its coverage is the same, and more rules never cover less."""
from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from egress.addresses import PortRange
from egress.breadth import (ANY, PUBLIC_TOTAL, collapse, describe_share, networks_of, port_span, public_addresses, public_share,
                            public_suffix)
from egress.flows import Accepted, Allow, Limits, judge, residual

net = ipaddress.ip_network
LIMITS = Limits(max_public_share=1.0, max_port_span=1024)
ALL = (PortRange(1, 65535),)


# -- measures --------------------------------------------------------------------------------------------------------------
def test_two_halves_are_the_internet():
    assert public_share([net("0.0.0.0/1"), net("128.0.0.0/1")]) == 100.0
    assert public_share([net("::/1"), net("8000::/1")]) == 100.0
    assert collapse([net("0.0.0.0/1"), net("128.0.0.0/1")]) == (net("0.0.0.0/0"),)


def test_public_space_excludes_the_special_purpose_ranges():
    # 2^32 less 0/8, 10/8, 100.64/10, 127/8, 169.254/16, 172.16/12, 192.0.0/24, 192.0.2/24, 192.88.99/24, 192.168/16,
    # 198.18/15, 198.51.100/24, 203.0.113/24, 224/4 and 240/4 (counted by hand)
    assert PUBLIC_TOTAL[4] == 3_702_258_432
    # 2000::/3 less 2001::/23, 2001:db8::/32 (not inside 2001::/23, which ends at 2001:1ff:...), 2002::/16 and 3fff::/20
    assert PUBLIC_TOTAL[6] == 2**125 - 2**105 - 2**96 - 2**112 - 2**108
    private = networks_of(["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "192.0.2.0/24", "198.51.100.0/24",
                           "203.0.113.0/24", "224.0.0.0/4", "fc00::/7", "fe80::/10", "2001:db8::/32"])
    assert public_addresses(private) == {4: 0, 6: 0}
    assert describe_share(private) == "no public address"
    assert public_addresses([net("8.8.8.0/24")]) == {4: 256, 6: 0}
    assert public_addresses([net("192.31.196.0/24")]) == {4: 256, 6: 0}  # AS112: globally reachable, so public


def test_nat64_reaches_ipv4():
    assert public_addresses([net("64:ff9b::/96")])[4] == PUBLIC_TOTAL[4]
    assert public_addresses([net("64:ff9b::808:800/120")]) == {4: 256, 6: 0}  # 8.8.8.0/24 through NAT64
    assert public_addresses([net("64:ff9b::/96")], nat64=False) == {4: 0, 6: 0}
    assert describe_share([net("::/0")]) == "100% of public IPv4 (some as NAT64 addresses in 64:ff9b::/96) and 100% of public IPv6"


def test_star_and_spellings_of_anywhere():
    assert networks_of(["*"]) == ANY and networks_of(["Internet"]) == ANY
    assert networks_of(["AzureCloud.westeurope", "mcr.microsoft.com", "192.0.2.1"]) == (net("192.0.2.1/32"),)


def test_port_span():
    assert port_span(ALL) == 65535
    assert port_span([PortRange(1, 32767), PortRange(32768, 65535)]) == 65535
    assert port_span([PortRange(443, 443), PortRange(443, 443), PortRange(80, 80)]) == 2


@pytest.mark.parametrize("name, suffix", [
    ("com", "com"), (".com", "com"), ("*.com", "com"), (".co.uk", "co.uk"), ("*.co.uk", "co.uk"), (".uk", "uk"),
    ("akershus.no", "akershus.no"),  # not itself a suffix, but nes.akershus.no is: it covers one
    ("foo.ck", "foo.ck"),  # '*.ck': every name directly under ck is a suffix
    ("example.com", None), (".corp.example.com", None), ("s3.amazonaws.com", None),  # the PSL's private section is one operator's
    ("local", None), (".svc", None), ("kubernetes", None),  # not on the internet: no TLD there
    ("AzureCloud.westeurope", None), ("10.0.0.0", None),
])
def test_public_suffix(name, suffix):
    assert public_suffix(name) == suffix


# -- judging flows ---------------------------------------------------------------------------------------------------------
def allow(where, addresses=(), names=(), ports=ALL, transport="tcp", sources=None, roles=("nodes",)):
    return Allow(where, transport, ports, addresses=networks_of(addresses), names=tuple(names),
                 sources=None if sources is None else networks_of(sources), roles=frozenset(roles))


def test_halves_in_two_rules_are_found_together():
    found = judge([allow("low", ["0.0.0.0/1"], ports=(PortRange(443, 443),)), allow("high", ["128.0.0.0/1"], ports=(PortRange(443, 443),))], LIMITS)
    assert found == ["tcp/443 reaches 100% of public IPv4 (more than maxPublicShare 1%) through high, low"]


def test_star_on_all_ports():
    assert judge([allow("any", ["*"])], LIMITS) == [
        "tcp/1-65535 reaches 100% of public IPv4 and 100% of public IPv6 (more than maxPublicShare 1%) through any",
        "tcp to 0.0.0.0/0 opens up to 65535 ports (1-65535; more than maxPortSpan 1024) through any",
        "tcp to ::/0 opens up to 65535 ports (1-65535; more than maxPortSpan 1024) through any"]


def test_ports_split_over_rules_are_counted_together():
    low = allow("low", ["192.0.2.10"], ports=(PortRange(1, 600),))
    high = allow("high", ["192.0.2.0/24"], ports=(PortRange(601, 1200),))  # alone within the limit; on .10 together beyond it
    assert judge([low, high], LIMITS) == ["tcp to 192.0.2.10/32 opens up to 1200 ports (1-1200; more than maxPortSpan 1024) through high, low"]
    names = [allow("a", names=["tools.example.com"], ports=(PortRange(1, 600),)), allow("b", names=["tools.example.com"], ports=(PortRange(601, 1200),))]
    assert judge(names, LIMITS) == ["tcp to tools.example.com opens 1200 ports (1-1200; more than maxPortSpan 1024) through a, b"]


def test_transports_are_apart():
    assert judge([allow("t", ["0.0.0.0/1"], ports=(PortRange(53, 53),)), allow("u", ["128.0.0.0/1"], ports=(PortRange(53, 53),), transport="udp")],
                 Limits(60.0, 1024)) == []


def test_names_under_a_public_suffix_and_open_sources():
    found = judge([allow("r", names=["*.co.uk", "mcr.microsoft.com"], ports=(PortRange(443, 443),), sources=["0.0.0.0/1", "128.0.0.0/1"])], LIMITS)
    assert found == ["r: '*.co.uk' is every name under the public suffix 'co.uk'",
                     "the rules' sources cover 100% of public IPv4 (more than maxPublicShare 1%): every rule is an open relay for them (r)"]


def test_limits_are_the_stacks():
    halves = [allow("low", ["0.0.0.0/1"], ports=(PortRange(443, 443),))]
    assert judge(halves, Limits(60.0, 1024)) == []
    assert judge(halves, Limits(50.0, 1024)) != []
    assert judge([allow("x", ["192.0.2.1"], ports=(PortRange(1000, 2000),))], Limits(1.0, 1001)) == []


def test_accepted_flows_are_subtracted_for_their_role_only():
    tunnel = Accepted("nodes", "udp", (PortRange(1194, 1194),), addresses=ANY)
    rule = allow("tunnel", ["*"], ports=(PortRange(1194, 1194),), transport="udp")
    assert residual(rule, [tunnel]) == [] and judge([rule], LIMITS, [tunnel]) == []
    seed = allow("seed-tunnel", ["*"], ports=(PortRange(1194, 1194),), transport="udp", roles=("seed",))
    assert judge([seed], LIMITS, [tunnel]) == ["udp/1194 reaches 100% of public IPv4 and 100% of public IPv6 (more than maxPublicShare 1%) through seed-tunnel"]
    wider = allow("wider", ["*"], ports=(PortRange(1194, 1195),), transport="udp")  # one more port than accepted
    assert [(a.ports, a.addresses) for a in residual(wider, [tunnel])] == [((PortRange(1195, 1195),), ANY)]


# -- properties ------------------------------------------------------------------------------------------------------------
v4_networks = st.builds(lambda address, prefix: ipaddress.ip_network((address, prefix), strict=False),
                        st.integers(0, 2**32 - 1), st.integers(0, 32))
v6_networks = st.builds(lambda address, prefix: ipaddress.ip_network((address, prefix), strict=False),
                        st.integers(0, 2**128 - 1), st.integers(0, 128))
networks = st.one_of(v4_networks, v6_networks)


def _split(network, depth):
    """``network`` cut into its two halves ``depth`` times (as deep as the family allows)."""
    pieces = [network]
    for _ in range(depth):
        pieces = [half for p in pieces for half in (p.subnets(prefixlen_diff=1) if p.prefixlen < p.max_prefixlen else [p])]
    return pieces


@settings(max_examples=200, deadline=None)
@given(networks, st.integers(0, 4))
def test_splitting_a_range_never_changes_its_coverage(network, depth):
    pieces = _split(network, depth)
    assert public_addresses(pieces) == public_addresses([network])
    assert public_share(pieces) == public_share([network])


@settings(max_examples=200, deadline=None)
@given(st.lists(networks, max_size=6), networks)
def test_more_addresses_never_cover_less(base, extra):
    before = public_addresses(base)
    after = public_addresses([*base, extra])
    assert after[4] >= before[4] and after[6] >= before[6]


@settings(max_examples=100, deadline=None)
@given(v4_networks, st.integers(1, 4), st.integers(1, 65535), st.integers(0, 65534))
def test_splitting_a_rule_into_rules_never_lowers_what_is_found(network, depth, start, length):
    """A rule found too broad stays found when its addresses are spread over several rules (the 'two halves' bypass)."""
    ports = (PortRange(start, min(65535, start + length)),)
    whole = judge([allow("whole", [str(network)], ports=ports)], LIMITS)
    pieces = judge([allow(f"piece-{i}", [str(p)], ports=ports) for i, p in enumerate(_split(network, depth))], LIMITS)
    assert bool(whole) == bool(pieces)
    assert [f.split(" through ")[0] for f in whole] == [f.split(" through ")[0] for f in pieces]


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 65535), st.integers(0, 65534), st.integers(1, 8))
def test_splitting_ports_into_rules_never_lowers_the_span(start, length, parts):
    end = min(65535, start + length)
    step = max(1, (end - start + 1) // parts)
    ranges = [PortRange(s, min(end, s + step - 1)) for s in range(start, end + 1, step)]
    whole = judge([allow("whole", ["192.0.2.7"], ports=(PortRange(start, end),))], LIMITS)
    split = judge([allow(f"r{i}", ["192.0.2.7"], ports=(r,)) for i, r in enumerate(ranges)], LIMITS)
    assert [f.split(" through ")[0] for f in whole] == [f.split(" through ")[0] for f in split]
