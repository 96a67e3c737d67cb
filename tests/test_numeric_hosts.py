"""A host whose last label is a number is not a DNS name (issue 17 review): clients (inet_aton) read '127.1' as
127.0.0.1, '010.0.0.1' as 8.0.0.1 (octal), '2130706433' and '0x7f.1' as 127.0.0.1, so a URL host, a host setting or a
noProxy entry written so reaches another address than it reads as. One rule (addresses._not_numeric) for every host
parser; a host name longer than 253 characters is refused too."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from egress.addresses import AddressError, parse_domain, parse_hostname, parse_no_proxy_entry
from egress.profile import Profile
from egress.url_hosts import check_url_host

READ = {"127.1": "127.0.0.1", "010.0.0.1": "8.0.0.1", "2130706433": "127.0.0.1", "0x7f.1": "127.0.0.1", "0x7f000001": "127.0.0.1"}
UNREADABLE = ["1.2.3.4.5", "proxy.123", "proxy.0x1f"]


@pytest.mark.parametrize("host", sorted(READ))
def test_a_host_clients_read_as_an_address_names_that_address(host):
    with pytest.raises(AddressError) as info:
        check_url_host(f"http://{host}:3128")
    assert str(info.value).startswith(f"'{host}' is not a DNS name: its last label is a number, so clients read it as the IPv4 "
                                      f"address {READ[host]}")
    assert info.value.fix == f"write the address as four decimal numbers, '{READ[host]}' (if that is the host meant), or the host's DNS name"


@pytest.mark.parametrize("host", UNREADABLE)
def test_a_name_ending_in_a_number_is_no_host(host):
    for parse in (parse_hostname, parse_domain, parse_no_proxy_entry, lambda h: check_url_host(f"https://{h}/")):
        with pytest.raises(AddressError, match=f"'{host}' is not a DNS name: its last label is a number, which no domain ends with"):
            parse(host)


def test_names_and_addresses_still_pass():
    for host in ("proxy", "proxy.example.com", "192.0.2.10", "x.0xg", "0x7f.example.com", "123.example.com"):
        assert parse_hostname(host) == host
    assert check_url_host("http://[2001:db8::5]:3128") == "2001:db8::5"


def test_a_host_longer_than_253_characters_is_refused():
    host = ".".join(["a" * 63] * 4)  # 255 characters, every label of legal length
    with pytest.raises(AddressError, match="is 255 characters long: a host name is at most 253"):
        check_url_host(f"http://{host}:3128")
    assert parse_hostname(host[:253].rstrip(".")) == host[:253].rstrip(".")


@pytest.mark.parametrize("key, value", [("httpProxy", "http://127.1:3128"), ("proxyReadinessEndpoints", ["https://010.0.0.1/"]),
                                        ("vsphereEndpoints", ["2130706433"]), ("noProxy", ["127.1"]), ("kkpDomain", "kkp.0x10")])
def test_host_settings_refuse_them(key, value):
    with pytest.raises(ValidationError, match="is not a DNS name: its last label is a number"):
        Profile.model_validate({"platforms": ["kkp"], key: value})
