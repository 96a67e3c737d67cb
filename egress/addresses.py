"""Destinations and ports: parsing, canonical forms and matching, in one place.

Destination kinds (DESIGN.md, "Matrix semantics"):

- ``fqdn``        ``mcr.microsoft.com``: lower-case, two or more labels.
- ``wildcard``    ``*.data.mcr.microsoft.com``: one ``*`` in the left-most label only. ``*`` stands for one or
                  more characters and may span dots, so ``*.x.com`` matches every subdomain of ``x.com`` but not
                  ``x.com`` itself (the apex is its own entry), and ``md-*.blob.x.net`` matches ``md-a1.blob.x.net``.
- ``url``         ``https://dl.k8s.io`` or ``download.docker.com/linux/ubuntu``: the host it implies, plus a path
                  kept for documentation.
- ``ip``          ``192.0.2.10`` or ``2001:db8::1``.
- ``cidr``        ``10.0.0.0/16``: canonical (no host bits).
- ``service-tag`` ``AzureCloud.westeurope``, ``AzureMonitor``: starts with an upper-case letter.
- ``any``         ``*``.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Iterable, Literal, Union

DestinationKind = Literal["fqdn", "wildcard", "url", "ip", "cidr", "service-tag", "any"]
DESTINATION_KINDS: tuple[DestinationKind, ...] = ("fqdn", "wildcard", "url", "ip", "cidr", "service-tag", "any")

# Lower is narrower. Used to pick among alternatives ("the narrowest one the target supports").
NARROWNESS: dict[str, int] = {"ip": 0, "cidr": 1, "fqdn": 2, "url": 2, "wildcard": 3, "service-tag": 4, "any": 5}

# Matched with fullmatch: Python's '$' also matches before a final newline, which would let 'example.com\n' through.
_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_GLOB_LABEL = re.compile(r"[a-z0-9-]*\*[a-z0-9-]*")
_SERVICE_TAG = re.compile(r"[A-Z][A-Za-z0-9]*(\.[A-Za-z0-9]+)?")
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*)://", re.IGNORECASE)

IPAddress = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
IPNetwork = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]


class AddressError(ValueError):
    """A destination or port that does not parse. ``problem`` says what is wrong, ``fix`` what to write."""

    def __init__(self, problem: str, fix: str):
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}. Fix: {fix}")


# ---------------------------------------------------------------------------------------------- host names
def parse_fqdn(text: str) -> str:
    """Return ``text`` if it is a valid, canonical (lower-case, no trailing dot) FQDN."""
    return parse_domain(text, min_labels=2)


def parse_domain(text: str, min_labels: int = 1) -> str:
    """Return ``text`` if it is a valid, canonical (lower-case, no trailing dot) DNS name of ``min_labels`` or more labels."""
    if not isinstance(text, str) or not text:
        raise AddressError("a host name must be a non-empty string", "write a name such as 'mcr.microsoft.com'")
    check_ascii(text)
    if any(c.isspace() or not c.isprintable() for c in text):
        raise AddressError(f"{text!r} holds white space or a control character", "remove it (a YAML block scalar keeps a final newline)")
    odd = sorted({c for c in text if c in ",;/:@="})  # list and URL separators: someone put several values in one
    if odd:
        raise AddressError(f"'{text}' holds {' and '.join(repr(c) for c in odd)}, which no host name has (a ',' would split a list it is joined "
                           "into, such as a noProxy)", "give one host name, e.g. 'kkp.example.com'")
    if text != text.lower():
        raise AddressError("host names are written in lower case", f"write '{text.lower()}'")
    if text.endswith("."):
        raise AddressError("a trailing dot is not used", f"write '{text.rstrip('.')}'")
    if "*" in text:
        raise AddressError("'*' is not allowed in an exact host name", "use kind 'wildcard' with '*' in the left-most label only")
    if len(text) > 253:
        raise AddressError("a host name is at most 253 characters", "shorten it")
    _not_numeric(text)  # before the label count: '2130706433' is an address, not a name of one label
    labels = text.split(".")
    if len(labels) < min_labels:
        raise AddressError("a host name needs at least two labels", "write the fully qualified name, e.g. 'vcenter.example.com'")
    for label in labels:
        if not _LABEL.fullmatch(label):
            raise AddressError(
                f"label '{label}' is not a DNS label (a-z, 0-9 and inner '-', 1-63 characters)",
                "correct the spelling of the host name",
            )
    return text


_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")


def _not_numeric(name: str) -> None:
    """Refuse a name whose last label is a number (decimal, octal '010' or hex '0x7f'): no top-level domain is one, and
    clients (inet_aton) read such a name as an IPv4 address: '127.1' is 127.0.0.1, '010.0.0.1' is 8.0.0.1."""
    if not _NUMERIC_LABEL.fullmatch(name.lower().rstrip(".").rpartition(".")[2]):
        return
    import socket  # inet_aton only parses: no lookup

    try:
        read = socket.inet_ntoa(socket.inet_aton(name))
    except OSError:
        raise AddressError(f"'{name}' is not a DNS name: its last label is a number, which no domain ends with (a broken IP address?)",
                           "write the IPv4 address as four decimal numbers (e.g. '192.0.2.10'), or the host's DNS name") from None
    raise AddressError(f"'{name}' is not a DNS name: its last label is a number, so clients read it as the IPv4 address {read}",
                       f"write the address as four decimal numbers, '{read}' (if that is the host meant), or the host's DNS name")


def check_ascii(text: str) -> None:
    """Refuse a name with non-ASCII characters: 'prоxy.example.com' with a Cyrillic 'о' looks like the real host and is
    another. An internationalised name is written in its punycode form."""
    if text.isascii():
        return
    odd = ", ".join(f"'{c}' (U+{ord(c):04X})" for c in dict.fromkeys(c for c in text if not c.isascii()))
    try:
        punycode = ".".join(label.encode("idna").decode("ascii") for label in text.split("."))
        hint = f"; if the internationalised name is really meant, write its punycode form '{punycode}'"
    except UnicodeError:
        hint = "; an internationalised name is written in its punycode form ('xn--...')"
    raise AddressError(f"'{text}' has non-ASCII characters ({odd}): a look-alike of an ASCII name reaches another host",
                       f"type the name in ASCII{hint}")


def parse_hostname(text: str) -> str:
    """A host as a URL or a client resolves it: an IP, or a DNS name of one or more labels (a proxy may be 'proxy')."""
    if not isinstance(text, str) or not text:
        raise AddressError("a host must be a non-empty string", "write a host name or an IP address")
    check_ascii(text)
    try:
        parse_ip(text.strip("[]") if text.startswith("[") else text)
        return text
    except AddressError:
        pass
    if not all(_LABEL.fullmatch(label) for label in text.lower().split(".")):
        raise AddressError(f"'{text}' is not a host name or IP address (DNS labels: a-z, 0-9 and inner '-')", "correct the host")
    if len(text) > 253:
        raise AddressError(f"'{text[:40]}...' is {len(text)} characters long: a host name is at most 253", "shorten it")
    _not_numeric(text)
    return text


def parse_no_proxy_entry(text: str) -> str:
    """One noProxy entry in a form some consumer reads: '*', an IP, a CIDR, or a domain ('.example.com', '*.example.com',
    'example.com.', 'localhost'), optionally with ':port'; each distribution then applies its own rules (OpenShift's
    operator refuses '*.x', AKS refuses '*'). A ',' or white space would split into entries nobody wrote."""
    if not isinstance(text, str) or not text:
        raise AddressError("a noProxy entry must be a non-empty string", "write a domain, an IP or a CIDR")
    check_ascii(text)
    if "," in text:
        raise AddressError(f"{text!r} holds a ',': the list is joined with ',', so it would become several entries",
                           "give each entry as its own list item")
    if any(c.isspace() or not c.isprintable() for c in text):  # a tab or newline pasted in, not a second entry
        raise AddressError(f"{text!r} holds white space or a control character, which no noProxy reader takes as part of an entry",
                           "remove it: an entry is one domain, IP or CIDR")
    if text == "*":
        return text
    _no_zone(text)
    try:
        net = ipaddress.ip_network(text[1:-1] if text.startswith("[") and text.endswith("]") else text, strict=False)  # an IP or CIDR
    except ValueError:
        pass
    else:
        _no_v4_mapped(net if "/" in text else net.network_address, text)
        return text
    host, sep, port = text.rpartition(":")
    if sep and port.isdigit() and ":" not in host:
        _port_number(port, text)
        text_host = host
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            pass
        else:
            return text  # '10.0.0.5:3128': an address and port, which Go's httpproxy matches as host:port
    else:
        text_host = text
    domain = text_host.removeprefix("*.").removeprefix(".").removesuffix(".").lower()
    if not domain or not all(_LABEL.fullmatch(label) for label in domain.split(".")):
        raise AddressError(f"'{text}' is not a domain, IP or CIDR (DNS labels: a-z, 0-9 and inner '-')",
                           "write e.g. '.corp.example.com', 'registry.example.com' or '10.0.0.0/8'")
    _not_numeric(domain)  # '127.1' matches no request to 127.0.0.1: Go and curl compare it as a name
    return text


def parse_wildcard(text: str) -> str:
    """Return ``text`` if it is a wildcard host pattern with one ``*`` in its left-most label."""
    if not isinstance(text, str) or "*" not in text:
        raise AddressError("a wildcard needs a '*'", "write e.g. '*.data.mcr.microsoft.com'")
    first, _, suffix = text.partition(".")
    if "*" in suffix:
        raise AddressError("'*' is only allowed in the left-most label", "move the '*' to the left-most label, e.g. '*.example.com'")
    if first.count("*") != 1 or not _GLOB_LABEL.fullmatch(first):
        raise AddressError(
            f"left-most label '{first}' must hold exactly one '*' and otherwise only a-z, 0-9 and '-'",
            "write e.g. '*.example.com' or 'md-*.blob.example.net'",
        )
    parse_fqdn(suffix)
    return text


def wildcard_regex(pattern: str) -> re.Pattern[str]:
    first, _, suffix = pattern.partition(".")
    before, _, after = first.partition("*")
    return re.compile(rf"{re.escape(before)}[a-z0-9.-]+{re.escape(after)}\.{re.escape(suffix)}")


def host_matches(pattern: str, host: str) -> bool:
    """Does destination ``pattern`` (an exact FQDN or a wildcard) cover ``host``?"""
    if "*" in pattern:
        return bool(wildcard_regex(pattern).fullmatch(host))
    return pattern == host


def wildcard_covers(outer: str, inner: str) -> bool:
    """Does wildcard/exact ``outer`` cover every host that ``inner`` (exact or wildcard) can name?"""
    if "*" not in inner:
        return host_matches(outer, inner)
    if "*" not in outer:
        return False
    if outer == inner:
        return True
    # '*.x.com' covers any pattern whose fixed suffix lies under x.com.
    o_first, _, o_suffix = outer.partition(".")
    if o_first != "*":
        return False
    i_first, _, i_suffix = inner.partition(".")
    return i_suffix == o_suffix or i_suffix.endswith("." + o_suffix)


# ---------------------------------------------------------------------------------------------- IPs, CIDRs, tags
def _no_zone(text: object) -> None:
    # Python reads 'fe80::1%<anything>' as a scoped address; the zone is meaningless off the host and could smuggle a
    # ',' into a list this value is joined into (a noProxy).
    if isinstance(text, str) and "%" in text:
        raise AddressError(f"'{text}' has an IPv6 zone ('%...')", "write the address without it")


def _no_v4_mapped(value: IPNetwork | IPAddress, text: object) -> None:
    # Go's net.ParseCIDR keeps '::ffff:0:0/96' as an IPv4 network with the mask's last 4 bytes, so IPNet.Contains takes
    # it for 0.0.0.0/0 (golang/go#51906; src/net/ip.go networkNumberAndMask): Go readers (noProxy, Kubernetes) see IPv4.
    network = not isinstance(value, (ipaddress.IPv4Address, ipaddress.IPv6Address))
    address = value.network_address if network else value  # type: ignore[union-attr]
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        v4 = ipaddress.ip_network((address.ipv4_mapped, value.prefixlen - 96)) if network else address.ipv4_mapped  # type: ignore[union-attr]
        what = "CIDR" if network else "address"
        raise AddressError(f"'{text}' is written as an IPv4-mapped IPv6 {what} ('::ffff:...'), which Go programs (noProxy, Kubernetes) "
                           f"read as the IPv4 {what} {v4}", f"write the IPv4 {what} '{v4}'")


def parse_ip(text: str) -> IPAddress:
    _no_zone(text)
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise AddressError(f"'{text}' is not an IP address", "write an IPv4 or IPv6 address such as '192.0.2.10'") from None
    _no_v4_mapped(address, text)
    return address


def parse_cidr(text: str) -> IPNetwork:
    _no_zone(text)
    if "/" not in str(text):
        raise AddressError(f"'{text}' has no prefix length", f"write '{text}/32' for one IPv4 address, or the network in CIDR form")
    try:
        net = ipaddress.ip_network(text, strict=True)
    except ValueError as exc:
        try:
            loose = ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise AddressError(f"'{text}' is not a CIDR block ({exc})", "write a network such as '10.0.0.0/16'") from None
        raise AddressError(f"'{text}' has host bits set", f"write the network address '{loose}'") from None
    _no_v4_mapped(net, text)
    return net


def parse_service_tag(text: str) -> str:
    if not _SERVICE_TAG.fullmatch(text or ""):
        raise AddressError(f"'{text}' is not a service tag", "write e.g. 'AzureCloud.westeurope' or 'AzureMonitor'")
    return text


@dataclass(frozen=True, order=True)
class Url:
    scheme: str | None
    host: str
    path: str

    def __str__(self) -> str:
        prefix = f"{self.scheme}://" if self.scheme else ""
        return f"{prefix}{self.host}{self.path}"


def parse_url(text: str) -> Url:
    scheme = None
    rest = text
    match = _SCHEME.match(text)
    if "@" in re.split(r"[/?#]", text[match.end():] if match else text, maxsplit=1)[0]:
        # before anything quotes the host: what precedes an '@' there is a user, password or token (never quoted)
        raise AddressError("the URL carries credentials (a user, password or token before the host), which would be stored and shown in "
                           "plain text", "remove them: a destination names the host (and path) only; and change that password or "
                           "token: it has been in the file")
    if match:
        scheme = match.group(1)
        if scheme not in ("http", "https"):
            raise AddressError(f"URL scheme '{scheme}' is not supported", "use an http:// or https:// URL")
        rest = text[match.end():]
    host, slash, path = rest.partition("/")
    if ":" in host:
        raise AddressError("a port inside a URL destination is not supported", "put the port in the entry's 'ports' field")
    if "?" in rest or "#" in rest:
        raise AddressError("query strings and fragments are not part of a destination", "drop everything after '?' or '#'")
    parse_fqdn(host)
    return Url(scheme, host, slash + path)


# ---------------------------------------------------------------------------------------------- classification
def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def classify(text: str) -> DestinationKind:
    """The kind a destination string is written as. Does not validate; ``parse_destination`` does."""
    if text == "*":
        return "any"
    if _SCHEME.match(text):
        return "url"
    if "/" in text:
        return "cidr" if _is_ip(text.split("/", 1)[0]) else "url"
    if _is_ip(text):
        return "ip"
    if text[:1].isupper() and text.count(".") <= 1:
        return "service-tag"
    if "*" in text:
        return "wildcard"
    return "fqdn"


def parse_destination(text: str, kind: DestinationKind | None = None) -> DestinationKind:
    """Validate ``text`` as a destination of ``kind`` (or of the kind it is written as); return the kind."""
    if not isinstance(text, str) or not text:
        raise AddressError("a destination must be a non-empty string", "write a host name, wildcard, URL, IP, CIDR, service tag or '*'")
    written = classify(text)
    kind = kind or written
    if written != kind and not (written == "fqdn" and kind == "url"):
        raise AddressError(f"'{text}' is written as a {written}, not a {kind}", f"set kind to '{written}' or correct the destination")
    if kind == "any":
        if text != "*":
            raise AddressError("kind 'any' is written '*'", "write '*'")
    elif kind == "fqdn":
        parse_fqdn(text)
    elif kind == "wildcard":
        parse_wildcard(text)
    elif kind == "url":
        parse_url(text)
    elif kind == "ip":
        parse_ip(text)
    elif kind == "cidr":
        parse_cidr(text)
    elif kind == "service-tag":
        parse_service_tag(text)
    else:  # pragma: no cover - guarded by the Literal type in the models
        raise AddressError(f"unknown destination kind '{kind}'", f"use one of {', '.join(DESTINATION_KINDS)}")
    return kind


def url_host(text: str) -> str:
    return parse_url(text).host


# ---------------------------------------------------------------------------------------------- ports
@dataclass(frozen=True, order=True)
class PortRange:
    start: int
    end: int

    def __str__(self) -> str:
        return str(self.start) if self.start == self.end else f"{self.start}-{self.end}"

    def export(self) -> int | str:
        return self.start if self.start == self.end else f"{self.start}-{self.end}"

    def contains(self, port: int) -> bool:
        return self.start <= port <= self.end


def _port_number(text: str | int, original: object) -> int:
    try:
        number = int(text)
    except (TypeError, ValueError):
        raise AddressError(f"'{original}' is not a port", "write a number 1-65535 or a range 'a-b'") from None
    if not 1 <= number <= 65535:
        raise AddressError(f"port {number} is outside 1-65535", "write a port between 1 and 65535")
    return number


def parse_port(item: int | str) -> PortRange:
    """``443`` or ``"30000-32767"`` -> PortRange."""
    if isinstance(item, bool):
        raise AddressError(f"'{item}' is not a port", "write a number 1-65535 or a range 'a-b'")
    if isinstance(item, int):
        number = _port_number(item, item)
        return PortRange(number, number)
    text = str(item).strip()
    if "-" in text:
        low, _, high = text.partition("-")
        start, end = _port_number(low, item), _port_number(high, item)
        if start > end:
            raise AddressError(f"range '{item}' is reversed", f"write '{end}-{start}'")
        return PortRange(start, end)
    number = _port_number(text, item)
    return PortRange(number, number)


def normalize_ports(ranges: Iterable[PortRange]) -> tuple[PortRange, ...]:
    """Sorted, with overlapping and adjacent ranges merged: the canonical form of a port set."""
    merged: list[PortRange] = []
    for current in sorted(ranges):
        if merged and current.start <= merged[-1].end + 1:
            last = merged[-1]
            merged[-1] = PortRange(last.start, max(last.end, current.end))
        else:
            merged.append(current)
    return tuple(merged)


def ports_contain(ranges: Iterable[PortRange], port: int) -> bool:
    return any(r.contains(port) for r in ranges)


def format_ports(ranges: Iterable[PortRange]) -> str:
    return ",".join(str(r) for r in ranges)
