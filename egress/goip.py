"""Go's ``strconv.Quote``, ``net/netip.ParseAddr``, ``net.ParseIP`` and ``net.ParseCIDR``, ported to pure Python.

Ported from golang/go as read through its mirror ``tomaszbk/go`` @ 981e97487043d078cd3b9fdc252312bbaca1d82e (Go
master after 1.26: src/net/netip/netip.go, src/net/ip.go, src/net/parse.go ``dtoi``, src/strconv/quote.go);
see egress/gonet.py for why that snapshot. Go strings are bytes: every function takes ``str`` (encoded as UTF-8,
lone surrogates mapping back to raw bytes) or ``bytes``, so error texts quote exactly what Go would see.
"""
from __future__ import annotations

import ipaddress
import unicodedata

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def go_bytes(s: str | bytes) -> bytes:
    return s if isinstance(s, bytes) else s.encode("utf-8", "surrogateescape")


def go_str(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _is_print(r: str) -> bool:
    # unicode.IsPrint: letters, marks, numbers, punctuation, symbols and U+0020 (Python's Unicode tables may be a
    # version behind Go's for newly assigned code points).
    return r == " " or unicodedata.category(r)[0] in "LMNPS"


_NAMED = {7: r"\a", 8: r"\b", 12: r"\f", 10: r"\n", 13: r"\r", 9: r"\t", 11: r"\v"}


def go_quote(s: str | bytes) -> str:
    """strconv.Quote (and so fmt's %q for strings): invalid UTF-8 bytes become \\xNN, non-printable runes
    \\a..\\v, \\xNN (below U+0020 and U+007F), \\uNNNN or \\UNNNNNNNN, lower-case hex."""
    b, out, i = go_bytes(s), ['"'], 0
    while i < len(b):
        c, width = b[i], 1
        if c >= 0x80:
            width = 2 if 0xC2 <= c <= 0xDF else 3 if 0xE0 <= c <= 0xEF else 4 if 0xF0 <= c <= 0xF4 else 0
            try:
                r = b[i:i + width].decode("utf-8") if width else ""
            except UnicodeDecodeError:
                r = ""
            if len(r) != 1:  # utf8.RuneError of width 1
                out.append(f"\\x{c:02x}")
                i += 1
                continue
        else:
            r = chr(c)
        i += width
        if r in ('"', "\\"):
            out.append("\\" + r)
        elif _is_print(r):
            out.append(r)
        elif ord(r) in _NAMED:
            out.append(_NAMED[ord(r)])
        elif ord(r) < 0x20 or ord(r) == 0x7F:
            out.append(f"\\x{ord(r):02x}")
        elif ord(r) < 0x10000:
            out.append(f"\\u{ord(r):04x}")
        else:
            out.append(f"\\U{ord(r):08x}")
    return "".join(out) + '"'


class GoAddrError(ValueError):
    """netip's parseAddrError: ``ParseAddr("<in>"): <msg>[ (at "<at>")]``."""

    def __init__(self, in_: bytes, msg: str, at: bytes = b""):
        self.in_, self.msg, self.at = in_, msg, at
        text = f"ParseAddr({go_quote(in_)}): {msg}"
        super().__init__(text + (f" (at {go_quote(at)})" if at else ""))


class GoParseError(ValueError):
    """net.ParseError: ``invalid <type>: <text>``."""

    def __init__(self, type_: str, text: str):
        self.type, self.text = type_, text
        super().__init__(f"invalid {type_}: {text}")


def _ipv4_fields(in_: bytes, off: int, end: int) -> bytes:
    s, fields, val, dig = in_[off:end], [], 0, 0
    for i, c in enumerate(s):
        if 0x30 <= c <= 0x39:
            if dig == 1 and val == 0:
                raise GoAddrError(in_, "IPv4 field has octet with leading zero")
            val, dig = val * 10 + c - 0x30, dig + 1
            if val > 255:
                raise GoAddrError(in_, "IPv4 field has value >255")
        elif c == 0x2E:
            if i == 0 or i == len(s) - 1 or s[i - 1] == 0x2E:
                raise GoAddrError(in_, "IPv4 field must have at least one digit", s[i:])
            if len(fields) == 3:
                raise GoAddrError(in_, "IPv4 address too long")
            fields.append(val)
            val, dig = 0, 0
        else:
            raise GoAddrError(in_, "unexpected character", s[i:])
    if len(fields) < 3:
        raise GoAddrError(in_, "IPv4 address too short")
    return bytes(fields + [val])


def _parse_ipv6(in_: bytes) -> tuple[ipaddress.IPv6Address, str]:
    s, zone = in_, b""
    if b"%" in s:
        s, _, zone = s.partition(b"%")
        if not zone:
            raise GoAddrError(in_, "zone must be a non-empty string")
    ip, ellipsis, i = bytearray(16), -1, 0
    if s[:2] == b"::":
        ellipsis, s = 0, s[2:]
        if not s:
            return ipaddress.IPv6Address(0), go_str(zone)
    while i < 16:
        off, acc = 0, 0
        while off < len(s) and chr(s[off]) in "0123456789abcdefABCDEF":
            acc = (acc << 4) + int(chr(s[off]), 16)
            if off > 3:
                raise GoAddrError(in_, "each group must have 4 or less digits", s)
            if acc > 0xFFFF:
                raise GoAddrError(in_, "IPv6 field has value >=2^16", s)
            off += 1
        if off == 0:
            raise GoAddrError(in_, "each colon-separated field must have at least one digit", s)
        if off < len(s) and s[off] == 0x2E:
            if ellipsis < 0 and i != 12:
                raise GoAddrError(in_, "embedded IPv4 address must replace the final 2 fields of the address", s)
            if i + 4 > 16:
                raise GoAddrError(in_, "too many hex fields to fit an embedded IPv4 at the end of the address", s)
            end = len(in_) - (len(zone) + 1 if zone else 0)
            ip[i:i + 4] = _ipv4_fields(in_, end - len(s), end)
            s, i = b"", i + 4
            break
        ip[i], ip[i + 1], i = acc >> 8, acc & 0xFF, i + 2
        s = s[off:]
        if not s:
            break
        if s[0] != 0x3A:
            raise GoAddrError(in_, "unexpected character, want colon", s)
        if len(s) == 1:
            raise GoAddrError(in_, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == 0x3A:
            if ellipsis >= 0:
                raise GoAddrError(in_, "multiple :: in address", s)
            ellipsis, s = i, s[1:]
            if not s:
                break
    if s:
        raise GoAddrError(in_, "trailing garbage after address", s)
    if i < 16:
        if ellipsis < 0:
            raise GoAddrError(in_, "address string too short")
        n = 16 - i
        ip[ellipsis + n:16], ip[ellipsis:ellipsis + n] = ip[ellipsis:i], bytes(n)
    elif ellipsis >= 0:
        raise GoAddrError(in_, "the :: must expand to at least one field of zeros")
    return ipaddress.IPv6Address(bytes(ip)), go_str(zone)


def parse_addr(s: str | bytes) -> tuple[IPAddress, str]:
    """netip.ParseAddr: (address, zone); IPv4-mapped IPv6 text stays an IPv6Address (netip's Is4 is false)."""
    b = go_bytes(s)
    for c in b:
        if c == 0x2E:
            return ipaddress.IPv4Address(_ipv4_fields(b, 0, len(b))), ""
        if c == 0x3A:
            return _parse_ipv6(b)
        if c == 0x25:
            raise GoAddrError(b, "missing IPv6 address")
    raise GoAddrError(b, "unable to parse IP")


def _to4(addr: IPAddress) -> IPAddress:
    return addr.ipv4_mapped or addr if isinstance(addr, ipaddress.IPv6Address) else addr


def parse_ip(s: str | bytes) -> IPAddress | None:
    """net.ParseIP: None where Go returns nil (zones rejected). Go returns the same 16 bytes for "1.2.3.4" and
    "::ffff:1.2.3.4", so both come back as IPv4Address("1.2.3.4")."""
    try:
        addr, zone = parse_addr(s)
    except GoAddrError:
        return None
    return None if zone else _to4(addr)


def _dtoi(s: bytes) -> tuple[int, int, bool]:  # net/parse.go: decimal to int, big = 0xFFFFFF
    n, i = 0, 0
    while i < len(s) and 0x30 <= s[i] <= 0x39:
        n = n * 10 + s[i] - 0x30
        if n >= 0xFFFFFF:
            return 0xFFFFFF, i, False
        i += 1
    return (n, i, True) if i else (0, 0, False)


def parse_cidr(s: str | bytes) -> tuple[IPAddress, IPNetwork]:
    """net.ParseCIDR: (ip as parse_ip gives it, network with host bits cleared); raises GoParseError
    ``invalid CIDR address: <s>``. The prefix length may have leading zeros ("10.0.0.0/08")."""
    b = go_bytes(s)
    err = GoParseError("CIDR address", go_str(b))
    addr_b, sep, mask = b.partition(b"/")
    if not sep:
        raise err
    try:
        addr, zone = parse_addr(addr_b)
    except GoAddrError:
        raise err from None
    n, i, ok = _dtoi(mask)
    if zone or not ok or i != len(mask) or n > addr.max_prefixlen:
        raise err
    return _to4(addr), ipaddress.ip_network((addr, n), strict=False)
