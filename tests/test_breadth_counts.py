"""public_addresses over merged ranges gives the counts of the per-network reading it replaced (collapse, then each
network against the public root and the special blocks), whatever the networks: thousands of /32s, nesting, NAT64."""
from __future__ import annotations

import ipaddress

from hypothesis import given, settings
from hypothesis import strategies as st

from egress.breadth import _ROOTS, NAT64, NAT64_LOCAL, V4_MAPPED, _embedded_v4, public_addresses


def _old_public_addresses(networks, nat64=True):
    nets = list(networks)
    if nat64:
        nets += [v4 for n in nets if n.version == 6 for p in (NAT64, NAT64_LOCAL, V4_MAPPED) if (p is not V4_MAPPED or n.subnet_of(p)) and (v4 := _embedded_v4(n, p)) is not None]
    counts = {}
    for version in (4, 6):
        root, special = _ROOTS[version]
        total = 0
        for net in ipaddress.collapse_addresses(n for n in nets if n.version == version):
            inside = min(net.num_addresses, root.num_addresses) if net.overlaps(root) else 0
            total += inside - sum(min(net.num_addresses, s.num_addresses) if net.overlaps(s) else 0 for s in special) if inside else 0
        counts[version] = total
    return counts


_V4 = st.builds(lambda a, p: ipaddress.ip_network((a, p), strict=False), st.integers(0, 2**32 - 1), st.integers(0, 32))
_V6 = st.builds(lambda a, p: ipaddress.ip_network((a, p), strict=False),
                st.one_of(st.integers(0, 2**128 - 1), st.integers(0x0064_ff9b << 96, (0x0064_ff9b << 96) + 2**32 - 1),
                          st.integers(0x0064_ff9b_0001 << 80, (0x0064_ff9b_0001 << 80) + 2**80 - 1),
                          st.integers(0xFFFF << 32, (0xFFFF << 32) + 2**32 - 1)), st.integers(0, 128))


@settings(max_examples=400, deadline=None)
@given(networks=st.lists(st.one_of(_V4, _V6), max_size=40), nat64=st.booleans())
def test_public_addresses_counts_as_before(networks, nat64):
    assert public_addresses(networks, nat64) == _old_public_addresses(networks, nat64)


def test_thousands_of_host_routes_count_once_each():
    hosts = [ipaddress.ip_network(f"8.8.{i // 256}.{i % 256}/32") for i in range(5000)]
    assert public_addresses(hosts + hosts[:100])[4] == 5000
