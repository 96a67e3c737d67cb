"""What every log parser hands on: one denied flow per log record, with the record as evidence, and the counts.

A parser reads one file and returns a ``LogRead``: the denied flows (source IP, destination host and/or address, port,
protocol), how many records were allowed (skipped, counted) and how many were of no concern (another event type, a
protocol the matrix has no row for, a host no client really connects to), each with its reason. A record it cannot
read stops it with one ``LearnError`` naming the file, the line and the fix: a half-read log would propose from half
the evidence. What a client chose (the SNI, Host, CONNECT target or URL it sent) never stops a run: any pod can send
anything, so a record naming no usable host is counted as ignored with the reason, never proposed and never fatal.
"""
from __future__ import annotations

import datetime
import gzip
import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..addresses import AddressError, check_ascii, parse_domain
from ..errors import EgressError
from ..redact import redact
from .lines_text import printable

DOCS = "docs/LEARN.md"


class LearnError(EgressError):
    """A deny log ``egress learn`` cannot read: the message names the file, the line, the value and the fix."""

    def __init__(self, file: str, line: Optional[int], problem: str, fix: str):
        where = f"{file}: line {line}" if line else file
        # the problem quotes what a log holds (a client wrote it): its control characters never reach the terminal
        super().__init__(printable(f"{where}: {problem}. Fix: {fix}"))


@dataclass(frozen=True)
class Flow:
    """One denied connection as a log line shows it. ``host`` is the name the client asked for (SNI, Host, CONNECT
    target, Azure's Fqdn), '' when the log has only an address; ``address`` the destination IP, '' when not logged."""

    file: str
    line: int
    text: str  # the record as written (credentials masked), the evidence a reviewer checks
    time: Optional[datetime.datetime]  # UTC
    source: str
    host: str
    address: str
    port: int
    protocol: str  # http, https, tcp or udp: the matrix's protocols

    @property
    def destination(self) -> str:
        return self.host or self.address


@dataclass
class LogRead:
    file: str
    format: str
    records: int = 0
    allowed: int = 0  # allowed records: skipped, only counted
    ignored: int = 0  # records of no concern here (other event types, protocols without a matrix row, unusable hosts)
    flows: list[Flow] = field(default_factory=list)
    because: dict[str, list[int]] = field(default_factory=dict)  # why records were ignored: reason -> line numbers

    @property
    def denied(self) -> int:
        return len(self.flows)

    def ignore(self, reason: str, line: int) -> None:
        self.ignored += 1
        self.because.setdefault(reason, []).append(line)


class Unusable(Exception):
    """A record a parser skips (counted as ignored) for ``reason``: fixed text that never repeats the logged value."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


# Why a logged host is not learned from. The reasons never quote the host: it is whatever a client sent.
WILDCARD = "the logged host holds '*': a client connects to a host, never to a pattern (planted or malformed)"
NUMERIC = ("the logged host is an IPv4 address in a numeric form other than dotted decimal (hex, octal, one number or "
           "short, such as 0x7f000001 or 127.1)")
NOT_DNS = "the logged host is not a DNS name (labels of a-z, 0-9 and inner '-', at most 253 characters)"
NON_ASCII = "the logged host has non-ASCII characters (a look-alike of another name)"
SINGLE_LABEL = "the logged host is a single label, not a fully qualified name the matrix could list"
# RFC 6874 zone IDs ('fe80::1%eth0') name an interface of the client's own host, and Python's ip_address takes any text
# after the '%' as one ('fe80::1%*.evil.example'): no firewall rule can name one.
ZONE = "the logged host is an IPv6 address with a zone ID ('%' and an interface): it names a link of the client's host, not a destination"
_IPV4_NUMBER = re.compile(r"[0-9]+|0x[0-9a-f]*")


def read_text(path: Path, shown: str) -> str:
    """The file's text (gunzipped when it is gzip, as Network Firewall's S3 objects are); an empty file is refused."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LearnError(shown, None, f"cannot be read ({exc.strerror})", "give the path of an exported deny log") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise LearnError(shown, None, f"is a damaged gzip file ({exc})", "download the log object again, or pass it unpacked") from None
    text = data.decode("utf-8-sig", errors="replace")  # the portal's CSV export starts with a byte-order mark
    if not text.strip():
        raise LearnError(shown, None, "is empty: no log records to learn from",
                         f"export the deny log again (the queries and settings are in {DOCS}), or leave the file out")
    return text


def evidence(text: str) -> str:
    """A record as the proposals quote it: one line, control characters escaped (a client wrote it: no escape sequence
    may reach the terminal or editor showing the proposals), credentials masked, long lines cut."""
    line = redact(printable(" ".join(text.split())))
    return line if len(line) <= 2000 else line[:1997] + "..."  # a JSON record names the host near its end


def canonical_ip(text: str) -> str:
    """The address as the matrix writes it: an IPv4-mapped IPv6 address ('::ffff:169.254.169.254', RFC 4291 2.5.5.2)
    as the IPv4 address it carries, which is what the connection reaches. ValueError for no address or a zoned one."""
    address = ipaddress.ip_address(text.strip("[]"))
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id is not None:
            raise ValueError("zone ID")
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
    return str(address)


def check_ip(value: str, shown: str, line: int, column: str, fix: str) -> str:
    try:
        return canonical_ip(value.strip())
    except ValueError:
        raise LearnError(shown, line, f"{column} '{value}' is not an IP address (without a zone ID)", fix) from None


def check_port(value: object, shown: str, line: int, column: str, fix: str) -> int:
    text = str(value).strip()
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise LearnError(shown, line, f"{column} '{text}' is not a port 1-65535", fix)
    return int(text)


def logged_host(value: str) -> str:
    """The host a log names as the matrix writes hosts: a DNS name of two or more labels in lower case without the
    trailing dot, or an IP address; '' for none ('-', 'None'). Anything else raises ``Unusable``: a client chooses its
    SNI, Host header and CONNECT target, so '*', '*.x' or 'a|b' in a log is what some pod sent, not a host to allow.
    A last label that is a number (digits, or '0x' and hex digits) makes the name an IPv4 address to a URL parser
    (WHATWG URL Standard, https://url.spec.whatwg.org/#ends-in-a-number-checker, as Firefox's
    netwerk/base/IPv4Parser.cpp EndsInANumber quotes it, read 2026-11-24) and to inet_aton: not a name either."""
    text = value.strip().lower()
    if text in ("", "-", "none", "null"):
        return ""
    text = text.removesuffix(".")  # one root dot; 'x..' stays malformed
    if "%" in text and _parses_as_ip(text.strip("[]").split("%", 1)[0]):
        raise Unusable(ZONE)  # before any other check: ip_address takes '*' or markup after the '%'
    if is_ip(text):
        return canonical_ip(text)
    try:
        check_ascii(text)
    except AddressError:
        raise Unusable(NON_ASCII) from None
    if "*" in text:
        raise Unusable(WILDCARD)
    if _IPV4_NUMBER.fullmatch(text.rsplit(".", 1)[-1]):
        raise Unusable(NUMERIC)
    try:
        parse_domain(text, min_labels=1)
    except AddressError:
        raise Unusable(NOT_DNS) from None
    if "." not in text:
        raise Unusable(SINGLE_LABEL)
    return text


def is_ip(text: str) -> bool:
    """Is ``text`` an IP address the matrix can name (no zone ID)?"""
    try:
        canonical_ip(text)
    except ValueError:
        return False
    return True


def _parses_as_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


_FRACTION = re.compile(r"(\.\d{6})\d+")
# The Log Analytics portal shows (and may export) datetimes as 'M/D/YYYY, h:mm:ss[.fff] AM' in UTC.
_PORTAL = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4}),? (\d{1,2}):(\d{2}):(\d{2})(\.\d+)? ?([AP]M)$", re.IGNORECASE)


def parse_time(text: str) -> Optional[datetime.datetime]:
    """An ISO 8601 time (Kusto's 7 fractional digits and Suricata's '+0000' too), or the portal's US form; None if neither."""
    value = text.strip()
    if not value:
        return None
    portal = _PORTAL.match(value)
    if portal:
        month, day, year, hour, minute, second, fraction, half = portal.groups()
        hour_24 = int(hour) % 12 + (12 if half.upper() == "PM" else 0)
        micro = int((fraction or ".0")[1:7].ljust(6, "0"))
        return datetime.datetime(int(year), int(month), int(day), hour_24, int(minute), int(second), micro, tzinfo=datetime.timezone.utc)
    value = _FRACTION.sub(r"\1", value.replace("Z", "+00:00"))
    value = re.sub(r"([+-]\d{2})(\d{2})$", r"\1:\2", value)
    try:
        parsed = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.timezone.utc)).astimezone(datetime.timezone.utc)


def epoch(value: object) -> Optional[datetime.datetime]:
    try:
        return datetime.datetime.fromtimestamp(float(str(value)), tz=datetime.timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def iso(moment: Optional[datetime.datetime]) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ").replace(".000000Z", "Z") if moment else ""
