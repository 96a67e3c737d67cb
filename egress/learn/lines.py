"""One log line of any engine ``egress learn`` reads, as ``egress explain`` takes it: what the log says happened to which
flow, allowed lines included (``learn`` reads whole files and keeps only the denials; the field rules are its own).

    engine_of(text) -> 'azure' | 'aws-nfw' | 'squid' | None      (None: not a log line; a DESTINATION[:PORT], say)
    parse_line(text) -> LogLine                                   (LineError: a line none of the engines writes so)
    csv_header(text) -> column names | None; parse_csv_row(text, header) -> LogLine   (an Azure CSV export on stdin)

Shapes read, one record per line (tests/data/logs/README.md cites where each is documented):

- Azure Firewall, resource-specific: the record a diagnostic setting streams to a storage account or event hub,
  ``{"time", "resourceId", "category": "AZFWApplicationRule"|"AZFWNetworkRule", "properties": {Action, SourceIp,
  SourcePort, Fqdn, DestinationIp, DestinationPort, Protocol, Policy, RuleCollectionGroup, RuleCollection, Rule,
  ActionReason, ...}}``; or a Log Analytics row of those tables as one JSON object (an element of ``az monitor
  log-analytics query`` output: the same column names at the top); or, after the header row of the portal's CSV export,
  its rows.
- Azure Firewall, legacy Azure Diagnostics: ``{"category": "AzureFirewallApplicationRule"|"AzureFirewallNetworkRule",
  "properties": {"msg": ...}}``, an AzureDiagnostics row with ``msg_s``, or the message alone:
  ``HTTPS request from 10.0.0.4:5000 to x:443. Action: Deny. No rule matched. Proceeding with default action``.
- AWS Network Firewall: an alert log record (``{"firewall_name", ..., "event": {EVE alert}}``) or the EVE event alone.
- Squid: a native-format access.log line.
"""
from __future__ import annotations

import csv
import datetime
import json
import re
from dataclasses import dataclass
from typing import Any, Optional

from ..errors import EgressError
from . import aws, azure, squid
from .flows import Unusable, canonical_ip, epoch, evidence, is_ip, logged_host, parse_time
from .formats import _SQUID
from .lines_text import printable
from .squid_codes import squid_decision

AZURE_RECORDS = ("AZFWApplicationRule", "AZFWNetworkRule")
AZURE_LEGACY = ("AzureFirewallApplicationRule", "AzureFirewallNetworkRule")
NO_DESTINATION = "the line names no destination (e.g. Azure's 'SNI TLS extension was missing')"
_MSG = re.compile(r"^(?P<proto>[A-Za-z]+)(?:\s+Type=\d+)?\s+request\s+from\s+(?P<src>\[[^\]]+\]|[^\s:]+)(?::(?P<sport>\d+))?"
                  r"(?:\s+to\s+(?P<dst>\[[^\]]+\]|[^\s:]+?)(?::(?P<dport>\d+))?)?\.(?:\s+Url:\s+(?P<url>\S+?)\.)?"
                  r"\s+Action:\s+(?P<action>[A-Za-z]+)\.?\s*(?P<rest>.*)$", re.DOTALL)
# What Azure's legacy message says after 'Action:'; an IDPS 'drop' is a denial, an 'alert' lets the flow pass.
_MSG_ACTIONS = {"allow": "allow", "deny": "deny", "drop": "deny", "alert": "allow"}
_MSG_KEYS = ("Policy", "Rule Collection Group", "Rule Collection", "Rule", "Reason", "ThreatIntel", "Web Category", "Signature", "IDS")
_FIX = ("pass one log line as the engine writes it: an Azure Firewall record (AZFWApplicationRule / AZFWNetworkRule JSON, or the "
        "legacy 'HTTPS request from ... Action: Deny' message), a Network Firewall alert record, or a Squid access.log line")


class LineError(EgressError):
    """A line ``egress explain`` cannot read: ``problem`` and ``fix`` name the field and value (never a traceback; the
    problem quotes the log, so its control characters are escaped)."""

    def __init__(self, problem: str, fix: str = _FIX):
        problem = printable(problem)
        super().__init__(f"{problem}. Fix: {fix}")
        self.problem, self.fix = problem, fix


@dataclass(frozen=True)
class LogLine:
    """One log line: the engine's decision (``action`` 'allow', 'deny', or '' for a line that records none) on one flow.
    ``ignored`` says why a line names no flow to explain ('' when it does)."""

    engine: str  # azure | aws-nfw | squid
    shape: str  # which of the engine's forms, e.g. 'AZFWApplicationRule record', 'legacy message', 'alert record'
    action: str
    said: str  # the decision as the log words it: 'Deny (Default Action)', 'blocked', 'TCP_DENIED/403'
    rule: str  # the rule the log names ('' when it names none)
    source: str
    host: str
    address: str
    port: Optional[int]
    protocol: str  # http, https, tcp, udp; '' for one the matrix has no row for
    time: Optional[datetime.datetime]
    text: str  # the line as evidence: one line, credentials masked, long lines cut
    ignored: str = ""

    @property
    def destination(self) -> str:
        return self.host or self.address


def _evidence(text: str) -> str:
    return printable(evidence(text))


def engine_of(text: str) -> Optional[str]:
    """Which engine wrote ``text`` (from its shape alone), or None when it is no log line."""
    head = text.strip()
    if head.startswith("{"):
        return "aws-nfw" if '"event' in head else "azure"  # a JSON record of either; parse_line tells them apart for sure
    if _MSG.match(head):
        return "azure"
    if _SQUID.match(head + " "):
        return "squid"
    return None


def parse_line(text: str) -> LogLine:
    head = text.strip()
    if not head:
        raise LineError("the line is empty")
    if head.startswith("{"):
        return _json_line(head)
    if _MSG.match(head):
        return _message(head, head, "legacy message")
    if _SQUID.match(head + " "):
        return _squid(head)
    raise LineError(f"'{evidence(head)[:80]}' is no log line of Azure Firewall, Network Firewall or Squid")


def csv_header(text: str) -> Optional[list[str]]:
    """The column names when ``text`` is the header row of an Azure Firewall CSV export (learn's columns), else None."""
    if text.lstrip().startswith("{") or "SourceIp" not in text:
        return None
    try:
        names = [name.strip().removesuffix(" [UTC]") for name in next(csv.reader([text.lstrip("\ufeff")]))]
    except (csv.Error, StopIteration):
        return None
    return names if all(n in names for n in azure.NEEDED) and any(n in names for n in azure.DESTINATIONS) else None


def parse_csv_row(text: str, header: list[str]) -> LogLine:
    """One row of an Azure Firewall CSV export under ``header`` (the lines after a header row on stdin)."""
    try:
        row = next(csv.reader([text]))
    except (csv.Error, StopIteration) as exc:
        raise LineError(f"the CSV row cannot be read ({exc})", "pass the export's rows unchanged after its header row") from None
    if len(row) != len(header):
        raise LineError(f"the CSV row has {len(row)} fields where the header names {len(header)} columns (a cut or hand-edited line?)",
                        "pass the export's rows unchanged after its header row")
    return _azure_row(dict(zip(header, row)), text, "CSV export row", "")


def _json_line(head: str) -> LogLine:
    try:
        record = json.loads(head)
    except json.JSONDecodeError as exc:
        raise LineError(f"the JSON record is not whole ({exc.msg} at column {exc.colno}; a cut line?)") from None
    if not isinstance(record, dict):
        raise LineError("the JSON line is not a record (an object)")
    properties = record.get("properties")
    category = str(record.get("category") or record.get("Category") or "")
    if isinstance(record.get("event"), dict):
        return _nfw(record, record["event"], head, "alert record")
    if "event_type" in record:
        return _nfw({}, record, head, "EVE event")
    if isinstance(properties, dict) and category in AZURE_RECORDS:
        return _azure_row(properties, head, f"{category} record", str(record.get("time", "")))
    if isinstance(properties, dict) and category in AZURE_LEGACY and isinstance(properties.get("msg"), str):
        return _message(properties["msg"], head, f"{category} record", str(record.get("time", "")))
    if isinstance(record.get("msg_s"), str):
        return _message(record["msg_s"], head, "AzureDiagnostics row", str(record.get("TimeGenerated", "")))
    if "Action" in record and "SourceIp" in record:
        return _azure_row(record, head, f"{record.get('Type') or 'Log Analytics'} row", str(record.get("TimeGenerated", "")))
    what = f"category '{category}'" if category else f"keys {', '.join(sorted(record)[:8]) or 'none'}"
    raise LineError(f"the JSON record ({what}) is neither an Azure Firewall application/network rule record nor a Network Firewall "
                    "alert record")


def _ip(value: object, field: str) -> str:
    try:
        return canonical_ip(str(value).strip())
    except ValueError:
        raise LineError(f"{field} '{evidence(str(value))[:60]}' is not an IP address (without a zone ID)") from None


def _port(value: object, field: str) -> int:
    text = str(value).strip()
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise LineError(f"{field} '{evidence(text)[:20]}' is not a port 1-65535")
    return int(text)


def _host(value: str) -> tuple[str, str]:
    """(host, why it is unusable) for what a client named."""
    try:
        return logged_host(value), ""
    except Unusable as skip:
        return "", skip.reason


def _azure_row(row: dict[str, Any], raw: str, shape: str, time_text: str) -> LogLine:
    value = lambda name: azure._value(row, name)  # noqa: E731 - az prints a missing value as 'None'
    action_text = value("Action")
    action = {"allow": "allow", "deny": "deny"}.get(action_text.lower(), "")
    reason = value("ActionReason")
    said = action_text + (f" ({reason})" if reason else "")
    rule = "/".join(part for part in (value("RuleCollectionGroup"), value("RuleCollection"), value("Rule")) if part)
    protocol = azure._PROTOCOLS.get(value("Protocol").lower(), "")
    host, unusable = _host(value("Fqdn"))
    address = value("DestinationIp")
    if host and is_ip(host):
        host, address = "", host
    ignored = (azure.NOT_DENY if not action else azure.NO_ROW if not protocol else unusable or ("" if host or address else NO_DESTINATION))
    port_text = value("DestinationPort")
    return LogLine("azure", shape, action, said, rule, _ip(value("SourceIp"), "SourceIp"), host,
                   _ip(address, "DestinationIp") if address else "", _port(port_text, "DestinationPort") if port_text else None,
                   protocol, parse_time(time_text or value("TimeGenerated")), _evidence(raw), ignored)


def _message(msg: str, raw: str, shape: str, time_text: str = "") -> LogLine:
    match = _MSG.match(msg.strip())
    if match is None:
        raise LineError(f"the message '{evidence(msg)[:80]}' is not Azure Firewall's '<PROTOCOL> request from <ip>:<port> to "
                        "<destination>:<port>. Action: <action>' form")
    fields = match.groupdict()
    action = _MSG_ACTIONS.get(fields["action"].lower(), "")
    told: dict[str, str] = {}
    other = []
    for part in re.split(r"\.\s+", fields["rest"].strip().rstrip(".")):
        key, colon, found = part.partition(": ")
        if colon and key in _MSG_KEYS:
            told[key] = found.strip()
        elif part:
            other.append(part)
    other += [f"{key}: {told[key]}" for key in ("Reason", "ThreatIntel") if key in told]
    said = fields["action"] + (f" ({'. '.join(other)})" if other else "")
    rule = "/".join(told[k] for k in ("Rule Collection Group", "Rule Collection", "Rule") if told.get(k))
    if "Signature" in told:
        rule = rule or f"IDPS signature {told['Signature']}"
    protocol = azure._PROTOCOLS.get(fields["proto"].lower(), "")
    host, unusable = _host((fields["dst"] or "").strip("[]"))
    address = host if host and is_ip(host) else ""
    ignored = azure.NO_ROW if not protocol else unusable or ("" if host else NO_DESTINATION)
    return LogLine("azure", shape, action, said, rule, _ip(fields["src"].strip("[]"), "the source address"), "" if address else host,
                   address, _port(fields["dport"], "the destination port") if fields["dport"] else None, protocol, parse_time(time_text),
                   _evidence(raw), ignored if action else "an Action other than Allow, Deny, drop or alert")


def _nfw(record: dict[str, Any], event: dict[str, Any], raw: str, shape: str) -> LogLine:
    time = parse_time(str(event.get("timestamp", ""))) or epoch(record.get("event_timestamp"))
    alert = event.get("alert")
    if event.get("event_type") != "alert" or not isinstance(alert, dict):
        said = f"a {evidence(str(event.get('event_type', '')))[:30]} event, no decision"
        return LogLine("aws-nfw", shape, "", said, "", "", "", "", None, "", time, _evidence(raw), aws.NOT_ALERT)
    action_text = str(alert.get("action", ""))
    action = {"allowed": "allow", "blocked": "deny"}.get(action_text)
    if action is None:
        raise LineError(f"event.alert.action is '{evidence(action_text)[:30]}', not 'allowed' or 'blocked'",
                        "pass the alert record as Network Firewall writes it")
    for key in ("src_ip", "dest_ip", "dest_port", "proto"):
        if key not in event:
            raise LineError(f"the alert has no event.{key}", "pass the whole alert record as Network Firewall writes it")
    sid, signature = alert.get("signature_id"), str(alert.get("signature", ""))
    rule = " ".join(part for part in (f"sid:{sid}" if sid is not None else "", f'"{signature}"' if signature else "") if part)
    try:
        host, unusable = aws._host(event), ""
    except Unusable as skip:
        host, unusable = "", skip.reason
    protocol = aws._protocol(event) or ""
    return LogLine("aws-nfw", shape, action, action_text, rule, _ip(event["src_ip"], "event.src_ip"), host,
                   _ip(event["dest_ip"], "event.dest_ip"), _port(event["dest_port"], "event.dest_port"), protocol, time, _evidence(raw),
                   aws.NO_ROW if not protocol else unusable)


def _squid(line: str) -> LogLine:
    fields = line.split()
    if len(fields) < squid.FIELDS:
        raise LineError(f"the Squid line has {len(fields)} fields, the native format has {squid.FIELDS} (time elapsed client code/status "
                        "bytes method URL user hierarchy/peer type)", "pass the whole access.log line (logformat squid, the default)")
    code, _, status = fields[3].partition("/")
    action, meaning = squid_decision(code, status)
    ignored = ""
    if status == "407" and action != "allow":
        action, ignored = "", squid.AUTH_CHALLENGE
    host = address = protocol = ""
    port = None
    if not ignored:
        try:
            host, port, protocol = squid._target(fields[5], fields[6])
        except Unusable as skip:
            ignored = skip.reason
    if host and is_ip(host):
        host, address = "", host
    said = printable(fields[3]) + (f" ({meaning})" if meaning else "")
    return LogLine("squid", "access.log", action, said, "", _ip(fields[2], "the client address"), host, address, port, protocol,
                   epoch(fields[0]), _evidence(line), ignored)
