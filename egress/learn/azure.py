"""Azure Firewall deny logs: the resource-specific tables AZFWApplicationRule and AZFWNetworkRule, as a team exports them.

Two exports are read (docs/LEARN.md has the KQL query that produces either):

- CSV, from the Log Analytics query editor's Export (a header row of column names; the portal may add ' [UTC]' to a
  datetime column's name, which is dropped);
- JSON, what ``az monitor log-analytics query`` prints: a list of objects, one per row, ``TableName`` plus every
  column, each value turned into text (``str(value)``: a port is "443", a missing value "None"). Read from
  Azure/azure-cli-extensions src/log-analytics/azext_loganalytics/_format.py (transform_query_output) at b16e96c0.

Columns (Azure Monitor table reference, learn.microsoft.com/azure/azure-monitor/reference/tables/azfwapplicationrule
and .../azfwnetworkrule, read 2026-11-24): TimeGenerated, Action ('Allow' / 'Deny'), SourceIp, DestinationPort,
Protocol (application rules HTTP / HTTPS, network rules TCP / UDP), Fqdn (application rules), DestinationIp (network
rules), Type (the table's name, when the query is a union of both).
"""
from __future__ import annotations

import csv
import json
from typing import Any, Iterator

from .flows import DOCS, Flow, LearnError, LogRead, Unusable, check_ip, check_port, evidence, is_ip, logged_host, parse_time

NEEDED = ("TimeGenerated", "Action", "SourceIp", "DestinationPort", "Protocol")
DESTINATIONS = ("Fqdn", "DestinationIp")
_FIX = f"export with the KQL query in {DOCS} (it projects {', '.join(NEEDED)}, Fqdn and DestinationIp)"
NOT_DENY = "an Action other than Allow or Deny"
NO_ROW = "a protocol other than HTTP, HTTPS, TCP or UDP (ICMP...): the matrix has no row for it"
_PROTOCOLS = {"http": "http", "https": "https", "tcp": "tcp", "udp": "udp"}


def parse(text: str, shown: str) -> LogRead:
    """A CSV export or ``az monitor log-analytics query`` JSON, told apart by the first character."""
    if text.lstrip().startswith("["):
        return _read(_json_rows(text, shown), shown, "azure-json")
    return _read(_csv_rows(text, shown), shown, "azure-csv")


def _csv_rows(text: str, shown: str) -> Iterator[tuple[int, dict[str, str], str]]:
    lines = text.splitlines()
    reader = csv.reader(lines)
    try:
        header = [name.strip().removesuffix(" [UTC]") for name in next(reader)]
    except csv.Error as exc:
        raise LearnError(shown, 1, f"is not CSV ({exc})", _FIX) from None
    _check_columns(header, shown, 1, "the CSV header")
    try:
        for row in reader:
            number = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise LearnError(shown, number, f"has {len(row)} fields where the header names {len(header)} columns (a cut or "
                                 "hand-edited line?)", f"export the whole result again; {_FIX}")
            yield number, dict(zip(header, row)), lines[number - 1]
    except csv.Error as exc:
        raise LearnError(shown, reader.line_num, f"is not valid CSV ({exc})", _FIX) from None


def _json_rows(text: str, shown: str) -> Iterator[tuple[int, dict[str, str], str]]:
    decoder = json.JSONDecoder()
    start = text.index("[") + 1
    while True:
        while start < len(text) and text[start] in " \t\r\n,":
            start += 1
        if start < len(text) and text[start] == "]":
            return
        line = text.count("\n", 0, start) + 1
        try:
            row, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            at = text.count("\n", 0, exc.pos) + 1
            raise LearnError(shown, at, f"is not the JSON 'az monitor log-analytics query' prints ({exc.msg}; the file is cut?)",
                             f"run the query again with --output json and keep the whole output; {_FIX}") from None
        if not isinstance(row, dict):
            raise LearnError(shown, line, f"holds {type(row).__name__} '{str(row)[:60]}' where a row object belongs",
                             f"pass the output of 'az monitor log-analytics query' unchanged; {_FIX}")
        _check_columns(list(row), shown, line, "the row")
        yield line, {key: "" if value is None else str(value) for key, value in row.items()}, json.dumps(row, separators=(",", ":"))
        start = end


def _check_columns(columns: list[str], shown: str, line: int, what: str) -> None:
    missing = [name for name in NEEDED if name not in columns]
    if not any(name in columns for name in DESTINATIONS):
        missing.append("Fqdn or DestinationIp")
    if missing:
        raise LearnError(shown, line, f"{what} has no column {', '.join(missing)} (it has: {', '.join(columns) or 'none'})", _FIX)


def _value(row: dict[str, Any], name: str) -> str:
    value = str(row.get(name) or "").strip()
    return "" if value in ("None", "null") else value  # az prints a missing (null) value as 'None'


def _read(rows: Iterator[tuple[int, dict[str, str], str]], shown: str, fmt: str) -> LogRead:
    read = LogRead(shown, fmt)
    for line, row, raw in rows:
        read.records += 1
        action = _value(row, "Action").lower()
        if action == "allow":
            read.allowed += 1
            continue
        protocol = _PROTOCOLS.get(_value(row, "Protocol").lower())
        if action != "deny" or protocol is None:  # e.g. an ICMP network rule: no matrix row is about it
            read.ignore(NOT_DENY if action != "deny" else NO_ROW, line)
            continue
        fix = f"correct the line or export it again; {_FIX}"
        try:
            fqdn = logged_host(_value(row, "Fqdn"))  # the SNI or Host the client sent
        except Unusable as skip:
            read.ignore(skip.reason, line)
            continue
        address = _value(row, "DestinationIp")
        if fqdn and is_ip(fqdn):
            fqdn, address = "", fqdn
        if not fqdn and not address:
            raise LearnError(shown, line, "a denied row has neither Fqdn nor DestinationIp", fix)
        time_text = _value(row, "TimeGenerated")
        time = parse_time(time_text)
        if time is None:
            raise LearnError(shown, line, f"TimeGenerated '{time_text}' is not a time", f"export TimeGenerated as ISO 8601; {_FIX}")
        read.flows.append(Flow(
            file=shown, line=line, text=evidence(raw), time=time,
            source=check_ip(_value(row, "SourceIp"), shown, line, "SourceIp", fix),
            host=fqdn, address=check_ip(address, shown, line, "DestinationIp", fix) if address else "",
            port=check_port(_value(row, "DestinationPort"), shown, line, "DestinationPort", fix), protocol=protocol,
        ))
    return read
