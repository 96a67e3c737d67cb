"""Azure Firewall's matching of addresses, names and ports, for the evaluator (reference/azure-firewall.md §2.3-2.4).

- Addresses (sources, network-rule destinations, IP Group contents): ``*``, an IP, a CIDR or a range ``a-b``; any
  other text in ``destinationAddresses`` is a service tag, compared by name.
- Target FQDNs (application rules): exact (case-insensitive), ``*`` (everything), or ``*<suffix>``: the ``*`` stands for
  anything at all, so ``*.contoso.com`` is every subdomain (never the apex) and ``*contoso.com`` is the apex, every
  subdomain and look-alikes such as ``th3re4lcontoso.com`` (firewall-faq.yml). Network-rule FQDNs are exact names.
- A requirement's wildcard (``*.x``, ``md-*.x``) stands for names that all end with the text after its ``*``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from ...addresses import PortRange, host_matches, normalize_ports, parse_port, wildcard_covers
from ..sets import IPV4_ALL, AddressSet, Interval, parse_interval

ANY_PORT = PortRange(1, 65535)
NAMED = ("name", "pattern", "any")  # the target kinds an application rule can judge


@dataclass(frozen=True)
class Target:
    """One destination of a flow: ``address`` (interval), ``name``, ``pattern`` (text with a ``*``), ``tag``,
    ``any`` (``*``) or ``unknown`` (an IP Group whose contents are not known; nothing matches it)."""

    kind: str
    text: str
    interval: Optional[Interval] = None

    @property
    def suffix(self) -> str:
        """What every name of a pattern ends with: the text after its ``*``."""
        return self.text.partition("*")[2]


def requirement_target(kind: str, destination: str) -> Target:
    if kind in ("ip", "cidr"):
        return Target("address", destination, parse_interval(destination))
    if kind == "wildcard":
        return Target("pattern", destination.lower())
    if kind == "service-tag":
        return Target("tag", destination)
    if kind == "any":
        return Target("any", "*")
    return Target("name", destination.lower())  # fqdn, or a URL's host


def address_target(entry: str) -> Target:
    """A ``destinationAddresses`` entry."""
    if entry.strip() == "*":
        return Target("any", "*")
    interval = parse_interval(entry)
    return Target("address", entry, interval) if interval else Target("tag", entry)


def fqdn_target(entry: str) -> Target:
    """A ``targetFqdns`` entry (Azure rejects ``*`` anywhere but the left, so such text names nothing real)."""
    text = entry.strip().lower()
    if text == "*":
        return Target("any", "*")
    return Target("pattern", text) if text.startswith("*") and "*" not in text[1:] else Target("name", text)


def is_lookalike(target: Target) -> bool:
    """``*contoso.com``: no dot after the ``*``, so it also opens names that merely end the same way."""
    return target.kind == "pattern" and not target.suffix.startswith(".")


@dataclass(frozen=True)
class Destinations:
    """What a rule's destination fields match."""

    anything: bool = False
    addresses: AddressSet = field(default_factory=AddressSet)
    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()  # '*<suffix>' targets
    tags: frozenset[str] = frozenset()

    @classmethod
    def of(cls, targets: Iterable[Target]) -> Destinations:
        targets = list(targets)
        return cls(anything=any(t.kind == "any" for t in targets),
                   addresses=AddressSet.of(t.interval for t in targets if t.kind == "address" and t.interval),
                   names=frozenset(t.text for t in targets if t.kind == "name"),
                   suffixes=tuple(t.suffix for t in targets if t.kind == "pattern"),
                   tags=frozenset(t.text for t in targets if t.kind == "tag"))

    @property
    def every_name(self) -> bool:
        # Azure Firewall handles IPv4 only (firewall-known-issues.md): all of IPv4 is every name a host resolves.
        return self.anything or self.addresses.covers(IPV4_ALL)

    def covers(self, target: Target) -> bool:
        """Does every destination ``target`` stands for match?"""
        if target.kind == "address":
            return self.anything or (target.interval is not None and self.addresses.covers(target.interval))
        if target.kind == "name":
            return self.every_name or target.text in self.names or any(target.text.endswith(s) for s in self.suffixes)
        if target.kind == "pattern":
            return self.every_name or any(target.suffix.endswith(s) for s in self.suffixes)
        if target.kind == "tag":
            return self.anything or target.text in self.tags
        return target.kind == "any" and self.anything

    def overlaps(self, target: Target) -> bool:
        """Does some destination ``target`` stands for match?"""
        if target.kind == "address":
            return self.anything or (target.interval is not None and self.addresses.overlaps(target.interval))
        if target.kind == "pattern":
            return self.covers(target) or any(s.endswith(target.suffix) for s in self.suffixes) or any(
                host_matches(target.text, n) for n in self.names)
        if target.kind == "any":
            return bool(self.anything or self.addresses.intervals or self.names or self.suffixes or self.tags)
        return self.covers(target)


def within(entry: Target, kind: str, destination: str) -> bool:
    """Is everything a rule's ``entry`` opens inside the requirement destination ``destination`` (of ``kind``)?"""
    if entry.kind == "address":
        outer = parse_interval(destination) if kind in ("ip", "cidr") else None
        return outer is not None and entry.interval is not None and AddressSet((outer,)).covers(entry.interval)
    if entry.kind == "name":
        return entry.text == destination.lower() if kind != "wildcard" else host_matches(destination, entry.text)
    if entry.kind == "pattern":
        return kind == "wildcard" and wildcard_covers(destination, entry.text)
    if entry.kind == "tag":
        return kind == "service-tag" and entry.text == destination
    return entry.kind == "any" and kind == "any"


def parse_ports(spec: Iterable[str]) -> tuple[PortRange, ...]:
    """``destinationPorts`` (``*``, ``n``, ``a-b``) as merged ranges."""
    return normalize_ports(ANY_PORT if str(p).strip() == "*" else parse_port(p) for p in spec)
