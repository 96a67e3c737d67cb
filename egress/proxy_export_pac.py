"""The proxy team's list as a PAC file (pure; issue 21, ``egress export --for proxy --format pac``).

``FindProxyForURL`` returns DIRECT for what the cluster's noProxy sends direct (the entries, as Go matches them:
a name and its subdomains, '.name' subdomains only, an address or CIDR for an address literal only), PROXY for what
must traverse, and a final line the reviewer chooses (``pac_default``): by default the proxy too, as the cluster's Go
clients send everything noProxy does not name to the proxy, which then denies what it does not allow.
"""
from __future__ import annotations

import ipaddress
import re
from typing import Optional

from .no_proxy_match import go_cidr
from .proxy_export import ProxyExport, ProxyExportError, Row


PAC_DEFAULTS = ("proxy", "direct")


def _pac_no_proxy(entry: str) -> Optional[str]:
    """The JavaScript condition Go's NO_PROXY matching gives ``entry`` (None for an entry Go ignores)."""
    entry = entry.strip().lower()
    if not entry:
        return None
    if entry == "*":
        return "true"
    network = go_cidr(entry)
    if network is None and "/" in entry:
        return None  # not address/prefix-length: Go reads it as a name no host has
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
             # Go's loopback test is on an address (net.IP.IsLoopback: 127.0.0.0/8, ::1), never a name: '127.example.com' is proxied
             '  if (host == "localhost" || (isIpV4(host) && /^127\\./.test(host)) || host == "::1") return "DIRECT";  // Go never proxies loopback']
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
