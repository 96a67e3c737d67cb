"""Kubernetes: which squid.conf ACL and http_access line decide a request through the egress proxy, and every ACL
with the entries its comment names.

The evaluator's own reading is reused (``targets/kubernetes/evaluate.py``): http_access lines in order, the first whose
ACLs all match decides, ``deny all`` last. A request is what a client sends the proxy: ``CONNECT host:port`` for
HTTPS, ``GET http://host:port/`` for HTTP, from an address of the role's sources; other protocols never reach it.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from ..addresses import format_ports
from ..models import Requirement
from ..targets.kubernetes.evaluate import SQUID_CONF, _decide, _matches, _parse
from ..targets.kubernetes.squid import proxied_option
from .model import Listed, Outcome, Probe, RuleRef

NAME = "kubernetes"
_HEADER = re.compile(r"^#\s*([a-z0-9][a-z0-9-]*): (\S+) -> (HTTPS|HTTP) (\S+)\s*$")
_ENTRIES = re.compile(r"^#\s+entries:(.*)$")
_NAME_KINDS = ("dstdomain", "dstdom_regex")


@dataclass(frozen=True)
class Acl:
    """One allow of the allowlist, as its comment describes it: ``# NAME: ROLE -> HTTPS PORTS`` and ``#   entries: ...``."""

    name: str
    role: str
    protocol: str
    ports: str
    entry_ids: tuple[str, ...]


def _comments(text: str) -> dict[str, Acl]:
    found: dict[str, Acl] = {}
    current = None
    for line in text.splitlines():
        header, entries = _HEADER.match(line.strip()), _ENTRIES.match(line.strip())
        if header:
            name, role, protocol, ports = header.groups()
            current = found[name] = Acl(name, role, protocol.lower(), ports, ())
        elif entries and current is not None:  # '#   entries:' lines follow their header
            current = found[current.name] = Acl(current.name, current.role, current.protocol, current.ports,
                                                current.entry_ids + tuple(entries.group(1).split()))
    return found


def _request(probe: Probe, source: str) -> dict:
    destination = probe.destination.lower()
    host = f"probe.{destination[2:]}" if destination.startswith("*.") else destination
    address = str(ipaddress.ip_network(source, strict=False).network_address)
    return {"src": address, "port": probe.ports.start, "method": "CONNECT" if probe.protocol == "https" else "GET", "proto": "HTTP", "host": host}


class Judge:
    """The egress proxy's squid.conf, ready to decide requests."""

    name = NAME

    def __init__(self, artefacts: Mapping[str, str], catalog: object = None, enforced: Iterable[Requirement] = ()):
        text = artefacts.get(SQUID_CONF)
        self.acls, self.access = _parse(text) if text is not None else ({}, [])
        self.described = _comments(text or "")
        self.missing = "" if text is not None else f"no egress proxy ({SQUID_CONF}) among the artefacts"

    def _base(self, acl: str) -> str:
        return acl.removesuffix("-subdomains") if acl.removesuffix("-subdomains") in self.described else acl

    def _ref(self, acl: str, line: str) -> RuleRef:
        base = self._base(acl)
        where = (("acl", acl),) + ((("allowlist entry", base),) if base != acl else ())
        described = self.described.get(base)
        return RuleRef(NAME, "squid acl", acl, where, "allow", described.entry_ids if described else (), line)

    def decide(self, probe: Probe, source: str) -> Outcome:
        if probe.protocol not in ("http", "https"):
            return Outcome(False, reason=f"the egress proxy carries only HTTP and HTTPS: a {probe.protocol} flow needs a network path of its own",
                           carried=False)
        if probe.kind in ("service-tag", "any"):
            return Outcome(False, reason=f"a {probe.kind} destination is matched by address, not by the name a proxy request carries", carried=False)
        request = _request(probe, source)
        assumed: set[str] = set()
        allowed, line = _decide(self.acls, self.access, request, assumed)
        listing = [name for name, acl in sorted(self.acls.items()) if acl[0] in _NAME_KINDS and _matches(acl, request)]
        notes = tuple(sorted(assumed))
        if allowed:
            matcher = [n for n in line.split()[2:] if n in listing]
            return Outcome(True, tuple(self._ref(n, line) for n in matcher), notes=notes)
        for name in listing:
            described = self.described.get(self._base(name))
            scope = f" (for {described.role}, {described.protocol.upper()} {described.ports})" if described else ""
            notes += (f"ACL {name} lists {request['host']}{scope}",)
        if line.startswith("http_access"):
            deny = RuleRef(NAME, "squid http_access", line.removeprefix("http_access "), (("http_access", line.removeprefix("http_access ")),),
                           "deny", (), line)
            return Outcome(False, (deny,), notes=notes)
        return Outcome(False, reason=line, notes=notes)

    def inventory(self, requirements: list[Requirement]) -> list[Listed]:
        out = []
        for name, described in sorted(self.described.items()):
            lines = [f"http_access {action} {' '.join(names)}" for action, names in self.access
                     if name in names or f"{name}-subdomains" in names]
            matchers = [n for n in (name, f"{name}-subdomains") if n in self.acls]
            ref = RuleRef(NAME, "squid acl", name, (("acl", name),), "allow", described.entry_ids, "\n".join(lines))
            out.append(Listed(ref, tuple(matchers) or (name,), self._carried_by(described, matchers)))
        return out

    def _carried_by(self, described: Acl, matchers: list[str]) -> Callable[[Requirement], bool]:
        def carries(req: Requirement) -> bool:
            option, _ = proxied_option(req)
            if option is None or req.role != described.role or option.protocol != described.protocol or format_ports(option.ports) != described.ports:
                return False
            hosts = [f"probe.{d[2:]}" if d.startswith("*.") else d for d in (d.lower() for d in option.destinations)]
            return all(any(_matches(self.acls[m], {"host": h}) for m in matchers) for h in hosts)
        return carries
