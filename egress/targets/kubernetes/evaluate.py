"""Judge a rendered squid.conf against the requirements, with Squid's semantics (the ones tests/test_squid_engine.py pins).

``http_access`` lines are read in order and the first whose ACLs all match decides; no match denies (Squid's
implicit rule is the opposite of the last line, and every generated file ends with ``deny all``). ACL types read:
``src``, ``port``, ``method``, ``proto``, ``dstdomain`` (``.x`` = x and its subdomains, case-insensitive),
``dstdom_regex`` (with ``-i``). A line using another ACL type matches nothing and is listed as assumed. Each
requirement is probed per destination with a source from its role's CIDRs: a host as itself, a ``*.x`` wildcard as a
name under it. Extra: a wildcard's apex allowed when no requirement asks for it; and a name only source groups ask for,
allowed from an address of another role or group (their sources as the requirements carry them) outside the asking
groups' (``beyond_groups.py``). Names a role asks for are not judged by source: the proxy serves the nodes role's pods
too (its pod CIDRs, which the requirements do not carry), so a group inside them rightly gets what the nodes get.

Bounded time: a squid.conf is indexed once (``_Index``): a probe reads only the lines whose name ACL can match its host
(10,000 own entries over 100 groups: 345 s before, 2 s with it; tests/test_squid_decide.py pins the same decisions).
"""
from __future__ import annotations

import ipaddress
import re
import shlex
from functools import lru_cache
from typing import Iterable, Mapping, Optional

from ...models import Requirement
from ..sets import AddressSet, parse_interval
from ..verdict import Verdict
from .beyond_groups import beyond_groups
from .squid import proxied_option

SQUID_CONF = "kubernetes/squid.conf"


class _Acls(dict):
    """The ACLs of one parsed squid.conf (name -> (type, values, flags)), with the index ``_decide`` builds once."""

    index: Optional["_Index"] = None


def _parse(text: str) -> tuple[dict[str, tuple[str, list[str], set[str]]], list[tuple[str, list[str]]]]:
    acls: dict[str, tuple[str, list[str], set[str]]] = _Acls()
    access: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip() if not line.lstrip().startswith("acl") else line.strip()
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line, posix=False)
        if words[0] == "acl" and len(words) >= 3:
            name, kind, rest = words[1], words[2], words[3:]
            flags = {w for w in rest if w.startswith("-")}
            values = [w for w in rest if not w.startswith("-")]
            known = acls.setdefault(name, (kind, [], set()))
            known[1].extend(values)
            known[2].update(flags)
        elif words[0] == "http_access" and len(words) >= 2:
            access.append((words[1], words[2:]))
    return acls, access


def _matches(acl: tuple[str, list[str], set[str]], request: dict) -> bool | None:
    kind, values, flags = acl
    if kind == "src":
        if "all" in values:  # Squid reads 'all' as every address
            return True
        address = ipaddress.ip_address(request["src"])
        networks = _src_networks(tuple(values))
        if networks is not None:
            return networks.covers((address.version, int(address), int(address)))
        return any(address in ipaddress.ip_network(v, strict=False) for v in values)
    if kind == "port":
        return any(int(v.split("-")[0]) <= request["port"] <= int(v.split("-")[-1]) for v in values)
    if kind == "method":
        return request["method"] in values
    if kind == "proto":
        return request["proto"] in values
    if kind == "dstdomain":
        host = request["host"].lower().rstrip(".")
        return any(host == v[1:] or host.endswith(v) if v.startswith(".") else host == v.lower() for v in values)
    if kind == "dstdom_regex":
        return any(re.search(v, request["host"], re.I if "-i" in flags else 0) for v in values)
    if kind == "all":
        return True
    return None  # an ACL type this evaluator does not read


@lru_cache(maxsize=64)
def _src_networks(values: tuple[str, ...]) -> Optional[AddressSet]:
    """A ``src`` ACL's addresses as one merged set, parsed once (a role may have thousands of sources, and every probe
    reads them); None when one is not an address or CIDR, which is then read value by value as before."""
    intervals = []
    for value in values:
        interval = parse_interval(value) if "-" not in value and value == value.strip() else None
        if interval is None:
            return None
        intervals.append(interval)
    return AddressSet.of(intervals)


_READ = ("src", "port", "method", "proto", "dstdomain", "dstdom_regex", "all")
_GENERATED = re.compile(r"((?:\\\.[A-Za-z0-9-]+)+)\$")  # squid.subdomain_regex: '\.x\.com$' (a name ending in '.x.com')


class _Index:
    """What ``_decide`` reads once per squid.conf rather than once per request (thousands of own entries make hundreds of
    lines and names): the name ACLs by the names they can match (``dstdomain`` as ``_matches`` reads it, generated
    ``dstdom_regex`` by suffix, any other regex always), the lines by their first name ACL (a line can match a request
    only if that ACL does), each line's notes (they do not depend on the request), ``src`` verdicts per client address."""

    def __init__(self, acls: dict, access: list) -> None:
        self.access = access
        self.exact: dict[str, set[str]] = {}
        self.dotted: dict[str, set[str]] = {}
        self.below: dict[str, set[str]] = {}
        self.any_name: set[str] = set()
        for name, (kind, values, _) in acls.items():
            if kind == "dstdomain":
                for value in values:
                    (self.dotted.setdefault(value[1:], set()) if value.startswith(".") else self.exact.setdefault(value.lower(), set())).add(name)
            elif kind == "dstdom_regex":
                suffixes = [m.group(1).replace("\\.", ".").lower()[1:] if (m := _GENERATED.fullmatch(v)) else None for v in values]
                if None in suffixes:
                    self.any_name.add(name)
                for suffix in filter(None, suffixes):
                    self.below.setdefault(suffix, set()).add(name)
        self.by_name: dict[str, list[int]] = {}
        self.always: list[int] = []
        for position, (_, names) in enumerate(access):
            first = next((n for n in names if n in acls and acls[n][0] in ("dstdomain", "dstdom_regex")), None)
            (self.by_name.setdefault(first, []) if first else self.always).append(position)
        self.notes = [(position, notes) for position, (_, names) in enumerate(access)
                      if (notes := tuple(f"http_access uses an undefined ACL '{key}' (Squid refuses the file)" if key not in acls else
                                         f"ACL '{key}' of type {acls[key][0]} is not judged offline: its lines match nothing here"
                                         for key in (n.lstrip("!") for n in names) if key != "all" and (key not in acls or acls[key][0] not in _READ)))]
        self.sources: dict[tuple[str, str], bool] = {}

    def candidates(self, host: str) -> tuple[set[str], list[int]]:
        """The dstdomain ACLs ``host`` matches, and the lines that may match a request for it, in order."""
        host = host.lower().rstrip(".")
        labels = host.split(".")
        suffixes = [".".join(labels[i:]) for i in range(len(labels))]
        domains = set(self.exact.get(host, ()))
        for suffix in suffixes:
            domains |= self.dotted.get(suffix, set())
        names = domains | self.any_name
        for suffix in suffixes[1:]:
            names |= self.below.get(suffix, set())
        lines = set(self.always)
        for name in names:
            lines.update(self.by_name.get(name, ()))
        return domains, sorted(lines)


def _index(acls: dict, access: list) -> _Index:
    if isinstance(acls, _Acls):
        if acls.index is None or acls.index.access is not access:
            acls.index = _Index(acls, access)
        return acls.index
    return _Index(acls, access)  # ACLs built by hand: indexed for this request only


def _decide(acls, access, request: dict, assumed: set[str]) -> tuple[bool, str]:
    """Squid's first match: each line's ACLs in order, the first that does not match ends the line (as Squid stops).
    Lines whose first name ACL cannot match the host are passed over (the index); the notes are those of every line
    up to the deciding one, as when each line is read."""
    index = _index(acls, access)
    domains, lines = index.candidates(request["host"])
    decided: Optional[tuple[bool, str]] = None
    for position in lines:
        action, names = access[position]
        for name in names:
            negate = name.startswith("!")
            key = name[1:] if negate else name
            if key == "all":
                matched = True
            elif key not in acls:
                break  # an undefined ACL fails its line, negated or not (noted)
            elif acls[key][0] == "dstdomain":
                matched = key in domains
            elif acls[key][0] == "src":
                known = index.sources.get((key, request["src"]))
                matched = index.sources.setdefault((key, request["src"]), bool(_matches(acls[key], request))) if known is None else known
            else:
                matched = bool(_matches(acls[key], request))  # None: a type not read here matches nothing (noted)
            if matched == negate:
                break
        else:
            decided = (action == "allow", f"http_access {action} {' '.join(names)}")
            break
    last = position if decided else len(access)
    for noted, notes in index.notes:
        if noted > last:
            break
        assumed.update(notes)
    return decided or (False, "no http_access line matched")


def evaluate(artefacts: Mapping[str, str], requirements: Iterable[Requirement]) -> Verdict:
    requirements = list(requirements)
    if SQUID_CONF not in artefacts:
        return Verdict(missing=tuple(f"no {SQUID_CONF}" for _ in requirements)[:1])
    acls, access = _parse(artefacts[SQUID_CONF])
    missing, extra, assumed = [], set(), set()
    probed = 0
    for req in requirements:
        option, _ = proxied_option(req)
        if option is None:
            continue
        source = str(ipaddress.ip_network(req.sources[0]).network_address) if req.sources else "0.0.0.0"
        https = option.protocol == "https"
        for destination in option.destinations:
            name = destination.lower()
            host = f"probe.{name[2:]}" if name.startswith("*.") else name
            for port_range in option.ports:
                request = {"src": source, "port": port_range.start, "method": "CONNECT" if https else "GET", "proto": "HTTP", "host": host}
                allowed, why = _decide(acls, access, request, assumed)
                probed += 1
                if not allowed:
                    missing.append(f"{req.role} -> {destination} {option.protocol}/{port_range}: denied ({why}); entries {', '.join(req.entry_ids)}")
                if name.startswith("*."):
                    apex_allowed, why = _decide(acls, access, {**request, "host": name[2:]}, assumed)
                    if apex_allowed:
                        extra.add(f"{req.role} -> {name[2:]} {option.protocol}/{port_range}: the apex of {destination} ({why})")
    required = [(r.role, d.lower()) for r in requirements if proxied_option(r)[0] for d in proxied_option(r)[0].destinations]

    def asked_for(role: str, host: str) -> bool:  # the apex is itself required, or lies under another required wildcard
        return any(r == role and (d == host or (d.startswith("*.") and host.endswith(d[1:]))) for r, d in required)

    extra = {e for e in extra if not asked_for(e.split(" -> ")[0], e.split(" -> ")[1].split(" ")[0])}
    extra |= beyond_groups(acls, access, requirements, lambda request: _decide(acls, access, request, assumed))
    return Verdict(missing=tuple(missing), extra=tuple(sorted(extra)), rules_checked=len(access), assumed=tuple(sorted(assumed)))
