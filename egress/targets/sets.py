"""Address and port sets, as every target's evaluator matches them: a rule covers a flow, or overlaps it."""
from __future__ import annotations

import ipaddress
from functools import lru_cache
from dataclasses import dataclass
from typing import Iterable, Optional

from ..addresses import PortRange, normalize_ports

Interval = tuple[int, int, int]  # (IP version, first address, last address) as integers
IPV4_ALL: Interval = (4, 0, 2**32 - 1)
EVERYWHERE: tuple[Interval, ...] = (IPV4_ALL, (6, 0, 2**128 - 1))


@lru_cache(maxsize=8192)
def parse_interval(text: str) -> Optional[Interval]:
    """An IP, CIDR or ``a-b`` range as an interval; None for anything else (a service tag, ``*``). Cached: evaluators
    parse the same few sources once per rule."""
    try:
        if "-" in text:
            low, high = (ipaddress.ip_address(part.strip()) for part in text.split("-", 1))
            return (low.version, int(low), int(high)) if low.version == high.version and low <= high else None
        network = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return None
    return (network.version, int(network.network_address), int(network.broadcast_address))


@dataclass(frozen=True)
class AddressSet:
    """A union of address intervals, merged so that containment is a check against one interval."""

    intervals: tuple[Interval, ...] = ()

    @classmethod
    def of(cls, intervals: Iterable[Interval]) -> AddressSet:
        merged: list[Interval] = []
        for version, first, last in sorted(intervals):
            if merged and merged[-1][0] == version and first <= merged[-1][2] + 1:
                merged[-1] = (version, merged[-1][1], max(merged[-1][2], last))
            else:
                merged.append((version, first, last))
        return cls(tuple(merged))

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AddressSet:
        intervals: list[Interval] = []
        for entry in entries:
            interval = parse_interval(entry)
            intervals += EVERYWHERE if entry.strip() == "*" else [interval] if interval else []
        return cls.of(intervals)

    def covers(self, inner: Interval) -> bool:
        return any(v == inner[0] and first <= inner[1] and inner[2] <= last for v, first, last in self.intervals)

    def covers_all(self, inner: AddressSet) -> bool:
        return bool(inner.intervals) and all(self.covers(i) for i in inner.intervals)

    def overlaps(self, other: Interval) -> bool:
        return any(v == other[0] and first <= other[2] and other[1] <= last for v, first, last in self.intervals)


def ports_cover(ranges: Iterable[PortRange], inner: PortRange) -> bool:
    return any(r.start <= inner.start and inner.end <= r.end for r in normalize_ports(ranges))


def ports_overlap(ranges: Iterable[PortRange], other: PortRange) -> bool:
    return any(r.start <= other.end and other.start <= r.end for r in ranges)
