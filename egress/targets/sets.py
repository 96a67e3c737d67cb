"""Address and port sets, as every target's evaluator matches them: a rule covers a flow, or overlaps it.

Sizes: a role may have thousands of ``/32`` sources, and every rule of a rendered file repeats them. So a merged set
answers "covers"/"overlaps" by bisection, and ``SourcePieces`` judges a role's sources against a rule all at once
(a bit per source), instead of once per source per rule.
"""
from __future__ import annotations

import ipaddress
from bisect import bisect_right
from functools import lru_cache
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from ..addresses import PortRange, normalize_ports

Interval = tuple[int, int, int]  # (IP version, first address, last address) as integers
IPV4_ALL: Interval = (4, 0, 2**32 - 1)
EVERYWHERE: tuple[Interval, ...] = (IPV4_ALL, (6, 0, 2**128 - 1))
_DIGITS = frozenset("0123456789")


def _ipv4_interval(text: str) -> Optional[Interval]:
    """``a.b.c.d`` or ``a.b.c.d/n`` as ``ipaddress`` reads them (decimal octets, no leading zeros, prefix 0-32); None
    for anything else, which then goes to ``ipaddress`` itself."""
    address, slash, prefix = text.partition("/")
    octets = address.split(".")
    if len(octets) != 4 or (slash and not (prefix and len(prefix) <= 3 and set(prefix) <= _DIGITS)):
        return None
    value = 0
    for octet in octets:
        if not octet or len(octet) > 3 or not set(octet) <= _DIGITS or (octet[0] == "0" and len(octet) > 1) or int(octet) > 255:
            return None
        value = value << 8 | int(octet)
    length = int(prefix) if slash else 32
    if length > 32:
        return None
    host_bits = 32 - length
    first = value >> host_bits << host_bits
    return (4, first, first | (1 << host_bits) - 1)


@lru_cache(maxsize=65536)
def parse_interval(text: str) -> Optional[Interval]:
    """An IP, CIDR or ``a-b`` range as an interval; None for anything else (a service tag, ``*``). Cached, with a
    fast path for IPv4: evaluators parse a role's sources once per rule, and a role may have thousands."""
    if "-" not in text:
        fast = _ipv4_interval(text.strip())
        if fast is not None:
            return fast
    try:
        if "-" in text:
            low, high = (ipaddress.ip_address(part.strip()) for part in text.split("-", 1))
            return (low.version, int(low), int(high)) if low.version == high.version and low <= high else None
        network = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return None
    return (network.version, int(network.network_address), int(network.broadcast_address))


def _key(version: int, address: int) -> int:
    """One integer ordering (version, address) pairs: IPv6 addresses fit in 129 bits."""
    return version << 130 | address


def _merged(intervals: Sequence[Interval]) -> bool:
    """Sorted, and no two of the same version overlap or touch: what ``AddressSet.of`` builds."""
    return all(a[0] < b[0] or (a[0] == b[0] and a[2] + 1 < b[1]) for a, b in zip(intervals, intervals[1:]))


@dataclass(frozen=True)
class AddressSet:
    """A union of address intervals, merged so that containment is a check against one interval (found by
    bisection). Built directly from unmerged intervals, it keeps the old meaning: each interval judged alone."""

    intervals: tuple[Interval, ...] = ()
    _starts: Optional[tuple[int, ...]] = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if _merged(self.intervals):
            object.__setattr__(self, "_starts", tuple(_key(v, first) for v, first, _ in self.intervals))

    @classmethod
    def of(cls, intervals: Iterable[Interval]) -> AddressSet:
        intervals = tuple(intervals)
        # A long list is a role's sources, which every rule of a rendered file repeats: merged once, and one object
        # (so SourcePieces' masks, memoised per object, are computed once too).
        return _shared_set(intervals) if len(intervals) >= _SHARED else _merge(intervals)

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AddressSet:
        intervals: list[Interval] = []
        for entry in entries:
            interval = parse_interval(entry)
            intervals += EVERYWHERE if entry.strip() == "*" else [interval] if interval else []
        return cls.of(intervals)

    def _candidate(self, version: int, address: int) -> Optional[Interval]:
        """The interval starting last at or before ``address`` (merged sets only): the only one that can hold it."""
        index = bisect_right(self._starts, _key(version, address)) - 1  # type: ignore[arg-type]
        candidate = self.intervals[index] if index >= 0 else None
        return candidate if candidate is not None and candidate[0] == version else None

    def covers(self, inner: Interval) -> bool:
        if self._starts is None:
            return any(v == inner[0] and first <= inner[1] and inner[2] <= last for v, first, last in self.intervals)
        candidate = self._candidate(inner[0], inner[1])
        return candidate is not None and inner[2] <= candidate[2]

    def covers_all(self, inner: AddressSet) -> bool:
        return bool(inner.intervals) and all(self.covers(i) for i in inner.intervals)

    def overlaps(self, other: Interval) -> bool:
        if self._starts is None:
            return any(v == other[0] and first <= other[2] and other[1] <= last for v, first, last in self.intervals)
        # disjoint and sorted: if the last interval starting at or before other's end ends before it, all earlier do
        candidate = self._candidate(other[0], other[2])
        return candidate is not None and other[1] <= candidate[2]


_SHARED = 64


def _merge(intervals: Iterable[Interval]) -> AddressSet:
    merged: list[Interval] = []
    for version, first, last in sorted(intervals):
        if merged and merged[-1][0] == version and first <= merged[-1][2] + 1:
            merged[-1] = (version, merged[-1][1], max(merged[-1][2], last))
        else:
            merged.append((version, first, last))
    return AddressSet(tuple(merged))


@lru_cache(maxsize=32)
def _shared_set(intervals: tuple[Interval, ...]) -> AddressSet:
    return _merge(intervals)


class SourcePieces:
    """A role's sources in the order its flows are judged, one bit each (bit i: the i-th source), so a first-match
    walk over rules decides all of them per rule: which sources a rule's set covers (what a pass or an allow needs)
    and which it overlaps (what a drop or a deny needs). The masks are memoised per set object (rules keep theirs for
    a whole evaluation) and per set value (rendered rules repeat the same sources)."""

    def __init__(self, intervals: Iterable[Interval]) -> None:
        self.intervals = tuple(intervals)
        self.all = (1 << len(self.intervals)) - 1
        self._by_id: dict[int, tuple[Optional[AddressSet], int, int]] = {}
        self._by_value: dict[tuple[Interval, ...], tuple[int, int]] = {}

    def __len__(self) -> int:
        return len(self.intervals)

    def _masks(self, addresses: Optional[AddressSet]) -> tuple[int, int]:
        known = self._by_id.get(id(addresses))
        if known is not None and known[0] is addresses:
            return known[1], known[2]
        if addresses is None:
            masks = (self.all, self.all)
        else:
            masks = self._by_value.get(addresses.intervals)  # type: ignore[assignment]
            if masks is None:
                covered = overlapped = 0
                for bit, interval in enumerate(self.intervals):
                    if addresses.covers(interval):
                        covered |= 1 << bit
                    if addresses.overlaps(interval):
                        overlapped |= 1 << bit
                masks = self._by_value[addresses.intervals] = (covered, overlapped)
        self._by_id[id(addresses)] = (addresses, *masks)  # the set is kept, so its id is not reused meanwhile
        return masks

    def covered_by(self, addresses: Optional[AddressSet]) -> int:
        """The sources wholly inside ``addresses`` (None: any address)."""
        return self._masks(addresses)[0]

    def overlapped_by(self, addresses: Optional[AddressSet]) -> int:
        """The sources that share an address with ``addresses`` (None: any address)."""
        return self._masks(addresses)[1]


def lowest(mask: int) -> int:
    """The index of the lowest set bit (the first source in judging order)."""
    return (mask & -mask).bit_length() - 1


def ports_cover(ranges: Iterable[PortRange], inner: PortRange) -> bool:
    return any(r.start <= inner.start and inner.end <= r.end for r in normalize_ports(ranges))


def ports_overlap(ranges: Iterable[PortRange], other: PortRange) -> bool:
    return any(r.start <= other.end and other.start <= r.end for r in ranges)
