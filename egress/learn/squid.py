"""Squid's access.log in its native format, the default of ``access_log`` (and the egress proxy's squid.conf).

``logformat squid %ts.%03tu %6tr %>a %Ss/%03>Hs %<st %rm %ru %[un %Sh/%<a %mt`` (squid-cache.org/Doc/config/logformat,
read 2026-11-24; squid-cache/squid src/log/FormatSquidNative.cc writes the same ten fields): time, elapsed ms, client
address, result code/HTTP status, bytes, method, URL, user, hierarchy/peer, MIME type. A denied request's result code
is TCP_DENIED (status 403); ``CONNECT host:port`` is a tunnel (TLS), a plain-HTTP request logs its whole URL.
"""
from __future__ import annotations

from urllib.parse import urlsplit

from .flows import DOCS, Flow, LearnError, LogRead, check_ip, epoch, evidence, host_name, is_ip

FIELDS = 10
_FIX = f"give Squid's access.log in the native format (logformat squid, the default; {DOCS})"


def parse(text: str, shown: str) -> LogRead:
    read = LogRead(shown, "squid")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) < FIELDS:
            raise LearnError(shown, number, f"has {len(fields)} fields, Squid's native format has {FIELDS} (time elapsed client "
                             "code/status bytes method URL user hierarchy/peer type)", _FIX)
        time = epoch(fields[0])
        if time is None or "/" not in fields[3]:
            raise LearnError(shown, number, f"does not start like Squid's native format (time '{fields[0]}', code/status '{fields[3]}')", _FIX)
        read.records += 1
        if "DENIED" not in fields[3].split("/", 1)[0]:
            read.allowed += 1
            continue
        method, url = fields[5], fields[6]
        host, port, protocol = _target(method, url, shown, number)
        address = host if is_ip(host) else ""
        read.flows.append(Flow(
            file=shown, line=number, text=evidence(line), time=time,
            source=check_ip(fields[2], shown, number, "the client address", _FIX), host="" if address else host,
            address=check_ip(address, shown, number, "the URL's host", _FIX) if address else "", port=port, protocol=protocol,
        ))
    return read


def _target(method: str, url: str, shown: str, number: int) -> tuple[str, int, str]:
    """(host, port, protocol) of a logged request: CONNECT host:port is TLS; a URL names its scheme, host and port."""
    text = url if method != "CONNECT" else f"//{url}"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise LearnError(shown, number, f"URL '{url}' has no valid host and port", _FIX) from None
    host = host_name(parts.hostname or "")
    if not host:
        raise LearnError(shown, number, f"URL '{url}' names no host", _FIX)
    if method == "CONNECT":
        if port is None:
            raise LearnError(shown, number, f"CONNECT target '{url}' has no port", _FIX)
        return host, port, "https"
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise LearnError(shown, number, f"URL '{url}' is not http:// or https://", _FIX)
    return host, port or (443 if scheme == "https" else 80), scheme
