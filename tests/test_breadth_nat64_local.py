"""RFC 8215's local-use translation prefix 64:ff9b:1::/48 counts as the IPv4 it reaches through a translator, as the
well-known 64:ff9b::/96 does (issue 17 review: it counted as 0 public addresses). Which RFC 6052 prefix length the
operator carves from it decides where the IPv4 sits, so a range that can hold a whole /96 counts as all of IPv4."""
from __future__ import annotations

import ipaddress

import pytest

from egress.breadth import PUBLIC_TOTAL, describe_share, public_addresses, public_share

ALL = PUBLIC_TOTAL[4]


@pytest.mark.parametrize("text, v4", [
    ("64:ff9b:1::/48", ALL),           # the whole local-use prefix
    ("64:ff9b::/32", ALL),             # holds both prefixes
    ("64:ff9b:1:1::/64", ALL),         # a /64 translation prefix (RFC 6052's shortest deployed, RFC 8215 section 3)
    ("64:ff9b:1:abcd::/96", ALL),      # a /96 translation prefix
    ("64:ff9b:1::808:800/120", 256),   # 8.8.8.0/24 in the /96 format
    ("64:ff9b:1::a00:0/104", 0),       # 10.0.0.0/8: not public
    ("64:ff9b:2::/48", 0),             # outside it
])
def test_local_use_nat64_counts_the_ipv4_it_reaches(text, v4):
    assert public_addresses([ipaddress.ip_network(text)]) == {4: v4, 6: 0}
    assert public_addresses([ipaddress.ip_network(text)], nat64=False) == {4: 0, 6: 0}


def test_the_share_names_the_local_use_prefix_once():
    assert public_share([ipaddress.ip_network("64:ff9b:1::/48")]) == 100.0
    assert describe_share([ipaddress.ip_network("64:ff9b:1::/48")]) == (
        "100% of public IPv4 (some as local-use NAT64 addresses in 64:ff9b:1::/48)")
    # '::/0' holds both prefixes: the well-known one already reaches all of IPv4, so only it is named
    assert describe_share([ipaddress.ip_network("::/0")]) == (
        "100% of public IPv4 (some as NAT64 addresses in 64:ff9b::/96) and 100% of public IPv6")
