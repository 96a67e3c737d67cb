"""Squid's access.log in its native format, the default of ``access_log`` (and the egress proxy's squid.conf).

``logformat squid %ts.%03tu %6tr %>a %Ss/%03>Hs %<st %rm %ru %[un %Sh/%<a %mt`` (squid-cache.org/Doc/config/logformat,
read 2026-11-24; squid-cache/squid src/log/FormatSquidNative.cc writes the same ten fields): time, elapsed ms, client
address, result code/HTTP status, bytes, method, URL, user, hierarchy/peer, MIME type. A denied request's result code
is TCP_DENIED (status 403), or NONE_NONE/TAG_NONE with status 403 when Squid refuses before classifying the
transaction (egress/learn/squid_codes.py reads codes as Squid means them, as ``egress explain`` does); ``CONNECT host:port`` is a tunnel (TLS), a plain-HTTP request logs its whole URL.

``TCP_DENIED/407`` is no denial: it is the Proxy Authentication Required challenge (RFC 9110 §15.5.8) a proxy with
``proxy_auth`` answers to a request without credentials, and the client's retry with them is logged as its own line
(squid-cache/squid src/client_side_reply.cc buildReplyHeader adds the challenge header to a LOG_TCP_DENIED reply of
status 407). A denied URL that names no usable host, or a scheme the matrix has no row for (ftp://), is what some
client sent: counted as ignored with the reason, never fatal (one pod must not be able to stop learning from a log).
"""
from __future__ import annotations

from urllib.parse import urlsplit

from .squid_codes import squid_decision
from .flows import DOCS, Flow, LearnError, LogRead, Unusable, check_ip, epoch, evidence, is_ip, logged_host

FIELDS = 10
AUTH_CHALLENGE = "Squid's authentication challenge (TCP_DENIED/407): the client's retry with credentials is logged on its own line"
BAD_URL = "the denied request's URL or CONNECT target has no host and port that can be read"
NO_PORT = "the denied CONNECT target has no port"
SCHEME = "the denied request's URL scheme is not http:// or https:// (e.g. ftp://): the matrix has no row for it"
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
        code, _, status = fields[3].partition("/")
        if status == "407" and "DENIED" in code.upper():
            read.ignore(AUTH_CHALLENGE, number)
            continue
        if squid_decision(code, status)[0] != "deny":  # TAG_NONE/403 is a refusal too; NONE/503 is an error, not a denial
            read.allowed += 1
            continue
        method, url = fields[5], fields[6]
        try:
            host, port, protocol = _target(method, url)
        except Unusable as skip:
            read.ignore(skip.reason, number)
            continue
        address = host if is_ip(host) else ""
        read.flows.append(Flow(
            file=shown, line=number, text=evidence(line), time=time,
            source=check_ip(fields[2], shown, number, "the client address", _FIX), host="" if address else host,
            address=check_ip(address, shown, number, "the URL's host", _FIX) if address else "", port=port, protocol=protocol,
        ))
    return read


def _target(method: str, url: str) -> tuple[str, int, str]:
    """(host, port, protocol) of a logged request: CONNECT host:port is TLS; a URL names its scheme, host and port.
    Raises ``Unusable`` for what the client sent that names no host to learn from."""
    text = url if method != "CONNECT" else f"//{url}"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise Unusable(BAD_URL) from None
    if port == 0:
        raise Unusable(BAD_URL)
    if method != "CONNECT" and parts.scheme.lower() not in ("http", "https"):
        raise Unusable(SCHEME if parts.scheme else BAD_URL)
    host = logged_host(parts.hostname or "")
    if not host:
        raise Unusable(BAD_URL)
    if method == "CONNECT":
        if port is None:
            raise Unusable(NO_PORT)
        return host, port, "https"
    scheme = parts.scheme.lower()
    return host, port or (443 if scheme == "https" else 80), scheme
