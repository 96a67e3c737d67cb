"""Breadth judged by coverage, never by spelling (DESIGN.md, "Safe against production"): ``0.0.0.0/1`` plus
``128.0.0.0/1`` is the internet, and so is a noProxy entry ``.com``.

- ``public_share``: the share of public address space a set of networks covers, per family, after collapsing them.
  Public space is IPv4 ``0.0.0.0/0`` and IPv6 global unicast ``2000::/3``, less the IANA special-purpose blocks that
  are not globally reachable (the IPv4 and IPv6 Special-Purpose Address Registries, RFC 6890 and later), multicast
  and the reserved ``240.0.0.0/4``. The globally reachable special blocks (AS112 ``192.31.196.0/24`` and
  ``192.175.48.0/24``, AMT ``192.52.193.0/24``) stay public. An IPv6 range inside the NAT64 well-known prefix
  ``64:ff9b::/96`` (RFC 6052) counts as the IPv4 addresses it translates to: through a NAT64 gateway it reaches them; so
  does one inside ``::ffff:0:0/96``, which Go's net.IPNet reads as IPv4 (``::ffff:0:0/96`` is 0.0.0.0/0 there), and
  one inside the local-use translation prefix ``64:ff9b:1::/48`` (RFC 8215, below).
- ``port_span``: how many ports a set of ranges opens.
- ``public_suffix``: the ICANN public suffix a name is or covers (``com``, ``co.uk``, and ``akershus.no``, which
  holds ``nes.akershus.no``), from the Public Suffix List the ``publicsuffixlist`` package bundles. Its private
  section (``s3.amazonaws.com``) is one operator's namespace, so it is not counted.
``egress.flows`` judges what a target allows with these measures. Pure: no I/O beyond reading the bundled list once,
no Pulumi.
"""
from __future__ import annotations

import ipaddress
from functools import lru_cache
from typing import Iterable, Optional, Union

import publicsuffixlist

from .addresses import PortRange, normalize_ports

IPNetwork = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]
ANY: tuple[IPNetwork, ...] = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))
ALL_PORTS = (PortRange(1, 65535),)
TRANSPORTS = ("tcp", "udp")

# Not globally reachable (registry column "Globally Reachable" False or N/A), multicast, reserved.
SPECIAL_V4 = ("0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
              "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
              "224.0.0.0/4", "240.0.0.0/4")
# Inside 2000::/3: IETF protocol assignments (Teredo, ORCHID, benchmarking), 6to4, documentation (RFC 3849, RFC 9637).
# Teredo (2001::/32) and 6to4 (2002::/16) embed IPv4 too, but are not counted as the IPv4 they name: that address is a
# tunnel end (a 6to4 router, a Teredo server) that must itself speak the protocol, not any IPv4 host behind a
# translator; the registry marks both not globally reachable, and 6to4's relays are deprecated (RFC 7526).
SPECIAL_V6 = ("2001::/23", "2001:db8::/32", "2002::/16", "3fff::/20")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
# RFC 8215's local-use translation prefix: an operator carves translation prefixes of any RFC 6052 length (/32 to /96)
# from it, and which one decides where the IPv4 sits (at /48 its first 16 bits follow the prefix, the rest after the
# reserved bits 64-71). Counted conservatively: a range of 2^32 addresses or more inside it can hold a whole /96
# translation prefix, so it reaches all of IPv4; a smaller one as the /96 format reads it (the IPv4 in its last 32 bits).
NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
V4_MAPPED = ipaddress.ip_network("::ffff:0:0/96")  # Go's net.IPNet reads '::ffff:0:0/96' as 0.0.0.0/0 (golang/go#51906)


def minus(networks: Iterable[IPNetwork], removed: Iterable[IPNetwork]) -> list[IPNetwork]:
    """``networks`` without the addresses of ``removed`` (same family only), as disjoint networks."""
    out = list(networks)
    for cut in removed:
        kept: list[IPNetwork] = []
        for net in out:
            if net.version != cut.version or not net.overlaps(cut):
                kept.append(net)
            elif not net.subnet_of(cut):  # type: ignore[arg-type]
                kept.extend(net.address_exclude(cut))  # type: ignore[arg-type]
        out = kept
    return out


@lru_cache(maxsize=None)
def public_space(version: int) -> tuple[IPNetwork, ...]:
    root, special = (("0.0.0.0/0", SPECIAL_V4) if version == 4 else ("2000::/3", SPECIAL_V6))
    return tuple(sorted(minus([ipaddress.ip_network(root)], (ipaddress.ip_network(s) for s in special))))


PUBLIC_TOTAL = {version: sum(n.num_addresses for n in public_space(version)) for version in (4, 6)}
_ROOTS = {4: (ipaddress.ip_network("0.0.0.0/0"), tuple(ipaddress.ip_network(s) for s in SPECIAL_V4)),
          6: (ipaddress.ip_network("2000::/3"), tuple(ipaddress.ip_network(s) for s in SPECIAL_V6))}


def collapse(networks: Iterable[IPNetwork]) -> tuple[IPNetwork, ...]:
    """Merged per family (IPv4 first): the coverage, whatever the spelling."""
    nets = list(networks)
    return tuple(n for version in (4, 6) for n in ipaddress.collapse_addresses(x for x in nets if x.version == version))


def networks_of(texts: Iterable[str]) -> tuple[IPNetwork, ...]:
    """IPs and CIDRs among ``texts`` as networks (``*`` is everything); anything else (names, tags) is skipped."""
    return _networks_of(tuple(texts))


@lru_cache(maxsize=4096)
def _networks_of(texts: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    out: list[IPNetwork] = []
    for text in texts:
        text = str(text).strip()
        if text in ("*", "any", "Internet"):
            out.extend(ANY)
            continue
        try:
            out.append(ipaddress.ip_network(text, strict=False))
        except ValueError:
            continue
    return tuple(out)


def _embedded_v4(net: ipaddress.IPv6Network, prefix: ipaddress.IPv6Network) -> Optional[ipaddress.IPv4Network]:
    """The IPv4 addresses ``net`` holds inside a prefix that embeds IPv4 in the last 32 bits of a /96 (NAT64, IPv4-mapped,
    the local-use prefix as NAT64_LOCAL says)."""
    if not net.overlaps(prefix):
        return None
    if prefix.subnet_of(net) or net.prefixlen <= 96:  # holds the prefix, or (inside it) a whole /96
        return ipaddress.ip_network("0.0.0.0/0")  # type: ignore[return-value]
    return ipaddress.ip_network((int(net.network_address) & 0xFFFFFFFF, net.prefixlen - 96))  # type: ignore[return-value]


def _nat64_as_v4(net: ipaddress.IPv6Network) -> Optional[ipaddress.IPv4Network]:
    return _embedded_v4(net, NAT64)


def public_addresses(networks: Iterable[IPNetwork], nat64: bool = True) -> dict[int, int]:
    """Public addresses covered, per family: NAT64 ranges and IPv4-mapped ones (``::ffff:0:0/96``) counted as the IPv4
    they reach, as a NAT64 gateway and Go's net.IPNet read them (unless ``nat64`` is off)."""
    return _public_addresses(networks, (NAT64, NAT64_LOCAL, V4_MAPPED) if nat64 else ())


def _public_addresses(networks: Iterable[IPNetwork], embedded: tuple[ipaddress.IPv6Network, ...]) -> dict[int, int]:
    nets = list(networks)
    # a network holding the NAT64 prefix reaches all of IPv4 through the gateway; Go reads only a network written inside
    # ::ffff:0:0/96 as IPv4 (its network number's To4), not '::/0'
    nets += [v4 for n in nets if n.version == 6 for prefix in embedded if (prefix is not V4_MAPPED or n.subnet_of(prefix))  # type: ignore[arg-type]
             and (v4 := _embedded_v4(n, prefix)) is not None]  # type: ignore[arg-type]
    counts = {}
    for version in (4, 6):
        root, special = _ROOTS[version]
        merged: list[list[int]] = []  # the networks as merged [first, last] ranges (thousands of /32s: no per-pair work)
        for first, last in sorted((int(n.network_address), int(n.broadcast_address)) for n in nets if n.version == version):
            if merged and first <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], last)
            else:
                merged.append([first, last])
        # the special blocks are disjoint and lie in the root
        counts[version] = _within(merged, root) - sum(_within(merged, s) for s in special)
    return counts


def _within(ranges: list[list[int]], block: IPNetwork) -> int:
    """Addresses of ``ranges`` (merged, sorted) inside ``block``."""
    low, high = int(block.network_address), int(block.broadcast_address)
    return sum(min(last, high) - max(first, low) + 1 for first, last in ranges if first <= high and low <= last)


def public_share(networks: Iterable[IPNetwork]) -> float:
    """The larger of the two families' covered shares of public space, in percent."""
    counts = public_addresses(networks)
    return max(100.0 * counts[v] / PUBLIC_TOTAL[v] for v in (4, 6))


def describe_share(networks: Iterable[IPNetwork]) -> str:
    networks = list(networks)
    counts = public_addresses(networks)
    parts = [f"{_percent(100.0 * counts[v] / PUBLIC_TOTAL[v])} of public IPv{v}" for v in (4, 6) if counts[v]]
    plain = _public_addresses(networks, ())[4]
    through: list[str] = []  # each prefix that adds IPv4 the ones named before it do not ('::/0' holds both NAT64 prefixes)
    taken: tuple[ipaddress.IPv6Network, ...] = ()
    for what, prefix in (("NAT64 addresses", NAT64), ("local-use NAT64 addresses", NAT64_LOCAL), ("IPv4-mapped IPv6 addresses", V4_MAPPED)):
        if _public_addresses(networks, (*taken, prefix))[4] > _public_addresses(networks, taken)[4]:
            taken += (prefix,)
            through.append(f"{what} in {prefix}")
    if counts[4] > plain:
        parts[0] += f" (some as {' and '.join(through)})"
    return " and ".join(parts) or "no public address"


def _percent(value: float) -> str:
    return f"{value:.0f}%" if value >= 10 or value == int(value) else f"{value:.2g}%"


def port_span(ranges: Iterable[PortRange]) -> int:
    return sum(r.end - r.start + 1 for r in normalize_ports(ranges))


# ---------------------------------------------------------------------------------------------- public suffixes
@lru_cache(maxsize=1)
def _psl() -> tuple[publicsuffixlist.PublicSuffixList, frozenset[str]]:
    """The ICANN list (unknown TLDs are not suffixes: '.local' or '.svc' are not on the internet) and every name that
    is or lies above one of its rules."""
    psl = publicsuffixlist.PublicSuffixList(only_icann=True, accept_unknown=False)
    covering: set[str] = set()
    icann = False
    with open(publicsuffixlist.PSLFILE, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            icann = (icann or line == "// ===BEGIN ICANN DOMAINS===") and line != "// ===END ICANN DOMAINS==="
            if not icann or not line or line.startswith(("//", "!")):
                continue
            labels = _ascii(line.removeprefix("*.")).split(".")
            covering.update(".".join(labels[i:]) for i in range(len(labels)))
    return psl, frozenset(covering)


def _ascii(name: str) -> str:
    if name.isascii():  # nearly every line of the list: no per-label work
        return name
    try:
        return ".".join(label.encode("idna").decode("ascii") if not label.isascii() else label for label in name.split("."))
    except UnicodeError:
        return name


@lru_cache(maxsize=8192)
def public_suffix(name: str) -> Optional[str]:
    """The public suffix ``name`` (a host, ``.domain``, ``*.domain``, in any case: DNS, Go's and curl's noProxy and the
    proxies match names case-insensitively, so ``COM`` is ``com``) is or covers, else None. Only DNS names belong here:
    callers keep Azure service tags apart (``flows.Allow.tags``, a destination's kind), never guessed from upper case."""
    domain = name.strip().lower().removeprefix("*.").lstrip(".").rstrip(".")
    if not domain or not all(c.isalnum() or c in "-." for c in domain) or domain.replace(".", "").isdigit():
        return None
    psl, covering = _psl()
    if domain in covering or psl.is_public(domain):
        return domain
    return None


@lru_cache(maxsize=1)
def _private_suffixes() -> frozenset[str]:
    """The Public Suffix List's private domains: names under which anyone may register their own (github.io,
    ngrok-free.app, blob.core.windows.net)."""
    private, names = False, set()
    with open(publicsuffixlist.PSLFILE, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            private = (private or line == "// ===BEGIN PRIVATE DOMAINS===") and line != "// ===END PRIVATE DOMAINS==="
            if private and line and not line.startswith(("//", "!")):
                names.add(_ascii(line.removeprefix("*.")).lower())
    return frozenset(names)


@lru_cache(maxsize=8192)
def shared_suffix(name: str) -> Optional[str]:
    """The private public suffix (PSL private domains) a wildcard ``*.x`` or ``.x`` is or lies directly on, else None:
    ``*.github.io`` allows every GitHub Pages site, ``*.x.github.io`` one user's."""
    domain = name.strip().lower().removeprefix("*.").lstrip(".").rstrip(".")
    return domain if domain in _private_suffixes() else None
