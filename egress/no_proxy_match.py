"""Which NO_PROXY entry sends a connection around the proxy, as Go clients decide it.

The cluster's clients that read a proxy from the environment (kubelet, CRI-O and containerd, the OpenShift operators,
KKP's controllers) are Go programs using golang.org/x/net/http/httpproxy (net/http's ProxyFromEnvironment), so this is
its ``useProxy`` (golang/net http/httpproxy/proxy.go, 0ca694d2, 2026-07-01), returning the entry that matched so that a
reader learns *why* a destination goes direct. Pure; its tests port Go's own table (proxy_test.go, UseProxyTests).

- ``*`` alone sends everything direct; ``localhost`` and loopback addresses never use a proxy.
- An IP or CIDR entry matches IP-literal destinations only (a name is never resolved for it); ``ip:port`` that port only.
  A CIDR is ``address/prefix-length`` (net.ParseCIDR): a netmask form such as ``10.0.0.0/255.0.0.0`` is no CIDR to Go,
  which then reads the entry as a domain name that matches nothing (``netmask_entry`` finds them, to refuse them).
- A name matches itself and its subdomains (``example.com``); ``.example.com`` and ``*.example.com`` subdomains only;
  ``name:port`` that port only. Entries are trimmed and lower-cased; empty ones are skipped.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Optional, Union

Address = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]


@dataclass(frozen=True)
class Bypass:
    """Why a destination does not use the proxy: the NO_PROXY entry that matched, as written, or a built-in reason."""

    entry: str  # the entry as written in NO_PROXY ("" for a built-in reason)
    reason: str


def split_host_port(text: str) -> Optional[tuple[str, str]]:
    """net.SplitHostPort: ("host", "port") or None where Go returns an error (no port, too many colons)."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or not text[end + 1:].startswith(":"):
            return None
        return text[1:end], text[end + 2:]
    if text.count(":") != 1:
        return None
    host, _, port = text.partition(":")
    return host, port


def go_cidr(entry: str) -> Optional[Network]:
    """The network of a CIDR entry as net.ParseCIDR reads it (host bits allowed), or None: Go takes only a decimal prefix
    length after the '/', where Python's ip_network also takes a netmask or a hostmask."""
    address, slash, bits = entry.strip().partition("/")
    if not slash or not re.fullmatch(r"[0-9]{1,3}", bits):
        return None
    try:
        return ipaddress.ip_network(entry.strip(), strict=False)
    except ValueError:
        return None


def netmask_entry(entry: str) -> Optional[str]:
    """For an entry written ``address/netmask`` (which Go does not read as a CIDR): the CIDR it was meant to be."""
    if go_cidr(entry) is not None or "/" not in entry:
        return None
    try:
        return str(ipaddress.ip_network(entry.strip(), strict=False))
    except ValueError:
        return None


def _ip(text: str) -> Optional[Address]:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def bypass(no_proxy: str, host: str, port: int) -> Optional[Bypass]:
    """The reason a Go client connecting to ``host:port`` goes direct, or None when it uses the proxy."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host == "localhost":
        return Bypass("", "localhost never uses a proxy")
    ip = _ip(host)
    if ip is not None and ip.is_loopback:
        return Bypass("", "a loopback address never uses a proxy")
    ip_matches: list[Bypass] = []
    domain_matches: list[Bypass] = []
    for written in no_proxy.split(","):
        entry = written.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return Bypass(written.strip(), "noProxy '*' sends every destination direct")
        network = go_cidr(entry)
        if network is not None:
            if ip is not None and ip in network:
                ip_matches.append(Bypass(written.strip(), f"{host} is in noProxy CIDR {entry}"))
            continue
        split = split_host_port(entry)
        entry_host, entry_port = split if split is not None else (entry, "")
        if split is not None and not entry_host:
            continue  # no host part: Go ignores the malformed entry
        entry_ip = _ip(entry_host)
        if entry_ip is not None:
            if ip is not None and entry_ip == ip and entry_port in ("", str(port)):
                ip_matches.append(Bypass(written.strip(), f"{host} is noProxy address {entry}"))
            continue
        if not entry_host:
            continue
        if entry_host.startswith("*."):
            entry_host = entry_host[1:]
        match_apex = not entry_host.startswith(".")
        suffix = entry_host if not match_apex else "." + entry_host
        if ip is None and (host.endswith(suffix) or (match_apex and host == suffix[1:])) and entry_port in ("", str(port)):
            domain_matches.append(Bypass(written.strip(), f"{host} is {'' if host == suffix[1:] else 'under '}noProxy domain {entry}"))
    found = ip_matches + domain_matches  # Go tries every IP matcher before any domain matcher
    return found[0] if found else None
