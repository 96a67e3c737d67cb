"""The proxy team's list as a Squid access-control fragment and as a PAC file (pure; issue 21, ``egress export --for proxy``).

Squid: the egress proxy's own generator (``targets/kubernetes/squid.py``: ``compile_acls`` and ``allowlist_text``) on the
requirements that traverse the corporate proxy, so the fragment has its properties: ``dstdomain -n`` without
overlapping entries (FATAL in Squid), subdomain wildcards as ``dstdom_regex``, port ACLs, source ACLs per role, CONNECT
for HTTPS and proxied GETs for plain HTTP, ``http_access deny all`` last. Added here: a plain-HTTP destination whose
requirement lists URL paths is allowed for those paths only (``urlpath_regex``, which Squid checks on plain HTTP; on
HTTPS only after ssl_bump, so HTTPS paths are listed as comments); the hosts that must not be TLS-inspected as a
``dstdomain`` ACL to splice in the proxy's ``ssl_bump`` rules; and the direct list as comments.

PAC: ``FindProxyForURL`` returns DIRECT for what the cluster's noProxy sends direct (the entries, as Go matches them:
a name and its subdomains, '.name' subdomains only, an address or CIDR for an address literal only), PROXY for what
must traverse, and a final line the reviewer chooses (``pac_default``): by default the proxy too, as the cluster's Go
clients send everything noProxy does not name to the proxy, which then denies what it does not allow.
"""
from __future__ import annotations

import ipaddress
import re
from typing import Optional

from .addresses import PortRange
from .errors import EgressError
from .models import Citation, Entry, Requirement
from .proxy_export import ProxyExport, Row
from .targets.kubernetes.squid import allowlist_text, compile_acls, port_acl_name, role_acl_name

READINESS_ENTRY = "openshift-proxy-readiness"


class ProxyExportError(EgressError):
    """The proxy's list cannot be written in the form asked."""


def _ports(text: str) -> tuple[PortRange, ...]:
    out = []
    for part in text.split(","):
        start, _, end = part.partition("-")
        out.append(PortRange(int(start), int(end or start)))
    return tuple(out)


def _requirement(row: Row) -> Requirement:
    ids = row.entry_ids if row.entry_ids != ("proxyReadinessEndpoints",) else (READINESS_ENTRY,)
    return Requirement(role=row.role, destination=row.destination, kind=row.destination_kind, protocol=row.protocol, ports=_ports(row.ports),
                       level=row.level, purposes=("traverses the corporate proxy",), entry_ids=ids, citations=(), platforms=(),
                       sources=row.sources)


def _entries(catalog) -> dict:
    entries = {entry.id: entry for entry in catalog.entries}
    # the readiness endpoints are the stack's own setting, not a matrix row: an entry of their own names their ACL
    entries[READINESS_ENTRY] = Entry(id=READINESS_ENTRY, platform="openshift", feature="proxy-readiness", level="required", role="control-plane",
                                     destination="readiness", protocol="https", purpose="OpenShift Proxy readinessEndpoints",
                                     citation=Citation(source="openshift-egress-proxy", section="readinessEndpoints"))
    return entries


def _regex(path: str) -> str:
    return "^" + re.sub(r"([.\\^$|?*+()\[\]{}])", r"\\\1", path)


def squid_fragment(export: ProxyExport, catalog, role_sources: dict[str, tuple[str, ...]]) -> str:
    """acl / http_access lines for the corporate Squid: exactly what must traverse it, nothing else."""
    rows = [r for r in export.traverse if r.destination_kind in ("fqdn", "wildcard")]
    by_path = [r for r in rows if r.protocol == "http" and r.paths]
    plain = [r for r in rows if r not in by_path]
    left_out: list = []
    acls, not_proxied = compile_acls([_requirement(r) for r in plain], sorted({r.role for r in plain}), _entries(catalog), left_out)
    sources = {role: role_sources[role] for role in {a.role for a in acls} | {r.role for r in by_path}}
    for role, cidrs in sources.items():
        if not cidrs:
            raise ProxyExportError(f"{export.where + ': ' if export.where else ''}role {role} has no source CIDRs in stack '{export.stack}', so the proxy could not tell its requests "
                                   "from anyone else's. Fix: set the role's sources (e.g. egress-matrix:nodeSources)")
    head = [f"# egress-matrix: what must traverse the corporate proxy for stack '{export.stack}' (egress export --for proxy --format squid)",
            "# after the cluster's noProxy is applied. Put it before your own http_access lines (it ends by denying the cluster's other requests)."]
    body = allowlist_text(acls, sources) if acls else "\n# everything else\nhttp_access deny all\n"
    extra = []
    for number, row in enumerate(sorted(by_path, key=lambda r: (r.role, r.destination)), 1):
        name = f"paths-{number}-{row.role}"
        extra += [f"# {row.destination} http {row.ports} for {row.role}: paths {' '.join(row.paths)} (entries {', '.join(row.entry_ids)})",
                  f"acl {port_acl_name(row.ports)} port {row.ports.replace(',', ' ')}",
                  f"acl {role_acl_name(row.role)} src {' '.join(sources[row.role])}",
                  f"acl {name} dstdomain -n {row.destination if row.destination_kind == 'fqdn' else row.destination[1:]}",
                  f"acl {name}-url urlpath_regex {' '.join(_regex(p) for p in row.paths)}",
                  f"http_access allow !CONNECT http-scheme {role_acl_name(row.role)} {port_acl_name(row.ports)} {name} {name}-url"]
    if extra and not acls:
        extra = ["acl CONNECT method CONNECT", "acl http-scheme proto HTTP"] + extra
    # A corporate proxy serves everyone: deny the rest of the cluster's requests only, and let the proxy's own rules follow.
    denies = ["# everything else the cluster's sources ask for (your own http_access lines follow for other clients)",
              *(f"http_access deny {role_acl_name(role)}" for role in sorted(sources))]
    body = body.replace("\n# everything else\nhttp_access deny all\n", ("\n" + "\n".join(extra) + "\n" if extra else "") + "\n" + "\n".join(denies) + "\n")
    tail = []
    https_paths = [r for r in rows if r.protocol == "https" and r.paths]
    if https_paths:
        tail.append("# HTTPS paths (a proxy sees them only when it inspects TLS; enforce them in your ssl_bump rules):")
        tail += [f"#   {r.destination}: {' '.join(r.paths)} (entries {', '.join(r.entry_ids)})" for r in https_paths]
    exempt = sorted({(".%s" % r.destination[2:]) if r.destination.startswith("*.") else r.destination
                     for r in export.no_inspection if r.destination_kind in ("fqdn", "wildcard")})
    if exempt:
        tail.append("# must not be TLS-inspected (pinned certificate, client trusts only its own CA, ALPN): splice them, e.g.")
        tail.append("#   ssl_bump splice egress-no-tls-inspection")
        tail.append("acl egress-no-tls-inspection dstdomain -n " + " ".join(_no_overlap(exempt)))
    others = [r for r in export.traverse if r.destination_kind not in ("fqdn", "wildcard")]
    for note in not_proxied:
        tail.append(f"# not expressible as a name ACL: {note.requirement}: {note.reason}")
    for r in others:
        tail.append(f"# not expressible as a name ACL: {r.destination} {r.protocol}/{r.ports} ({r.destination_kind}); allow it by address")
    for note in left_out:
        tail.append(f"# left out ({note.level}): {note.requirement}: {note.reason}")
    if export.direct:
        tail.append("# direct, not through this proxy (the firewall must allow these):")
        tail += [f"#   {r.role} -> {r.destination} {r.protocol}/{r.ports}: {r.why}" for r in export.direct]
    return "\n".join(head) + "\n" + body + ("\n".join(tail) + "\n" if tail else "")


def _no_overlap(names: list[str]) -> list[str]:
    """dstdomain entries with none covered by another (Squid refuses overlapping entries in one ACL)."""
    dotted = {n[1:] for n in names if n.startswith(".")}

    def parents(name: str, strict: bool) -> set[str]:
        labels = name.split(".")
        return {".".join(labels[i:]) for i in range(1 if strict else 0, len(labels))}

    return [n for n in names if not (parents(n[1:], True) if n.startswith(".") else parents(n, False)) & dotted]


PAC_DEFAULTS = ("proxy", "direct")


def _pac_no_proxy(entry: str) -> Optional[str]:
    """The JavaScript condition Go's NO_PROXY matching gives ``entry`` (None for an entry Go ignores)."""
    entry = entry.strip().lower()
    if not entry:
        return None
    if entry == "*":
        return "true"
    try:
        network = ipaddress.ip_network(entry, strict=False) if "/" in entry else None
    except ValueError:
        network = None
    if network is not None:
        if network.version == 6:
            return None  # PAC's isInNet is IPv4 only; the comment above the line says so
        return f'(isIpV4(host) && isInNet(host, "{network.network_address}", "{network.netmask}"))'
    host, port = entry, ""
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
    try:
        ipaddress.ip_address(host.strip("[]"))
        condition = f'host == "{host.strip("[]")}"'
    except ValueError:
        if host.startswith("*."):
            host = host[1:]
        condition = f'dnsDomainIs(host, "{host}")' if host.startswith(".") else f'(host == "{host}" || dnsDomainIs(host, ".{host}"))'
    return f"({condition} && urlPort(url) == {port})" if port else condition


def pac_file(export: ProxyExport, default: str = "proxy") -> str:
    """``FindProxyForURL``: DIRECT for noProxy routes, PROXY for what traverses, then the chosen final line."""
    if default not in PAC_DEFAULTS:
        raise ProxyExportError(f"--pac-default '{default}' is not one of {', '.join(PAC_DEFAULTS)}. Fix: choose proxy (what the cluster's "
                               "clients do) or direct (the firewall decides)")
    setup = export.proxies[0]
    url = setup["httpsProxy"] or setup["httpProxy"]
    parts = re.match(r"^[a-z]+://([^/]+)", url)
    proxy = f"PROXY {parts.group(1) if parts else url}"
    lines = [f"// egress-matrix: proxy auto-config for stack '{export.stack}' (egress export --for proxy --format pac).",
             f"// DIRECT: what the cluster's {setup['kind']} noProxy sends direct, matched as its Go clients match it.",
             f"// {proxy}: what must traverse the proxy. Final line ({default}): everything else.",
             "function isIpV4(h) { return /^[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+$/.test(h); }",
             "function urlPort(u) { var m = /^[a-z]+:\\/\\/[^\\/:]+:([0-9]+)/.exec(u); return m ? parseInt(m[1], 10) : "
             "(u.substring(0, 6) == \"https:\" ? 443 : 80); }",
             "function FindProxyForURL(url, host) {",
             "  host = host.toLowerCase();",
             '  if (host == "localhost" || /^127\\./.test(host) || host == "::1") return "DIRECT";  // Go never proxies loopback']
    for entry in setup["noProxy"]:
        condition = _pac_no_proxy(entry)
        if condition is None:
            lines.append(f"  // noProxy '{entry}': not expressible in PAC (IPv6 CIDR or ignored by Go)")
        else:
            lines.append(f'  if ({condition}) return "DIRECT";  // noProxy {entry}')
    for row in _unique(export.traverse):
        if row.destination_kind == "fqdn":
            lines.append(f'  if (host == "{row.destination}") return "{proxy}";  // {" ".join(row.entry_ids)}')
        elif row.destination_kind == "wildcard" and row.destination.startswith("*.") and "*" not in row.destination[2:]:
            lines.append(f'  if (dnsDomainIs(host, "{row.destination[1:]}")) return "{proxy}";  // {" ".join(row.entry_ids)}')
        else:
            lines.append(f"  // {row.destination} ({row.destination_kind}): the final line decides it")
    final = proxy if default == "proxy" else "DIRECT"
    lines += [f'  return "{final}";  // the final line: reviewer\'s choice (--pac-default {default})', "}", ""]
    return "\n".join(lines)


def _unique(rows) -> list[Row]:
    seen, out = set(), []
    for row in rows:
        if row.destination not in seen:
            seen.add(row.destination)
            out.append(row)
    return out
