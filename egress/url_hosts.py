"""The host of every URL-valued stack setting, checked as a host (a DNS name or an IP literal) before anything uses it.

A proxy URL lands in HTTP_PROXY and the Proxy object, a readiness endpoint in the proxy team's Squid, PAC and CSV lists,
an OpenStack or BMC URL in firewall rules: a ',' there starts another list item (``http://a.example.com,.com:3128``),
white space or a trailing newline breaks the line it is written on, a '#' cuts the host and port off (what follows is
a fragment, never sent), and an IPv6 zone ('%eth0') means nothing off the host. Only ASCII: a look-alike host
(Cyrillic 'а') is refused with its code point named.
"""
from __future__ import annotations

import ipaddress
import re

from .addresses import AddressError, parse_hostname, parse_ip

_PORT = re.compile(r"[0-9]{1,5}")


def check_url_host(url: str, bare: bool = False) -> str:
    """The host of ``url`` (``scheme://[userinfo@]host[:port][/path]``; with ``bare``, a ``host[:port]`` without scheme
    too), raising AddressError for anything a client would not read as one host. A URL without '//' is left to the
    setting's own check (it says what a URL of that setting looks like). The messages quote the host, never the URL (it
    may carry a user and password); the path is the setting's own check's (egress export says what a proxy can hold)."""
    if "//" not in url and not bare:
        return ""
    if "#" in url:
        raise AddressError("the URL holds a '#': what follows it is a fragment, never sent (in the host part it cuts off the host and port)",
                           "remove the '#' and what follows it")
    authority = url.split("//", 1)[1] if "//" in url else url
    for stop in "/?":
        authority = authority.split(stop, 1)[0]
    if any(c.isspace() or not c.isprintable() for c in authority):
        raise AddressError("the URL's host part holds white space or a control character (a space, a tab, a trailing line break)",
                           "remove it: a host is written without any")
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        literal, close, rest = hostport[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            raise AddressError(f"'{hostport}' is not [IPv6 address] or [IPv6 address]:port", "write e.g. 'http://[2001:db8::5]:3128'")
        host, port = literal, rest[1:]
        if not isinstance(parse_ip(host), ipaddress.IPv6Address):
            raise AddressError(f"'[{host}]' brackets an IPv4 address", f"write it without brackets: '{host}'")
    else:
        host, sep, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "")
        if ":" in host:
            raise AddressError(f"'{hostport}' is an IPv6 address without brackets", "write it in brackets, e.g. 'http://[2001:db8::5]:3128'")
        parse_hostname(host)  # a DNS name (a-z, 0-9, inner '-') or an IPv4 address: no ',', '%', '_' or look-alike letters
    if (port or hostport.endswith(":")) and (not _PORT.fullmatch(port) or not 1 <= int(port) <= 65535):
        raise AddressError(f"the port of '{hostport}' is not a number from 1 to 65535", "write e.g. ':3128', or leave the port out")
    return host
