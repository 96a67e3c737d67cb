"""Is a source group's egress allowed to anyone else? Judged on a parsed squid.conf (evaluate.py's reading).

A name only source groups ask for (per protocol and port) must be allowed from their sources alone: each other role
and group (their sources as the requirements carry them) is probed from its lowest address outside the asking groups'
sources, and an allow there is extra. Names a role asks for are not judged by source: the proxy serves the nodes role's
pods too (the pod CIDRs, which requirements do not carry), so a group inside them rightly gets what the nodes get.

Bounded time (thousands of own entries over a hundred groups): the allow lines are indexed by the names they list, and
a source is probed only where a line listing the name holds it; the probe itself is Squid's first-match decision.
"""
from __future__ import annotations

import ipaddress
from typing import Callable, Optional

from ...models import ROLES, Requirement
from ..sets import AddressSet, Interval
from .squid import proxied_option

Decide = Callable[[dict], tuple[bool, str]]  # a request -> (allowed, the deciding line)


def _first_outside(inside: AddressSet, outside: AddressSet) -> Optional[Interval]:
    """The lowest address of ``inside`` that ``outside`` does not hold, as a one-address interval (merged sets)."""
    for version, first, last in inside.intervals:
        address = first
        for v, low, high in outside.intervals:
            if v == version and low <= address <= high:
                address = high + 1
        if address <= last:
            return version, address, address
    return None


class _Lines:
    """The allow lines by the names they list: exact names, ``.x`` (x and below), generated ``\\.x$`` (below x only),
    and the lines that list every name (no positive name ACL, a negated one, or another regex)."""

    def __init__(self, acls: dict, access: list) -> None:
        self.exact: dict[str, list[int]] = {}
        self.dotted: dict[str, list[int]] = {}
        self.below: dict[str, list[int]] = {}
        self.every: list[int] = []
        self.sources: list[Optional[AddressSet]] = []
        for index, (action, names) in enumerate(access):
            used = [(name.startswith("!"), acls.get(name.lstrip("!"))) for name in names if name.lstrip("!") != "all"]
            src = next((acl for negated, acl in used if acl and not negated and acl[0] == "src" and "all" not in acl[1]), None)
            self.sources.append(AddressSet.parse(src[1]) if src else None)
            if action != "allow":
                continue
            named = [(negated, acl) for negated, acl in used if acl and acl[0] in ("dstdomain", "dstdom_regex")]
            if not named or any(negated for negated, _ in named):
                self.every.append(index)
                continue
            for _, (kind, values, _flags) in named:
                for value in values:
                    value = value.lower()
                    if kind == "dstdomain":
                        (self.dotted.setdefault(value[1:], []) if value.startswith(".") else self.exact.setdefault(value, [])).append(index)
                    elif value.startswith("\\.") and value.endswith("$") and "\\" not in value[2:-1].replace("\\.", ""):
                        self.below.setdefault(value[2:-1].replace("\\.", "."), []).append(index)
                    else:
                        self.every.append(index)

    def listing(self, host: str) -> list[int]:
        labels = host.split(".")
        suffixes = [".".join(labels[i:]) for i in range(len(labels))]
        found = [*self.exact.get(host, ()), *(i for s in suffixes for i in self.dotted.get(s, ())),
                 *(i for s in suffixes[1:] for i in self.below.get(s, ())), *self.every]
        return sorted(set(found))


def beyond_groups(acls: dict, access: list, requirements: list[Requirement], decide: Decide) -> set[str]:
    owners: dict[str, AddressSet] = {}
    asked: dict[tuple[str, str, int], dict[str, Requirement]] = {}  # (protocol, destination, port) -> role -> a requirement
    for req in requirements:
        option, _ = proxied_option(req)
        if option is None:
            continue
        if req.sources and req.role not in owners:
            owners[req.role] = AddressSet.parse(req.sources)
        for destination in option.destinations:
            for port_range in option.ports:
                asked.setdefault((option.protocol, destination.lower(), port_range.start), {}).setdefault(req.role, req)
    if not any(role not in ROLES for _, by_role in asked.items() for role in by_role):
        return set()
    lines = _Lines(acls, access)
    near: dict[int, list[str]] = {}  # line -> the other sources its src ACL overlaps (a line's own group, the roles around it)
    outside: dict[tuple[str, tuple[str, ...]], Optional[Interval]] = {}
    extra = set()
    for (protocol, destination, port), by_role in sorted(asked.items()):
        host = f"probe.{destination[2:]}" if destination.startswith("*.") else destination
        labels = host.split(".")
        # every role asking for ``host``, exactly or under a wildcard
        roles = tuple(sorted({role for name in [host, *("*." + ".".join(labels[i:]) for i in range(1, len(labels)))]
                              for role in asked.get((protocol, name, port), ())}))
        if set(roles) & set(ROLES):
            continue
        inside = AddressSet.of(i for role in roles if role in owners for i in owners[role].intervals)
        probed = set()
        for index in lines.listing(host):
            held = lines.sources[index]
            if index not in near:
                near[index] = sorted(o for o, s in owners.items() if held is None or any(held.overlaps(i) for i in s.intervals))
            for other in [o for o in near[index] if o not in roles and o not in probed]:
                key = (other, roles)
                if key not in outside:
                    outside[key] = _first_outside(owners[other], inside)
                address = outside[key]
                if address is None or (held is not None and not held.covers(address)):
                    continue
                probed.add(other)
                source = str(ipaddress.ip_address(address[1]) if address[0] == 4 else ipaddress.IPv6Address(address[1]))
                allowed, why = decide({"src": source, "port": port, "method": "CONNECT" if protocol == "https" else "GET", "proto": "HTTP",
                                       "host": host})
                if allowed:
                    ids = sorted(i for r in by_role.values() for i in r.entry_ids)
                    extra.add(f"{other} -> {destination} {protocol}/{port} from {source}: allowed ({why}), but only "
                              f"{', '.join(roles)} ask{'s' if len(roles) == 1 else ''} for it (entries {', '.join(ids)})")
    return extra
