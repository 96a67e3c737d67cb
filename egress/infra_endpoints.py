"""Infrastructure APIs a cluster's own machines call, as the stack names them: OpenStack's Keystone auth URL and catalog
endpoints, Nutanix Prism Central, bare-metal BMC addresses. Pure: parsing and the host / port values they give the
matrix's placeholders.

A placeholder fills the destination and the ports of an entry independently (every host on every port), so a list of
host:port pairs is accepted only when that product opens nothing beyond the pairs listed; otherwise the error names the
pair it would add and how to say it instead.
"""
from __future__ import annotations

from typing import Iterable, Literal
from urllib.parse import urlsplit

from .addresses import AddressError, parse_fqdn, parse_ip

BmcProtocol = Literal["redfish", "ipmi"]

# Metal3's BMC address schemes (metal3-io/baremetal-operator pkg/hardwareutils/bmc, HEAD 02aa5059): each registers
# '<name>', '<name>+http' and '<name>+https'; Redfish defaults to https. 'libvirt' is driven through IPMI; a bare host
# or host:port is IPMI too (GetParsedURL).
_IPMI = ("ipmi", "libvirt")
_REDFISH = ("redfish", "ilo5-redfish", "idrac-redfish", "redfish-uefihttp", "redfish-virtualmedia", "ilo5-virtualmedia",
            "idrac-virtualmedia")
_DEFAULT_PORT = {"ipmi": 623, "redfish": 443}


def _host(text: str) -> str:
    try:
        return str(parse_ip(text))
    except AddressError:
        return parse_fqdn(text)


def _port(split, default: int, written: str) -> int:
    try:
        port = split.port
    except ValueError:
        raise AddressError(f"'{written}' has a port that is not a number between 1 and 65535", "write e.g. ':443'") from None
    if port == 0:
        raise AddressError(f"'{written}' has port 0", "write a port between 1 and 65535")
    return port or default


def openstack_endpoint(text: str) -> tuple[str, int]:
    """(host, port) of an OpenStack API URL as clouds.yaml or `openstack catalog list` writes it (https only)."""
    split = urlsplit(text)
    if split.scheme != "https" or not split.hostname:
        raise AddressError(f"'{text}' is not an https:// URL",
                           "write the endpoint as it appears in clouds.yaml or 'openstack catalog list', e.g. "
                           "'https://keystone.example.com:5000/v3' (plain http sends the cloud's credentials and tokens unencrypted)")
    if split.username or split.password:
        raise AddressError(f"'{text}' carries credentials", "give the URL without user or password")
    return _host(split.hostname), _port(split, 443, text)


def bmc_endpoint(text: str) -> tuple[BmcProtocol, str, int]:
    """(protocol, host, port) of a BMC address as install-config's hosts[].bmc.address writes it."""
    scheme, sep, rest = text.partition("://")
    if not sep:  # a bare host or host:port is IPMI (metal3 GetParsedURL)
        scheme, rest = "ipmi", text
    name, plus, transport = scheme.partition("+")
    if name in _IPMI and not plus:
        protocol: BmcProtocol = "ipmi"
    elif name in _REDFISH and transport in ("", "https"):
        protocol = "redfish"
    elif name in _REDFISH and transport == "http":
        raise AddressError(f"'{text}' drives the BMC over plain http",
                           f"use '{name}://' (Redfish over HTTPS, metal3's default), or allow it as an own stack entry (egress-matrix:entries)")
    else:
        raise AddressError(f"'{text}' has a BMC scheme metal3 does not know",
                           f"write one of {', '.join(f'{s}://' for s in (*_IPMI, *_REDFISH))} (optionally +https), or a bare host for IPMI")
    split = urlsplit("//" + rest)
    if split.username or split.password:
        raise AddressError(f"'{text}' carries credentials", "give the address without user or password (install-config keeps them in bmc.username/password)")
    if not split.hostname:
        raise AddressError(f"'{text}' names no host", "write e.g. 'redfish-virtualmedia://192.0.2.10/redfish/v1/Systems/1' or 'ipmi://192.0.2.11'")
    return protocol, _host(split.hostname), _port(split, _DEFAULT_PORT[protocol], text)


def hosts_and_ports(pairs: Iterable[tuple[str, int]], setting: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The hosts and the ports of ``pairs``, sorted; refused when every host on every port would open more than the pairs."""
    pairs = sorted(set(pairs))
    hosts = tuple(sorted({host for host, _ in pairs}))
    ports = tuple(str(port) for port in sorted({port for _, port in pairs}))
    extra = sorted({(host, int(port)) for host in hosts for port in ports} - set(pairs))
    if extra:
        host, port = extra[0]
        raise AddressError(f"the matrix opens every host of {setting} on every port it lists, which would also open {host}:{port}",
                           f"list in {setting} only hosts that share their ports, and allow the others as own stack entries (egress-matrix:entries)")
    return hosts, ports


# ---------------------------------------------------------------------------------------------- placeholder values
def _split(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host, int(port)


def prism_central(value: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Hosts and ports of nutanixPrismCentral (host:port, validated by the profile)."""
    return hosts_and_ports([_split(value)] if value else [], "nutanixPrismCentral")


def openstack_auth(value: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return hosts_and_ports([openstack_endpoint(value)] if value else [], "openstackAuthUrl")


def openstack_catalog(values: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return hosts_and_ports((openstack_endpoint(value) for value in values), "openstackEndpoints")


def bmcs(values: Iterable[str], protocol: BmcProtocol) -> tuple[tuple[str, ...], tuple[str, ...]]:
    parsed = (bmc_endpoint(value) for value in values)
    return hosts_and_ports(((host, port) for kind, host, port in parsed if kind == protocol), f"bmcAddresses ({protocol})")
