"""Flows a target allows, judged against the stack's breadth limits (``egress.breadth`` measures them).

``judge``: the flows (``Allow``), less the ones a matrix entry accepts as broad (``Accepted``), against ``Limits``:
- a name under a public suffix (``*.co.uk``);
- per transport and stretch of ports, the destinations of every rule open there, collapsed: more than
  ``maxPublicShare`` of public space is a finding (two rules with one half each are the internet);
- per transport and destination (a stretch of addresses, or a name), the ports every rule opens to it: more than
  ``maxPortSpan`` is a finding;
- the rules' sources, collapsed: more than ``maxPublicShare`` makes every rule an open relay.
Rules are aggregated across the whole target (a role's sources are not told apart): stricter, never looser.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field, replace
from typing import Iterable, Optional

from .addresses import PortRange, format_ports, normalize_ports
from .breadth import TRANSPORTS, IPNetwork, collapse, describe_share, minus, port_span, public_addresses, public_share, public_suffix


@dataclass(frozen=True)
class Limits:
    max_public_share: float  # percent of public space, per family
    max_port_span: int


@dataclass(frozen=True)
class Allow:
    """What one rule lets through: ``addresses`` (networks; ``ANY`` for any destination), ``names`` (hosts, ``*.x``,
    ``.x``: DNS names, judged case-insensitively as resolvers and proxies match them) or ``tags`` (Azure service tags and
    FQDN tags: named sets, not DNS names, so never judged as a public suffix; their ports are), on a transport (tcp | udp)
    and ports, from ``sources`` (None: not known here)."""

    where: str
    transport: str
    ports: tuple[PortRange, ...]
    addresses: tuple[IPNetwork, ...] = ()
    names: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    sources: Optional[tuple[IPNetwork, ...]] = None
    roles: frozenset[str] = field(default_factory=frozenset)  # the roles it serves (for what they accept as broad)


@dataclass(frozen=True)
class Accepted:
    """A flow a role may have however broad it is: a matrix entry says why (``broad``)."""

    role: str
    transport: str
    ports: tuple[PortRange, ...]
    addresses: tuple[IPNetwork, ...] = ()
    names: tuple[str, ...] = ()


def _port_minus(ranges: Iterable[PortRange], removed: Iterable[PortRange]) -> tuple[PortRange, ...]:
    out = list(normalize_ports(ranges))
    for cut in normalize_ports(removed):
        out = [piece for r in out for piece in (PortRange(r.start, min(r.end, cut.start - 1)), PortRange(max(r.start, cut.end + 1), r.end))
               if piece.start <= piece.end]
    return normalize_ports(out)


def _port_and(ranges: Iterable[PortRange], other: Iterable[PortRange]) -> tuple[PortRange, ...]:
    return normalize_ports(PortRange(max(a.start, b.start), min(a.end, b.end)) for a in ranges for b in other if max(a.start, b.start) <= min(a.end, b.end))


def residual(allow: Allow, accepted: Iterable[Accepted]) -> list[Allow]:
    """What ``allow`` lets through beyond the flows its roles accept as broad."""
    pieces = [allow]
    for acc in accepted:
        if acc.role not in allow.roles or acc.transport != allow.transport:
            continue
        nxt = []
        for piece in pieces:
            inside = _port_and(piece.ports, acc.ports)
            if not inside:
                nxt.append(piece)
                continue
            if outside := _port_minus(piece.ports, acc.ports):
                nxt.append(replace(piece, ports=outside))
            anywhere = any(n.prefixlen == 0 for n in acc.addresses)  # any destination: every name too
            rest = replace(piece, ports=inside, addresses=tuple(minus(piece.addresses, collapse(acc.addresses))),
                           names=() if anywhere else tuple(n for n in piece.names if n not in acc.names),
                           tags=() if anywhere else tuple(t for t in piece.tags if t not in acc.names))
            if rest.addresses or rest.names or rest.tags:
                nxt.append(rest)
        pieces = nxt
    return pieces


def _boundaries(ranges: Iterable[PortRange]) -> list[PortRange]:
    """The port axis cut where any range starts or ends: within one piece every range either holds all or none."""
    points = sorted({p for r in ranges for p in (r.start, r.end + 1)})
    return [PortRange(a, b - 1) for a, b in zip(points, points[1:])]


def _rules(allows: Iterable[Allow]) -> str:
    names = sorted({a.where for a in allows})
    return ", ".join(names[:4]) + (f" (+{len(names) - 4} more)" if len(names) > 4 else "")


def _port_makers(rules: Iterable[Allow]) -> list[Allow]:
    """The rules that open the ports, widest first: one whose ports the ones before it already open adds nothing."""
    kept: list[Allow] = []
    for allow in sorted(set(rules), key=lambda a: (-port_span(a.ports), a.where)):
        if port_span([*allow.ports, *(r for k in kept for r in k.ports)]) > port_span(r for k in kept for r in k.ports):
            kept.append(allow)
    return kept


def _address_makers(rules: Iterable[Allow]) -> list[Allow]:
    """The rules that reach the public addresses, widest first (as ``_port_makers``)."""
    kept: list[Allow] = []
    for allow in sorted(set(rules), key=lambda a: (-public_share(a.addresses), a.where)):
        before = public_addresses(n for k in kept for n in k.addresses)
        if public_addresses([*allow.addresses, *(n for k in kept for n in k.addresses)]) != before:
            kept.append(allow)
    return kept


def _share_findings(allows: list[Allow], limits: Limits) -> list[str]:
    out = []
    for transport in TRANSPORTS:
        mine = [a for a in allows if a.transport == transport and a.addresses]
        runs: list[tuple[PortRange, tuple[IPNetwork, ...], list[Allow]]] = []
        for piece in _boundaries(r for a in mine for r in a.ports):
            covering = [a for a in mine if any(r.start <= piece.start and piece.end <= r.end for r in a.ports)]
            nets = collapse(n for a in covering for n in a.addresses)
            if not covering or public_share(nets) <= limits.max_public_share:
                continue
            contributors = _address_makers(covering)
            if runs and runs[-1][0].end + 1 == piece.start and runs[-1][1] == nets and runs[-1][2] == contributors:
                runs[-1] = (PortRange(runs[-1][0].start, piece.end), nets, contributors)
            else:
                runs.append((piece, nets, contributors))
        out += [f"{transport}/{ports} reaches {describe_share(nets)} (more than maxPublicShare {limits.max_public_share:g}%) through {_rules(who)}"
                for ports, nets, who in runs]
    return out


def _address_span(mine: list[Allow], version: int, limits: Limits) -> tuple[list[IPNetwork], tuple[PortRange, ...], list[Allow]]:
    """(the addresses of one family open on more than maxPortSpan ports, the widest port set among them, the rules)."""
    nets = [(n, a) for a in mine for n in a.addresses if n.version == version]
    points = sorted({p for n, _ in nets for p in (int(n.network_address), int(n.broadcast_address) + 1)})
    wide: list[IPNetwork] = []
    widest: tuple[PortRange, ...] = ()
    rules: list[Allow] = []
    for low, high in zip(points, points[1:]):  # stretches every rule either covers whole or not at all
        covering = [a for n, a in nets if int(n.network_address) <= low and high - 1 <= int(n.broadcast_address)]
        ports = normalize_ports(r for a in covering for r in a.ports)
        if port_span(ports) > limits.max_port_span:
            first, last = (ipaddress.ip_address(x if version == 4 else x.to_bytes(16, "big")) for x in (low, high - 1))
            wide.extend(ipaddress.summarize_address_range(first, last))
            widest = max(widest, ports, key=port_span)
            rules.extend(covering)
    return wide, widest, rules


def _span_findings(allows: list[Allow], limits: Limits) -> list[str]:
    out = []
    for transport in TRANSPORTS:
        mine = [a for a in allows if a.transport == transport]
        for version in (4, 6):
            wide, widest, rules = _address_span(mine, version, limits)
            if wide:
                nets = [str(n) for n in collapse(wide)]
                shown = ", ".join(nets[:4]) + (f" (+{len(nets) - 4} more)" if len(nets) > 4 else "")
                out.append(f"{transport} to {shown} opens up to {port_span(widest)} ports ({format_ports(widest)}; more than maxPortSpan "
                           f"{limits.max_port_span}) through {_rules(_port_makers(rules))}")
        names: dict[str, list[Allow]] = {}
        for allow in mine:
            for name in (*allow.names, *allow.tags):
                names.setdefault(name, []).append(allow)
        for name, covering in sorted(names.items()):
            ports = normalize_ports(r for a in covering for r in a.ports)
            if port_span(ports) > limits.max_port_span:
                out.append(f"{transport} to {name} opens {port_span(ports)} ports ({format_ports(ports)}; more than maxPortSpan "
                           f"{limits.max_port_span}) through {_rules(_port_makers(covering))}")
    return out


def judge(allows: Iterable[Allow], limits: Limits, accepted: Iterable[Accepted] = ()) -> list[str]:
    """Findings, in a fixed order: names under a public suffix, public share per stretch of ports, port span per
    destination, and sources that are (a share of) the internet."""
    allows = list(allows)
    accepted = list(accepted)
    rest = [piece for allow in allows for piece in residual(allow, accepted)]
    out = sorted({f"{a.where}: '{n}' is every name under the public suffix '{s}'" for a in rest for n in a.names if (s := public_suffix(n))})
    out += _share_findings(rest, limits) + _span_findings(rest, limits)
    # rules repeat their role's sources (one tuple, thousands of /32s): each distinct tuple counted once
    distinct = {id(a.sources): a.sources for a in allows if a.sources}
    sources = collapse(n for s in distinct.values() for n in s)
    if public_share(sources) > limits.max_public_share:
        open_to = [a for a in allows if a.sources and any(public_addresses(a.sources).values())]
        out.append(f"the rules' sources cover {describe_share(sources)} (more than maxPublicShare {limits.max_public_share:g}%): every "
                   f"rule is an open relay for them ({_rules(open_to)})")
    return out
