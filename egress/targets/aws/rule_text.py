"""The Suricata text of the AWS plan's pass rules (pure; the forms: reference/aws-egress.md §3.2).

- To a name: ``tls.sni`` / ``http.host``, exact = ``startswith; endswith``, ``*.x`` = ``content:".x"; endswith`` (never
  the apex), the required ports, ``flow:to_server``, ``msg`` naming the rule and destination, ``metadata`` the entry ids.
- To addresses: a 5-tuple pass with ``flow:to_server``.
The source is ``$HOME_NET`` (a role's group) or a source group's own variable (``$G_<GROUP>``, groups.py). Entry ids may
carry a '/' (an own catalog's ``payments/stripe-api``): Suricata 7 takes it in ``metadata`` values (tests/test_aws_groups.py).
SIDs come from the rules' keys, so they stay put when other rules come and go.
"""
from __future__ import annotations

import hashlib
from typing import Iterable

from ...addresses import PortRange, format_ports
from .plan import SID_BASE, SID_SPAN


def suricata_ports(ports: Iterable[PortRange]) -> str:
    items = [str(p.start) if p.start == p.end else f"{p.start}:{p.end}" for p in ports]
    return items[0] if len(items) == 1 else f"[{','.join(items)}]"


def metadata(entry_ids: Iterable[str]) -> str:
    return ", ".join(f"egress_entry {i}" for i in sorted(set(entry_ids)))


def name_rule(stem: str, protocol: str, destination: str, ports: tuple[PortRange, ...], entry_ids: list[str],
              source: str = "$HOME_NET") -> tuple[str, str]:
    """(key, text without sid) of an exact Suricata pass rule for a host or a subdomains-only wildcard."""
    buffer, app, case = ("tls.sni", "tls", " nocase;") if protocol == "https" else ("http.host", "http", "")
    if destination.startswith("*."):
        match = f'content:"{destination[1:]}";{case} endswith;'  # subdomains at any depth, never the apex
    else:
        match = f'content:"{destination}"; startswith;{case} endswith;'
    name = f"{stem}-{protocol}"
    key = f"{name}|{destination}|{format_ports(ports)}"
    return key, (f"pass {app} {source} any -> any {suricata_ports(ports)} ({buffer}; {match} msg:\"{name} {destination}\"; "
                 f"flow:to_server; metadata:{metadata(entry_ids)};")


def address_rule(stem: str, protocol: str, destinations: tuple[str, ...], ports: tuple[PortRange, ...], entry_ids: list[str],
                 source: str = "$HOME_NET") -> tuple[str, str]:
    transport = "udp" if protocol == "udp" else "tcp"
    target = "any" if destinations == ("*",) else destinations[0] if len(destinations) == 1 else f"[{','.join(destinations)}]"
    name = f"{stem}-{transport}-{'_'.join(str(p) for p in ports)}"
    key = f"{name}|{','.join(destinations)}"
    return key, (f"pass {transport} {source} any -> {target} {suricata_ports(ports)} (msg:\"{name}\"; flow:to_server; "
                 f"metadata:{metadata(entry_ids)};")


def sids(keys: Iterable[str]) -> dict[str, int]:
    """SIDs from the rules' keys (a hash), so they stay put when other rules come and go; a rare collision is resolved
    by probing in key order, which moves only the colliding rules."""
    taken: dict[int, str] = {}
    out = {}
    for key in sorted(set(keys)):
        sid = SID_BASE + int(hashlib.sha256(key.encode()).hexdigest()[:12], 16) % SID_SPAN
        while sid in taken:
            sid = SID_BASE + (sid - SID_BASE + 1) % SID_SPAN
        taken[sid] = key
        out[key] = sid
    return out
