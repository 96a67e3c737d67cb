"""Explained log lines for the terminal (``format_log_text``) and for ``--format json`` (``log_json``: one array, one object
per line, every object with the same keys in the same order)."""
from __future__ import annotations

from typing import Any

from ..learn.flows import iso
from ..learn.lines import printable
from .logs import SKIPPED_LINE, LineExplanation, LogExplanation
from .output import _decision, _decision_line, _need, _need_lines

_ENGINES = {"azure": "Azure Firewall", "aws-nfw": "Network Firewall", "squid": "Squid"}


def _flow(e: LineExplanation) -> str:
    line = e.line
    assert line is not None
    if not line.destination:
        return f"from {line.source}"
    where = f"[{line.destination}]" if ":" in line.destination else line.destination
    port = f"/{line.port}" if line.port is not None else ""
    return f"{line.source} -> {where} {line.protocol or '?'}{port}"


def _source(e: LineExplanation, stack: str) -> str:
    if not e.source_roles:
        return f"  source: {e.line.source} is in no role or source group of stack {stack}" if e.line and e.line.source else ""
    if len(e.source_roles) == 1:
        return f"  source: {e.line.source} is {e.source_role}"
    return f"  source: {e.line.source} is in {', '.join(e.source_roles)} (most specific first); judged as {e.source_role}"


def _line_text(e: LineExplanation, stack: str) -> list[str]:
    if e.status == SKIPPED_LINE:
        return [f"line {e.number}: skipped: {e.error}"]
    line = e.line
    assert line is not None
    flow = f" {_flow(e)}:" if line.source else ""
    lines = [f"line {e.number}: {_ENGINES[line.engine]} {line.shape}:{flow} {e.status}"]
    lines.append(f"  log: {line.said or 'no decision'}" + (f", rule {line.rule}" if line.rule else ""))
    if line.ignored or line.port is None:
        return lines + [f"  not explained: {note}" for note in e.notes]
    lines += [text for text in (_source(e, stack),) if text]
    if e.requirements:
        lines.append(f"  required by {len(e.requirements)} requirement(s):")
        for need in e.requirements:
            lines += _need_lines(need, "    ")
    else:
        lines.append(f"  not required: no requirement of stack {stack} asks for this flow")
    if not e.decisions:
        lines.append("  targets: none (no target artefacts given)")
    elif e.judged_by and len({d.target for d in e.decisions}) > 1:
        lines.append(f"  targets (judged by {e.judged_by}: {_ENGINES[line.engine]} wrote the line; the others for "
                     "information):")
    else:
        lines.append("  targets:")
    lines += [f"  {text}" for decision in e.decisions for text in _decision_line(decision)]
    lines += [f"  note: {note}" for note in e.notes]
    return lines


def format_log_text(explanation: LogExplanation) -> str:
    lines = [f"Log lines explained against stack {explanation.stack}"]
    for e in explanation.lines:
        lines += _line_text(e, explanation.stack)
    counts = ", ".join(f"{explanation.count(s)} {s}" for s in ("allowed", "denied", "ignored", "skipped"))
    lines.append(f"{len(explanation.lines)} line(s): {counts}")
    # Every field a line holds came from whoever wrote the log (a Host, a URL, a rule name): no control character of it
    # reaches the terminal (an escape sequence, a line break); the JSON form escapes them itself.
    return "\n".join(map(printable, lines)) + "\n"


def _line_json(e: LineExplanation, stack: str) -> dict[str, Any]:
    line = e.line
    return {
        "stack": stack, "line": e.number, "status": e.status, "error": e.error or None,
        "engine": line.engine if line else None, "shape": line.shape if line else None,
        "log": {"action": line.action or None, "said": line.said, "rule": line.rule or None, "time": iso(line.time) or None,
                "ignored": line.ignored or None} if line else None,
        "source": line.source if line else None, "source_role": e.source_role or None, "source_roles": list(e.source_roles),
        "destination": line.destination or None if line else None, "kind": e.kind or None,
        "port": line.port if line else None, "protocol": line.protocol or None if line else None,
        "requirements": [_need(n) for n in e.requirements], "decisions": [_decision(d) for d in e.decisions],
        "notes": list(e.notes), "text": line.text if line else None, "judged_by": e.judged_by or None,
    }


def log_json(explanation: LogExplanation) -> list[dict[str, Any]]:
    return [_line_json(e, explanation.stack) for e in explanation.lines]
