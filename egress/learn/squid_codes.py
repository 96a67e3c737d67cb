"""What a Squid access.log result code says happened, as Squid means it (``egress explain`` of a Squid line).

Sources: the squid-cache.org wiki, SquidFaq/SquidLogs "Squid result codes" (squid-cache/squid-cache.github.io
SquidFaq/SquidLogs.md at fa002743e99fa778dec182ff1f49105a308bbde8): NONE is "Squid delivered an unusual response or no
response at all. Seen with cachemgr requests and errors, usually when the transaction fails before being classified
... Also seen with responses to CONNECT requests", DENIED is "The request was denied by access controls"; squid-cache/
squid src/LogTags.cc (at 0098e8f6303b7939ad88956452c66b847c7cb18c) writes the code: LOG_TAG_NONE as NONE_NONE since
Squid 5 (TAG_NONE before; older releases NONE alone); errors/templates/ERR_* are Squid's error pages (a logformat may
log their name with %err_code).
"""
from __future__ import annotations

from .lines_text import printable


def squid_decision(code: str, status: str) -> tuple[str, str]:
    """(action, what the code means when it is not plain) for Squid's result code and HTTP status, by what Squid means
    (squid-cache.org wiki SquidFaq/SquidLogs, "Squid result codes"; squid-cache/squid src/LogTags.cc writes them):
    a DENIED tag (TCP_DENIED, TCP_DENIED_REPLY, UDP_DENIED) is "denied by access controls". NONE (Squid 5+ NONE_NONE,
    3.x/4 TAG_NONE, older NONE) is "an unusual response or no response at all", an error before the transaction was
    classified: its status says what Squid answered: 403 is its access-denied page (an http_access or ssl_bump refusal
    at a bumping step), 2xx/3xx an answer (a CONNECT accepted), anything else (000, 400, 503, ...) an error with no
    access decision (the server could not be reached, a request Squid could not read). A logformat that writes the
    error page's name (``%err_code``: errors/templates/ERR_*) is judged the same way: ERR_ACCESS_DENIED and the other
    *_DENIED pages refuse, ERR_CACHE_ACCESS_DENIED asks for credentials (the 407 challenge), the rest are errors."""
    upper = code.upper()
    if upper.startswith("ERR_"):
        if upper == "ERR_CACHE_ACCESS_DENIED":
            return "", "Squid's authentication page: credentials asked for"
        if upper.endswith("_DENIED"):
            return "deny", ""
        return "", f"Squid's error page {printable(code)}: an error, no access decision"
    tags = upper.split("_")
    if "DENIED" in tags:
        return "deny", ""
    if tags[0] in ("NONE", "TAG"):
        if status == "403":
            return "deny", "Squid refused it before classifying the transaction: its access-denied answer"
        if status[:1] in ("2", "3"):
            return "allow", ""
        return "", "Squid answered with an error before classifying the transaction: no access decision"
    return "allow", ""
