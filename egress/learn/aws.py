"""AWS Network Firewall alert logs: one JSON record per line, as the firewall writes them to S3 (gzip objects) or as
CloudWatch Logs holds them (one record per log event; docs/LEARN.md shows how to save them as lines).

Record shape (docs.aws.amazon.com/network-firewall/latest/developerguide/firewall-logging-contents.html, read
2026-11-24): ``firewall_name``, ``availability_zone``, ``event_timestamp`` (epoch seconds), ``event``: Suricata's EVE
JSON, whose alert events carry ``event_type: alert``, ``src_ip``, ``dest_ip``, ``dest_port``, ``proto``, ``app_proto``,
``alert.action`` ('allowed' or 'blocked'), and for TLS ``tls.sni``, for HTTP ``http.hostname`` (Suricata's EVE JSON
format, OISF/suricata doc/userguide/output/eve/eve-json-format.rst). Flow (``netflow``) and TLS-engine (``tls``) events
are not alerts: counted as ignored. The SNI and Host are what the client sent: an alert naming no usable host (``*``,
``*.x``, markup) is counted as ignored with the reason (flows.logged_host), never proposed.
"""
from __future__ import annotations

import json
from typing import Any

from .flows import DOCS, Flow, LearnError, LogRead, Unusable, check_ip, check_port, epoch, evidence, is_ip, logged_host, parse_time

NOT_ALERT = "not an alert event (flow and TLS-engine events say nothing about a denial)"
NO_ROW = "a protocol other than TCP or UDP (ICMP...): the matrix has no row for it"
_FIX = f"give the alert log as Network Firewall writes it, one JSON record per line ({DOCS})"


def parse(text: str, shown: str) -> LogRead:
    read = LogRead(shown, "aws-nfw")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LearnError(shown, number, f"is not a whole JSON record ({exc.msg} at column {exc.colno}; a cut line?)", _FIX) from None
        if not isinstance(record, dict) or not isinstance(record.get("event"), dict):
            raise LearnError(shown, number, "is not a Network Firewall log record (no 'event' object)", _FIX)
        read.records += 1
        event: dict[str, Any] = record["event"]
        alert = event.get("alert")
        if event.get("event_type") != "alert" or not isinstance(alert, dict):
            read.ignore(NOT_ALERT, number)
            continue
        action = str(alert.get("action", ""))
        if action == "allowed":
            read.allowed += 1
            continue
        if action != "blocked":
            raise LearnError(shown, number, f"event.alert.action is '{action}', not 'allowed' or 'blocked'", _FIX)
        for key in ("src_ip", "dest_ip", "dest_port", "proto"):
            if key not in event:
                raise LearnError(shown, number, f"the alert has no event.{key}", _FIX)
        protocol = _protocol(event)
        if protocol is None:
            read.ignore(NO_ROW, number)
            continue
        try:
            host = _host(event)
        except Unusable as skip:
            read.ignore(skip.reason, number)
            continue
        fix = f"correct the line; {_FIX}"
        time = parse_time(str(event.get("timestamp", ""))) or epoch(record.get("event_timestamp"))
        read.flows.append(Flow(
            file=shown, line=number, text=evidence(line), time=time,
            source=check_ip(str(event["src_ip"]), shown, number, "event.src_ip", fix), host=host,
            address=check_ip(str(event["dest_ip"]), shown, number, "event.dest_ip", fix),
            port=check_port(event["dest_port"], shown, number, "event.dest_port", fix), protocol=protocol,
        ))
    return read


def _section(event: dict[str, Any], name: str) -> dict[str, Any]:
    value = event.get(name)
    return value if isinstance(value, dict) else {}


def _host(event: dict[str, Any]) -> str:
    """The name the client sent ('' for none, or an address: dest_ip is the address)."""
    host = logged_host(str(_section(event, "tls").get("sni") or _section(event, "http").get("hostname") or ""))
    return "" if is_ip(host) else host


def _protocol(event: dict[str, Any]) -> str | None:
    """https for TLS, http for plain HTTP (what the stateful engine recognised), else the transport; None for ICMP etc."""
    app = str(event.get("app_proto", "")).lower()
    if app == "tls" or _section(event, "tls").get("sni"):
        return "https"
    if app == "http" or _section(event, "http").get("hostname"):
        return "http"
    return {"TCP": "tcp", "UDP": "udp"}.get(str(event.get("proto", "")).upper())
