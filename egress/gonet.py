"""The cluster-network-operator's proxy URI and IP/CIDR checks, with the Go standard library under them, in pure Python.

OpenShift's cluster-network-operator (CNO) validates ``Proxy`` URLs with Go's ``net/url`` and ``net``; to give the same
verdicts and the same error texts without a Go toolchain, this package ports them:

* egress/gourl.py: ``net/url`` ``Parse``/``ParseRequestURI`` (getScheme, parseAuthority, parseHost with IPv6 brackets
  and zones, validOptionalPort, validUserinfo, shouldEscape/unescape/escape), ``URL.Hostname``/``URL.Port`` and
  ``*url.Error`` texts (``parse "<url>": <err>``, the URL quoted by a port of ``strconv.Quote``).
* egress/goip.py: ``strconv.Quote``, ``netip.ParseAddr`` (its exact error texts), ``net.ParseIP``, ``net.ParseCIDR``.
* this module: CNO's ``validation.URI`` and ``validation.IPAddressOrCIDR``, with their messages verbatim.

Sources read:

* openshift/cluster-network-operator @ 2a6a57fef3ac1c8fde00e85b603e9f73ef29b75c (mirror HEAD, 2026-08-20):
  pkg/util/validation/network.go (``URI``, ``Port``, ``IPAddressOrCIDR``), network_test.go, and the caller
  pkg/controller/proxyconfig/validation.go (``ValidateProxyConfig``). Its go.mod says ``go 1.26.0`` and its
  Dockerfile builds with ``rhel-9-golang-1.26``, so the Go 1.26 default GODEBUG applies (``urlstrictcolons=1``).
* Go: golang/go itself could not be fetched here (its snapshot is over the size limit) and the versions of url.go the
  file index returns for golang/go predate both Go 1.26 host checks below, so the sources were read from the mirror
  ``tomaszbk/go`` @ 981e97487043d078cd3b9fdc252312bbaca1d82e, Go master after the 1.26 release: src/net/url/url.go,
  gen_encoding_table.go (``shouldEscape``), url_test.go, src/net/ip.go, ip_test.go, src/net/netip/netip.go. Its
  ``parseHost`` holds both host checks CNO's Go 1.26 build has: bracketed hosts must be IPv6 (``netip.ParseAddr``,
  a 2025 security fix) and strict colons, limited there to ``http``/``https`` (go.dev/issue/78077, which may postdate
  1.26.0). CNO only accepts what parses with ``ParseRequestURI``; the only CNO-visible difference from a 1.26.0 that
  applied strict colons to every scheme would be a non-http(s) URI with two colons in its host (``ftp://h:1:2``).
"""
from __future__ import annotations

from egress.goip import (GoAddrError, GoParseError, IPAddress, IPNetwork, go_quote, parse_addr, parse_cidr,
                         parse_ip)
from egress.gourl import URL, GoURLError, Userinfo, parse, parse_request_uri

__all__ = ["URL", "Userinfo", "GoURLError", "GoAddrError", "GoParseError", "CNOValidationError", "IPAddress",
           "IPNetwork", "go_quote", "parse", "parse_request_uri", "parse_addr", "parse_ip", "parse_cidr", "atoi",
           "cno_port", "cno_uri", "cno_ip_address_or_cidr"]

_INT64_MAX = (1 << 63) - 1


class CNOValidationError(ValueError):
    """An error CNO's pkg/util/validation returns; ``str()`` is its text."""


def atoi(s: str) -> int:
    """strconv.Atoi on a 64-bit platform, for the only input CNO gives it: URL.Port(), ASCII digits only (leading
    zeros allowed). The only possible failure is the range error."""
    n = int(s, 10) if s.isascii() and s.isdigit() else None
    if n is None:
        raise CNOValidationError(f"strconv.Atoi: parsing {go_quote(s)}: invalid syntax")
    if n > _INT64_MAX:
        raise CNOValidationError(f"strconv.Atoi: parsing {go_quote(s)}: value out of range")
    return n


def cno_port(port: int) -> None:
    """validation.Port: k8s IsValidPortNum, 1..65535."""
    if not 1 <= port <= 65535:
        raise CNOValidationError(f"invalid port number: {port}")


def cno_uri(uri: str) -> URL:
    """validation.URI. CNO returns ``parsed.Scheme``; here the whole URL comes back (its ``.scheme``). A parse
    failure raises GoURLError (CNO returns the *url.Error as it is); the rest raise CNOValidationError."""
    parsed = parse_request_uri(uri)
    if not parsed.is_abs():
        raise CNOValidationError(f"failed validating URI, no scheme for URI {go_quote(uri)}")
    port = parsed.port()
    if port:
        try:
            n = atoi(port)
        except CNOValidationError as e:
            raise CNOValidationError(f"failed converting port to integer for URI {go_quote(uri)}: {e}") from None
        try:
            cno_port(n)
        except CNOValidationError as e:
            raise CNOValidationError(f"failed to validate port for URL {go_quote(uri)}: {e}") from None
    return parsed


def cno_ip_address_or_cidr(ip: str) -> None:
    """validation.IPAddressOrCIDR: net.ParseIP, else net.ParseCIDR (host bits may be set)."""
    if parse_ip(ip) is None:
        try:
            parse_cidr(ip)
        except GoParseError:
            raise CNOValidationError(f"invalid IP/CIDR: {ip}") from None
