"""The proxy team's list as a Squid access-control fragment (pure; issue 21, ``egress export --for proxy --format squid``).

The egress proxy's ACL compiler (``targets/kubernetes/squid.py``: ``compile_acls``) on the requirements that traverse
the corporate proxy, so the fragment has its properties: ``dstdomain -n`` without overlapping entries (FATAL in
Squid), subdomain wildcards as ``dstdom_regex``, port ACLs, source ACLs per role, CONNECT for HTTPS and proxied GETs
for plain HTTP. The text is written here, because the fragment goes *into someone else's* squid.conf:

- every ACL is named ``egress-<stack>-...`` and defined once, so none merges with the corporate file's own ACLs of the
  same name (Squid accumulates repeated ``acl`` lines: a corporate ``acl ports-443 port 443 8443`` would widen ours) or
  clashes with one of another type (FATAL);
- it ends with a ``deny`` per cluster source, never ``deny all``: every other client of the proxy reaches the rules after it;
- a destination whose requirement lists URL paths is allowed for those paths only (``urlpath_regex``, anchored at a
  segment boundary, dot-dot segments denied): for plain HTTP always, for HTTPS on the requests a TLS-inspecting proxy
  decrypts (``proxyInspectsTls``; otherwise the HTTPS paths are listed as comments);
- with ``proxyInspectsTls`` each HTTPS allow also allows its decrypted requests (a bumped request passes http_access
  again, as a GET with protocol HTTPS), and the hosts that must not be inspected are an ACL to splice in ``ssl_bump``;
- the direct list and what a name ACL cannot express follow as comments.
"""
from __future__ import annotations

import re

from .addresses import PortRange
from .models import Citation, Entry, Requirement
from .proxy_export import READINESS, ProxyExport, ProxyExportError, Row
from .targets.kubernetes.squid import SQUID_ACL_NAME_MAX, compile_acls, port_acl_name, role_acl_name, source_key, subdomain_regex

READINESS_ENTRY = "openshift-proxy-readiness"


def _ports(text: str) -> tuple[PortRange, ...]:
    out = []
    for part in text.split(","):
        start, _, end = part.partition("-")
        out.append(PortRange(int(start), int(end or start)))
    return tuple(out)


def _requirement(row: Row) -> Requirement:
    ids = row.entry_ids if row.entry_ids != (READINESS,) else (READINESS_ENTRY,)
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


# Squid matches urlpath_regex against the request's path and query as sent: it neither decodes '%2e' nor removes
# '..' segments, while the origin server does both (RFC 3986 5.2.4), so '/repo/../admin' would pass a '^/repo' prefix
# (measured against Squid 5.7 in review of issue 21). A path entry is therefore anchored at a segment boundary, and any
# dot-dot segment (plain or percent-encoded, '/' or '\\' separated) is denied on the path-restricted rules.
DOT_SEGMENT = r"(^|/|\\|%2f|%5c)(\.|%2e){2}(/|\\|%2f|%5c|;|\?|$)"


def _regex(path: str) -> str:
    """``/repo`` -> ``^/repo(/|\\?|$)`` (the path and what is under it, not ``/repository``); ``/pub/`` -> ``^/pub/``."""
    escaped = re.sub(r"([.\\^$|?*+()\[\]{}])", r"\\\1", path)
    return "^" + escaped + ("" if path.endswith("/") else r"(/|\?|$)")


def _check_path(row: Row, path: str, where: str) -> None:
    if not path.startswith("/") or any(c.isspace() or ord(c) < 32 or c in "\"#" for c in path):
        whose = "egress-matrix:proxyReadinessEndpoints" if row.entry_ids == (READINESS,) else f"entries {', '.join(row.entry_ids)}"
        raise ProxyExportError(f"{where + ': ' if where else ''}the URL path {path!r} of {row.destination} ({whose}) "
                               "cannot be written into squid.conf: it must start with '/' and hold no space, quote, '#' or control "
                               "character. Fix: percent-encode those characters in the URL (e.g. %20 for a space)")


def _wrap(directive: str, values, width: int = 100) -> list[str]:
    """``acl NAME TYPE v1 v2 ...`` over lines of about ``width`` characters (Squid accumulates repeated acl lines)."""
    lines: list[list[str]] = []
    for value in values:
        if not lines or len(directive) + sum(len(v) + 1 for v in lines[-1]) + len(value) > width:
            lines.append([])
        lines[-1].append(value)
    return [" ".join([directive, *line]) for line in lines]


class _Names:
    """Every ACL of the fragment, prefixed ``egress-<stack>-`` so none merges with or clashes with the corporate squid.conf's
    own ACLs (Squid accumulates repeated ``acl`` lines of one name and type, and refuses one name with two types)."""

    def __init__(self, stack: str, where: str):
        self.prefix, self.where = f"egress-{stack}-", where

    def __call__(self, name: str) -> str:
        full = self.prefix + name
        if len(full) > SQUID_ACL_NAME_MAX:
            raise ProxyExportError(f"{self.where + ': ' if self.where else ''}the fragment's ACL '{full}' is {len(full)} characters; Squid "
                                   f"refuses ACL names over {SQUID_ACL_NAME_MAX}. Fix: use a shorter stack name (the prefix "
                                   f"'{self.prefix}' keeps the fragment's ACLs apart from your own), or a shorter catalog, feature or group name")
        return full


def _path_rows(export: ProxyExport, rows: list[Row]) -> list[Row]:
    """The rows whose paths the proxy checks: plain HTTP, and HTTPS when the proxy inspects TLS (on the decrypted
    requests) and the host may be inspected."""
    return [r for r in rows if r.paths and (r.protocol == "http" or (r.protocol == "https" and export.inspects_tls
                                                                      and r.tls_inspection == "allowed"))]


def squid_fragment(export: ProxyExport, catalog, role_sources: dict[str, tuple[str, ...]]) -> str:
    """acl / http_access lines for the corporate Squid: exactly what must traverse it, nothing else; its own rules follow."""
    rows = [r for r in export.traverse if r.destination_kind in ("fqdn", "wildcard")]
    by_path = _path_rows(export, rows)
    plain = [r for r in rows if r not in by_path]
    left_out: list = []
    acls, not_proxied = compile_acls([_requirement(r) for r in plain], sorted({r.role for r in plain}), _entries(catalog), left_out)
    sources = {role: role_sources[role] for role in sorted({a.role for a in acls} | {r.role for r in by_path}, key=source_key)}
    for role, cidrs in sources.items():
        if not cidrs:
            raise ProxyExportError(f"{export.where + ': ' if export.where else ''}role {role} has no source CIDRs in stack '{export.stack}', so the proxy could not tell its requests "
                                   "from anyone else's. Fix: set the role's sources (e.g. egress-matrix:nodeSources)")
    for row in by_path:
        for path in row.paths:
            _check_path(row, path, export.where)
    name = _Names(export.stack, export.where)
    head = [f"# egress-matrix: what must traverse the corporate proxy for stack '{export.stack}' (egress export --for proxy --format squid)",
            "# after the cluster's noProxy is applied. Put it before your own http_access lines: it allows the cluster's sources",
            "# what they need, denies those sources the rest, and leaves every other client to the rules that follow it.",
            f"# Every ACL is named '{name.prefix}...', apart from yours."]
    body = _body(export, acls, by_path, sources, name)
    return "\n".join(head) + "\n" + "\n".join(body) + "\n" + _tail(export, rows, acls, not_proxied, left_out, name)


def _body(export: ProxyExport, acls, by_path: list[Row], sources: dict, name: _Names) -> list[str]:
    """The ACLs (each defined once) and the http_access lines: allows, then a deny per cluster source, never 'deny all'."""
    connect, http, https, dots = name("CONNECT"), name("http"), name("https"), name("dot-segment")
    # A bumped (TLS-inspected) request passes http_access again as a GET with protocol HTTPS ("Squid handles the decrypted
    # stream as https:// inbound traffic": Amos Jeffries, squid-dev 2013-03, squid-cache.org/mail-archive/squid-dev/201303/0078.html),
    # so with proxyInspectsTls every HTTPS allow also allows its decrypted requests.
    decrypted = export.inspects_tls and (any(a.protocol == "https" for a in acls) or any(r.protocol == "https" for r in by_path))
    lines = [f"acl {connect} method CONNECT", f"acl {http} proto HTTP", *([f"acl {https} proto HTTPS"] if decrypted else []),
             *([f"acl {dots} urlpath_regex -i {DOT_SEGMENT}"] if by_path else [])]
    for role, cidrs in sources.items():
        lines += _wrap(f"acl {name(role_acl_name(role))} src", cidrs)
    for ports in sorted({a.ports for a in acls} | {r.ports for r in by_path}, key=lambda p: (len(p), p)):
        lines.append(f"acl {name(port_acl_name(ports))} port {ports.replace(',', ' ')}")
    for acl in acls:
        src, port = name(role_acl_name(acl.role)), name(port_acl_name(acl.ports))
        lines += ["", f"# {acl.name}: {acl.role} -> {acl.protocol.upper()} {acl.ports}", *_wrap("#   entries:", acl.entry_ids)]
        matchers = []
        if acl.domains:
            matchers.append(name(acl.name))
            lines += _wrap(f"acl {name(acl.name)} dstdomain -n", acl.domains)
        if acl.subdomains:
            matchers.append(name(acl.regex_name))
            lines += _wrap(f"acl {name(acl.regex_name)} dstdom_regex -n -i", [subdomain_regex(w) for w in acl.subdomains])
        for matcher in matchers:
            if acl.protocol == "https":
                lines.append(f"http_access allow {connect} {src} {port} {matcher}")
                if decrypted:
                    lines.append(f"http_access allow !{connect} {https} {src} {port} {matcher}")
            else:
                lines.append(f"http_access allow !{connect} {http} {src} {port} {matcher}")
    for number, row in enumerate(sorted(by_path, key=lambda r: (r.role, r.destination, r.protocol, r.ports)), 1):
        host, url = name(f"paths-{number}-{row.role}"), name(f"paths-{number}-{row.role}-url")
        src, port = name(role_acl_name(row.role)), name(port_acl_name(row.ports))
        lines += ["", f"# {row.destination} {row.protocol} {row.ports} for {row.role}: paths {' '.join(row.paths)} (entries {', '.join(row.entry_ids)})",
                  (f"acl {host} dstdomain -n {row.destination}" if row.destination_kind == "fqdn" else
                   f"acl {host} dstdom_regex -n -i {subdomain_regex(row.destination)}"),
                  f"acl {url} urlpath_regex {' '.join(_regex(p) for p in row.paths)}"]
        if row.protocol == "http":
            lines.append(f"http_access allow !{connect} {http} {src} {port} {host} {url} !{dots}")
        else:  # the tunnel opens to the host; the paths are checked on the requests decrypted inside it
            lines += [f"http_access allow {connect} {src} {port} {host}", f"http_access allow !{connect} {https} {src} {port} {host} {url} !{dots}"]
    lines += ["", "# everything else the cluster's sources ask for; your own http_access lines follow for every other client",
              *(f"http_access deny {name(role_acl_name(role))}" for role in sources)]
    return lines


def _tail(export: ProxyExport, rows: list[Row], acls, not_proxied, left_out, name: _Names) -> str:
    """Comments (and the no-inspection ACL) after the access lines: what the proxy cannot match, what goes direct."""
    tail = []
    https_paths = [r for r in rows if r.protocol == "https" and r.paths and r not in _path_rows(export, rows)]
    if https_paths:
        tail.append("# HTTPS paths (a proxy sees them only when it inspects TLS, which the stack says this one does not: proxyInspectsTls):")
        tail += [f"#   {r.destination}: {' '.join(r.paths)} (entries {', '.join(r.entry_ids)})" for r in https_paths]
    exempt = sorted({(".%s" % r.destination[2:]) if r.destination.startswith("*.") else r.destination
                     for r in export.no_inspection if r.destination_kind in ("fqdn", "wildcard")})
    if exempt:
        tail.append("# must not be TLS-inspected (pinned certificate, client trusts only its own CA, ALPN): splice them, e.g.")
        tail.append(f"#   ssl_bump splice {name('no-tls-inspection')}")
        tail.append(f"acl {name('no-tls-inspection')} dstdomain -n " + " ".join(_no_overlap(exempt)))
    for note in not_proxied:
        tail.append(f"# not expressible as a name ACL: {note.requirement}: {note.reason}")
    for r in export.traverse:
        if r.destination_kind not in ("fqdn", "wildcard"):
            tail.append(f"# not expressible as a name ACL: {r.destination} {r.protocol}/{r.ports} ({r.destination_kind}); allow it by address")
    for note in left_out:
        tail.append(f"# left out ({note.level}): {note.requirement}: {note.reason}")
    if export.direct:
        tail.append("# direct, not through this proxy (the firewall must allow these):")
        tail += [f"#   {r.role} -> {r.destination} {r.protocol}/{r.ports}: {r.why}" for r in export.direct]
    return "\n".join(tail) + "\n" if tail else ""


def _no_overlap(names: list[str]) -> list[str]:
    """dstdomain entries with none covered by another (Squid refuses overlapping entries in one ACL)."""
    dotted = {n[1:] for n in names if n.startswith(".")}

    def parents(name: str, strict: bool) -> set[str]:
        labels = name.split(".")
        return {".".join(labels[i:]) for i in range(1 if strict else 0, len(labels))}

    return [n for n in names if not (parents(n[1:], True) if n.startswith(".") else parents(n, False)) & dotted]
