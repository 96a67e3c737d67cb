"""Go's ``net/url`` parser (``Parse``, ``ParseRequestURI``, ``URL.Hostname``/``URL.Port``) ported to pure Python.

Ported from golang/go src/net/url/url.go as read through its mirror ``tomaszbk/go`` @
981e97487043d078cd3b9fdc252312bbaca1d82e (see egress/gonet.py for the version notes), with the default GODEBUG of a
``go 1.26`` main module: ``urlstrictcolons=1``. Work is done on the UTF-8 bytes of the input, as Go does; the
fields of the returned URL are decoded back (bytes that are not UTF-8 map to lone surrogates).
"""
from __future__ import annotations

from dataclasses import dataclass

from egress.goip import GoAddrError, go_bytes, go_quote, go_str, parse_addr

PATH, PATH_SEGMENT, HOST, ZONE, USER_PASSWORD, QUERY_COMPONENT, FRAGMENT = range(1, 8)
_HEX = frozenset(b"0123456789abcdefABCDEF")


class GoURLError(ValueError):
    """*url.Error: ``str()`` is Go's ``Error()``, ``<op> "<url>": <err>`` with the URL quoted like %q."""

    def __init__(self, op: str, url: str | bytes, err: str):
        self.op, self.url, self.err = op, go_str(go_bytes(url)), err
        super().__init__(f"{op} {go_quote(url)}: {err}")


class _Err(Exception):
    """An error of parse(), before *url.Error wraps it."""


@dataclass(frozen=True)
class Userinfo:
    username: str
    password: str | None = None  # None: no password set (Go's passwordSet false)


@dataclass(frozen=True)
class URL:
    scheme: str = ""
    opaque: str = ""
    user: Userinfo | None = None
    host: str = ""
    path: str = ""
    raw_path: str = ""
    omit_host: bool = False
    force_query: bool = False
    raw_query: str = ""
    fragment: str = ""
    raw_fragment: str = ""

    def is_abs(self) -> bool:
        return self.scheme != ""

    def hostname(self) -> str:
        return _split_host_port(self.host)[0]

    def port(self) -> str:
        return _split_host_port(self.host)[1]


def _split_host_port(host_port: str) -> tuple[str, str]:
    host, port = host_port, ""
    colon = host.rfind(":")
    if colon != -1 and _valid_optional_port(host[colon:]):
        host, port = host[:colon], host[colon + 1:]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


def _valid_optional_port(port: str | bytes) -> bool:  # "" or /^:\d*$/ (ASCII digits)
    p = go_bytes(port)
    return p == b"" or (p[:1] == b":" and all(0x30 <= c <= 0x39 for c in p[1:]))


def should_escape(c: int, mode: int) -> bool:
    if chr(c).isascii() and chr(c).isalnum():
        return False
    if mode in (HOST, ZONE) and c in b"!$&'()*+,;=:[]<>\"":
        return False
    if c in b"-_.~":
        return False
    if c in b"$&+,/:;=?@":
        if mode == PATH:
            return c == ord("?")
        if mode == PATH_SEGMENT:
            return c in b"/;,?"
        if mode == USER_PASSWORD:
            return c in b"@/?:"
        if mode == QUERY_COMPONENT:
            return True
        if mode == FRAGMENT:
            return False
    return not (mode == FRAGMENT and c in b"!()*")


def unescape(s: bytes, mode: int) -> bytes:
    i, n, has_plus = 0, 0, False
    while i < len(s):
        c = s[i]
        if c == 0x25:  # '%'
            n += 1
            if i + 2 >= len(s) or s[i + 1] not in _HEX or s[i + 2] not in _HEX:
                raise _Err("invalid URL escape " + go_quote(s[i:i + 3]))
            if mode == HOST and int(chr(s[i + 1]), 16) < 8 and s[i:i + 3] != b"%25":
                raise _Err("invalid URL escape " + go_quote(s[i:i + 3]))
            if mode == ZONE:
                v = int(s[i + 1:i + 3], 16)
                if s[i:i + 3] != b"%25" and v != 0x20 and should_escape(v, HOST):
                    raise _Err("invalid URL escape " + go_quote(s[i:i + 3]))
            i += 3
        else:
            if c == 0x2B:
                has_plus = mode == QUERY_COMPONENT
            elif mode in (HOST, ZONE) and c < 0x80 and should_escape(c, mode):
                raise _Err("invalid character " + go_quote(s[i:i + 1]) + " in host name")
            i += 1
    if n == 0 and not has_plus:
        return s
    out, i = bytearray(), 0
    while i < len(s):
        if s[i] == 0x25:
            out.append(int(s[i + 1:i + 3], 16))
            i += 3
            continue
        out.append(0x20 if s[i] == 0x2B and mode == QUERY_COMPONENT else s[i])
        i += 1
    return bytes(out)


def escape(s: bytes, mode: int) -> bytes:
    out = bytearray()
    for c in s:
        if c == 0x20 and mode == QUERY_COMPONENT:
            out.append(0x2B)
        elif should_escape(c, mode):
            out += b"%%%02X" % c
        else:
            out.append(c)
    return bytes(out)


def _get_scheme(raw: bytes) -> tuple[bytes, bytes]:
    for i, c in enumerate(raw):
        if chr(c).isascii() and chr(c).isalpha():
            continue
        if 0x30 <= c <= 0x39 or c in b"+-.":
            if i == 0:
                return b"", raw
        elif c == 0x3A:
            if i == 0:
                raise _Err("missing protocol scheme")
            return raw[:i], raw[i + 1:]
        else:
            return b"", raw
    return b"", raw


def _parse_host(scheme: bytes, host: bytes) -> bytes:
    open_bracket = host.rfind(b"[")
    if open_bracket > 0:
        raise _Err("invalid IP-literal")
    if open_bracket == 0:
        close = host.rfind(b"]")
        if close < 0:
            raise _Err("missing ']' in host")
        colon_port = host[close + 1:]
        if not _valid_optional_port(colon_port):
            raise _Err(f"invalid port {go_quote(colon_port)} after host")
        unescaped_port, hostname = unescape(colon_port, HOST), host[1:close]
        zone = hostname.find(b"%25")
        if zone >= 0:
            name = unescape(hostname[:zone], HOST) + unescape(hostname[zone:], ZONE)
        else:
            name = unescape(hostname, HOST)
        try:
            addr, _ = parse_addr(name)
        except GoAddrError as e:
            raise _Err(f"invalid host: {e}") from None
        if addr.version == 4:
            raise _Err("invalid IP-literal")
        return b"[" + name + b"]" + unescaped_port
    i = host.find(b":")
    if i != -1:
        last = host.rfind(b":")
        # urlstrictcolons (default on since Go 1.26): an http(s) host keeps its first colon as the port colon;
        # other schemes use the last one (go.dev/issue/75223, go.dev/issue/78077).
        if last != i and scheme not in (b"http", b"https"):
            i = last
        if not _valid_optional_port(host[i:]):
            raise _Err(f"invalid port {go_quote(host[i:])} after host")
    return unescape(host, HOST)


def _parse_authority(scheme: bytes, authority: bytes) -> tuple[Userinfo | None, bytes]:
    i = authority.rfind(b"@")
    host = _parse_host(scheme, authority[i + 1:] if i >= 0 else authority)
    if i < 0:
        return None, host
    userinfo = authority[:i]
    # validUserinfo: RFC 3986 userinfo characters plus '@' (go.dev/issue/3439); any non-ASCII rune fails.
    if any(not (chr(c).isascii() and chr(c).isalnum()) and c not in b"-._:~!$&'()*+,;=%@" for c in userinfo):
        raise _Err("net/url: invalid userinfo")
    if b":" not in userinfo:
        return Userinfo(go_str(unescape(userinfo, USER_PASSWORD))), host
    username, _, password = userinfo.partition(b":")
    username = unescape(username, USER_PASSWORD)
    return Userinfo(go_str(username), go_str(unescape(password, USER_PASSWORD))), host


def _raw(decoded: bytes, given: bytes, mode: int) -> str:  # setPath/setFragment: keep the hint only if needed
    return "" if escape(decoded, mode) == given else go_str(given)


def _parse(raw: bytes, via_request: bool) -> dict:
    if any(c < 0x20 or c == 0x7F for c in raw):
        raise _Err("net/url: invalid control character in URL")
    if raw == b"" and via_request:
        raise _Err("empty url")
    if raw == b"*":
        return {"path": "*"}
    scheme, rest = _get_scheme(raw)
    scheme = scheme.lower()
    url: dict = {"scheme": go_str(scheme)}
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        url["force_query"], rest = True, rest[:-1]
    else:
        rest, _, query = rest.partition(b"?")
        url["raw_query"] = go_str(query)
    if not rest.startswith(b"/"):
        if scheme:
            return {**url, "opaque": go_str(rest)}  # rootless paths are opaque (RFC 3986)
        if via_request:
            raise _Err("invalid URI for request")
        if b":" in rest.partition(b"/")[0]:
            raise _Err("first path segment in URL cannot contain colon")
    if (scheme or (not via_request and not rest.startswith(b"///"))) and rest.startswith(b"//"):
        authority, slash, tail = rest[2:].partition(b"/")
        rest = slash + tail
        user, host = _parse_authority(scheme, authority)
        url.update(user=user, host=go_str(host))
    elif scheme and rest.startswith(b"/"):
        url["omit_host"] = True
    path = unescape(rest, PATH)
    return {**url, "path": go_str(path), "raw_path": _raw(path, rest, PATH)}


def parse_request_uri(raw_url: str | bytes) -> URL:
    """url.ParseRequestURI: an absolute URI or an absolute path, no fragment. Raises GoURLError("parse", ...)."""
    raw = go_bytes(raw_url)
    try:
        return URL(**_parse(raw, True))
    except _Err as e:
        raise GoURLError("parse", raw, str(e)) from None


def parse(raw_url: str | bytes) -> URL:
    """url.Parse: any URI reference; a #fragment is split off first (and an error then quotes the URL without it)."""
    raw = go_bytes(raw_url)
    u, _, frag = raw.partition(b"#")
    try:
        fields = _parse(u, False)
    except _Err as e:
        raise GoURLError("parse", u, str(e)) from None
    if frag:
        try:
            fragment = unescape(frag, FRAGMENT)
        except _Err as e:
            raise GoURLError("parse", raw, str(e)) from None
        fields.update(fragment=go_str(fragment), raw_fragment=_raw(fragment, frag, FRAGMENT))
    return URL(**fields)
