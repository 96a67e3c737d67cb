"""What was asked: DESTINATION[:PORT] and --role checked, the requirements a destination matches, the nearest ones.

A requirement needs a destination when (matrix semantics, DESIGN.md): its host is the destination; its ``*.x`` wildcard
covers it (subdomains only, never the apex); its IP or CIDR contains the destination's address(es); its service tag
is the destination; or it is ``*``. With a port, the port is one of the requirement's; with a role, the role is its.
"""
from __future__ import annotations

import difflib
import ipaddress
import re
from typing import Callable, Iterable, Optional

from ..addresses import AddressError, classify, host_matches, parse_destination, parse_url, ports_contain, wildcard_covers
from ..models import ROLES, Requirement
from ..redact import has_credentials, redact_url
from .model import ExplainError, Need

NEAREST = 5  # at most this many nearest requirements are shown
_EXAMPLE = "e.g. mcr.microsoft.com:443 or [2001:db8::1]:443"
_SCHEME = re.compile(r"^(https?)://", re.IGNORECASE)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def check_port(port: object, text: str = "") -> int:
    where = f"destination '{text}': " if text else ""
    if isinstance(port, bool) or not (isinstance(port, int) or (isinstance(port, str) and port.isdigit())):
        raise ExplainError(f"{where}port '{port}' is not a number. Fix: write DESTINATION[:PORT] with a port 1-65535, {_EXAMPLE}")
    number = int(port)
    if not 1 <= number <= 65535:
        raise ExplainError(f"{where}port {number} is outside 1-65535. Fix: give a port between 1 and 65535, {_EXAMPLE}")
    return number


def check_role(role: Optional[str], groups: Iterable[str] = ()) -> Optional[str]:
    """A role, or one of the stack's source groups (``groups``)."""
    groups = sorted(groups)
    if role is not None and role not in ROLES and role not in groups:
        if groups:
            raise ExplainError(f"unknown role or source group '{role}'. Fix: use one of: {', '.join(ROLES)}; or a source group of the "
                               f"stack: {', '.join(groups)}")
        raise ExplainError(f"unknown role '{role}'. Fix: use one of: {', '.join(ROLES)}")
    return role


def _split(text: str) -> tuple[str, Optional[str], Optional[int]]:
    """(destination, port text, the URL scheme's default port) from DESTINATION[:PORT], [IPv6]:PORT or a URL."""
    default = None
    scheme = _SCHEME.match(text)
    if scheme:
        default = _DEFAULT_PORTS[scheme.group(1).lower()]
        text = text[scheme.end():].split("/", 1)[0]
    if text.startswith("["):
        address, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ExplainError(f"destination '{text}' opens '[' without a closing ']:PORT'. Fix: write [IPv6]:PORT, {_EXAMPLE}")
        return address, rest[1:] if rest else None, default
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, port, default
    return text, None, default  # a bare IPv6 address has several ':' and no port


def parse_destination_arg(text: str) -> tuple[str, Optional[int]]:
    """``DESTINATION[:PORT]`` (also ``[IPv6]:PORT`` and ``https://host[:port]/path``) -> (destination, port or None).
    Names are lower-cased and lose a trailing dot; a service tag keeps its case."""
    original = text
    text = (text or "").strip()
    if not text:
        raise ExplainError(f"destination is empty. Fix: give DESTINATION[:PORT], {_EXAMPLE}")
    if has_credentials(text):  # refused before any message quotes a piece of it (a password read as a port)
        raise ExplainError(f"destination '{redact_url(text)}' carries credentials. Fix: give the host and port only, {_EXAMPLE}")
    destination, port_text, default = _split(text)
    port = check_port(port_text, original) if port_text is not None else default
    if classify(destination) != "service-tag":
        destination = destination.lower().rstrip(".")
    try:
        kind = parse_destination(destination)
        if kind == "url":  # 'host/path' without a scheme: the host it implies
            destination = parse_url(destination).host
    except AddressError as exc:
        raise ExplainError(f"destination '{original}': {exc.problem}. Fix: {exc.fix}") from None
    return destination, port


def kind_of(destination: str) -> str:
    return classify(destination)


def _network(text: str):
    return ipaddress.ip_network(text, strict=False)


def how_needed(req: Requirement, kind: str, destination: str) -> str:
    """How ``req`` covers the destination ('' when it does not), ignoring ports and roles."""
    theirs = req.destination
    if req.kind == "any":
        return "any destination (*)"
    if kind in ("fqdn", "url"):
        if req.kind in ("fqdn", "url") and theirs == destination:
            return "exact"
        return f"under {theirs}" if req.kind == "wildcard" and host_matches(theirs, destination) else ""
    if kind == "wildcard":
        if req.kind != "wildcard" or not wildcard_covers(theirs, destination):
            return ""
        return "exact" if theirs == destination else f"under {theirs}"
    if kind in ("ip", "cidr"):
        if req.kind not in ("ip", "cidr"):
            return ""
        mine, outer = _network(destination), _network(theirs)
        if mine.version != outer.version or not mine.subnet_of(outer):  # type: ignore[arg-type]
            return ""
        return "exact" if mine == outer else f"inside {theirs}"
    return "exact" if req.kind == kind and theirs == destination else ""


def needs(requirements: Iterable[Requirement], kind: str, destination: str, port: Optional[int],
          role: Optional[str]) -> list[tuple[Requirement, str]]:
    """(requirement, how) for those that need the destination (on ``port``, for ``role`` when given), in order."""
    out = []
    for req in requirements:
        how = how_needed(req, kind, destination)
        if how and (port is None or ports_contain(req.ports, port)) and (role is None or req.role == role):
            out.append((req, how))
    return out


def _labels(kind: str, destination: str) -> list[str]:
    return (destination[2:] if kind == "wildcard" and destination.startswith("*.") else destination).split(".")


def _shared_suffix(a: list[str], b: list[str]) -> int:
    count = 0
    while count < min(len(a), len(b)) and a[-1 - count] == b[-1 - count]:
        count += 1
    return count


def _common_bits(a, b) -> int:
    """How many leading bits two networks share (at most the shorter prefix)."""
    diff = int(a.network_address) ^ int(b.network_address)
    return min(a.max_prefixlen - diff.bit_length(), a.prefixlen, b.prefixlen)


def _ranked(pairs: list[tuple[Requirement, str]], destination: str, written: Optional[Callable[[str], str]] = None) -> list[Need]:
    """The closest first (difflib's ratio), then by destination, role, protocol; at most NEAREST."""
    pairs.sort(key=lambda p: (-difflib.SequenceMatcher(None, destination, p[0].destination).ratio(), p[0].destination, p[0].role,
                              p[0].protocol, p[0].ports))
    return [Need.of(req, how, written) for req, how in pairs[:NEAREST]]


def nearest(requirements: list[Requirement], kind: str, destination: str, port: Optional[int], role: Optional[str],
            written: Optional[Callable[[str], str]] = None) -> list[Need]:
    """What the matrix asks for near a destination no requirement needs (as asked): the same destination on another
    port or for another role; else the names sharing the longest parent domain (two labels at least); else the
    address requirements sharing the longest prefix (16 bits at least); else similar names (difflib)."""
    same = []
    for req in requirements:
        if how_needed(req, kind, destination):
            other = [w for w, differs in (("port", port is not None and not ports_contain(req.ports, port)),
                                          ("role", role is not None and req.role != role)) if differs]
            same.append((req, f"the same destination, another {' and '.join(other)}"))
    if same:
        return _ranked(same, destination, written)
    if kind in ("fqdn", "url", "wildcard"):
        mine = _labels(kind, destination)
        shared = [(req, _shared_suffix(mine, _labels(req.kind, req.destination))) for req in requirements
                  if req.kind in ("fqdn", "url", "wildcard")]
        best = max((count for _, count in shared), default=0)
        if best >= 2:
            parent = ".".join(mine[-best:])
            return _ranked([(req, f"its apex: {req.destination} covers subdomains only" if req.destination == f"*.{destination}"
                             else f"shares the domain {parent}") for req, count in shared if count == best], destination, written)
    if kind in ("ip", "cidr"):
        mine_net = _network(destination)
        scored = [(req, _common_bits(mine_net, _network(req.destination))) for req in requirements
                  if req.kind in ("ip", "cidr") and _network(req.destination).version == mine_net.version]
        best = max((bits for _, bits in scored), default=0)
        if best >= 16:
            return _ranked([(req, f"shares the first {best} address bits") for req, bits in scored if bits == best], destination, written)
    names = sorted({req.destination for req in requirements})
    close = difflib.get_close_matches(destination, names, n=NEAREST, cutoff=0.75)
    return _ranked([(req, "a similar name") for req in requirements if req.destination in close], destination, written)
