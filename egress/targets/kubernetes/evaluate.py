"""Judge a rendered squid.conf against the requirements, with Squid's semantics (the ones tests/test_squid_engine.py pins).

``http_access`` lines are read in order and the first whose ACLs all match decides; no match denies (Squid's
implicit rule is the opposite of the last line, and every generated file ends with ``deny all``). ACL types read:
``src``, ``port``, ``method``, ``proto``, ``dstdomain`` (``.x`` = x and its subdomains, case-insensitive),
``dstdom_regex`` (with ``-i``). A line using another ACL type matches nothing and is listed as assumed. Each
requirement is probed per destination with a source from its role's CIDRs: a host as itself, a ``*.x`` wildcard as a
name under it. Extra: a wildcard's apex allowed when no requirement asks for it.
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
from .squid import proxied_option

SQUID_CONF = "kubernetes/squid.conf"


def _parse(text: str) -> tuple[dict[str, tuple[str, list[str], set[str]]], list[tuple[str, list[str]]]]:
    acls: dict[str, tuple[str, list[str], set[str]]] = {}
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


def _decide(acls, access, request: dict, assumed: set[str]) -> tuple[bool, str]:
    for action, names in access:
        verdicts = []
        for name in names:
            negate = name.startswith("!")
            key = name[1:] if negate else name
            if key == "all":
                verdicts.append(not negate)
                continue
            if key not in acls:
                assumed.add(f"http_access uses an undefined ACL '{key}' (Squid refuses the file)")
                verdicts.append(False)
                continue
            matched = _matches(acls[key], request)
            if matched is None:
                assumed.add(f"ACL '{key}' of type {acls[key][0]} is not judged offline: its lines match nothing here")
                matched = False
            verdicts.append(matched != negate)
        if all(verdicts):
            return action == "allow", f"http_access {action} {' '.join(names)}"
    return False, "no http_access line matched"


def evaluate(artefacts: Mapping[str, str], requirements: Iterable[Requirement]) -> Verdict:
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
    return Verdict(missing=tuple(missing), extra=tuple(sorted(extra)), rules_checked=len(access), assumed=tuple(sorted(assumed)))
