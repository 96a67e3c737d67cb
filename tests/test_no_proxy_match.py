"""NO_PROXY matching as Go clients do it: Go's own table (golang/net http/httpproxy/proxy_test.go, UseProxyTests,
0ca694d2), plus the entry each bypass names."""
from __future__ import annotations

import pytest

from egress.no_proxy_match import bypass, netmask_entry

# Go's test configuration and table, verbatim: host -> whether the proxy is used (Go's "match")
NO_PROXY = ("foobar.com, .barbaz.net, *.wildcard.io, 192.168.1.1, 192.168.1.2:81, 192.168.1.3:80, 10.0.0.0/30, 2001:db8::52:0:1, "
            "[2001:db8::52:0:2]:443, [2001:db8::52:0:3]:80, 2002:db8:a::45/64")
USE_PROXY = [
    ("localhost", False), ("127.0.0.1", False), ("127.0.0.2", False), ("[::1]", False), ("[::2]", True),
    ("192.168.1.1", False), ("192.168.1.2", True), ("192.168.1.3", False), ("192.168.1.4", True), ("10.0.0.2", False),
    ("[2001:db8::52:0:1]", False), ("[2001:db8::52:0:2]", True), ("[2001:db8::52:0:3]", False), ("[2002:db8:a::123]", False),
    ("[fe80::424b:c8be:1643:a1b6]", True),
    ("barbaz.net", True), ("www.barbaz.net", False), ("foobar.com", False), ("www.foobar.com", False), ("foofoobar.com", True),
    ("baz.com", True), ("localhost.net", True), ("local.localhost", True), ("barbarbaz.net", True), ("wildcard.io", True),
    ("nested.wildcard.io", False), ("awildcard.io", True),
]


@pytest.mark.parametrize("host,uses_proxy", USE_PROXY)
def test_go_use_proxy_table(host, uses_proxy):
    assert (bypass(NO_PROXY, host, 80) is None) is uses_proxy


def test_star_sends_everything_direct_and_a_malformed_entry_is_ignored():
    assert bypass("*", "quay.io", 443).entry == "*"
    assert bypass(":1", "quay.io", 443) is None  # Go's TestInvalidNoProxy: no host part, ignored


def test_the_matching_entry_is_named_as_written():
    no_proxy = ".corp.example.com, 192.168.0.0/16, vcenter.example.com:443"
    assert bypass(no_proxy, "git.corp.example.com", 443).entry == ".corp.example.com"
    assert bypass(no_proxy, "corp.example.com", 443) is None  # a leading dot: subdomains only
    assert bypass(no_proxy, "192.168.10.5", 443).reason == "192.168.10.5 is in noProxy CIDR 192.168.0.0/16"
    assert bypass(no_proxy, "vcenter.example.com", 443).reason == "vcenter.example.com is noProxy domain vcenter.example.com:443"
    assert bypass(no_proxy, "vcenter.example.com", 80) is None  # that port only
    # an address entry never matches a name (nothing is resolved), a name entry never an address
    assert bypass("10.0.0.0/8", "internal.example.com", 443) is None
    assert bypass("example.com", "93.184.216.34", 443) is None


@pytest.mark.parametrize("destination,said", [
    ("quay.io:443", "OpenShift cluster Proxy: quay.io goes through http://proxy.corp.example.com:3128 (no entry of status.noProxy covers it)"),
    ("git.corp.example.com:443", "OpenShift cluster Proxy: git.corp.example.com goes direct, not through the proxy, because of "
                                 "status.noProxy entry '.corp.example.com'"),
    ("10.0.3.4:443", "goes direct, not through the proxy, because of status.noProxy entry '10.0.0.0/16' (10.0.3.4 is in noProxy CIDR "
                     "10.0.0.0/16)"),  # the machine network, which the operator adds by itself
])
def test_explain_says_whether_a_destination_goes_through_the_corporate_proxy(run_cli, destination, said):
    code, out, err = run_cli("explain", destination, "--stack", "openshift")
    assert code in (0, 1), err
    assert said in out


def test_explain_says_nothing_of_a_proxy_the_stack_has_not(run_cli):
    code, out, err = run_cli("explain", "quay.io:443", "--stack", "kkp-aws")
    assert "OpenShift cluster Proxy" not in out


@pytest.mark.parametrize("entry, host, matched", [
    ("10.0.0.0/8", "10.1.2.3", "10.0.0.0/8"),
    ("10.0.0.0/255.0.0.0", "10.1.2.3", None),  # net.ParseCIDR takes no netmask: Go reads the entry as a name no host has
    ("10.0.0.0/0.255.255.255", "10.1.2.3", None),  # nor a hostmask
    ("10.0.0.5/8", "10.9.9.9", "10.0.0.5/8"),  # host bits are fine for ParseCIDR
])
def test_a_cidr_is_address_and_prefix_length_only(entry, host, matched):
    found = bypass(entry, host, 443)
    assert (found.entry if found else None) == matched


def test_netmask_entries_are_found_with_the_cidr_they_meant():
    assert netmask_entry("10.0.0.0/255.0.0.0") == "10.0.0.0/8"
    assert netmask_entry("192.168.1.0/0.0.0.255") == "192.168.1.0/24"
    assert netmask_entry("10.0.0.0/8") is None and netmask_entry("example.com") is None and netmask_entry("a/b") is None
