"""Explanations for the terminal (``format_text``) and for ``--format json`` (``to_json``): plain, in a fixed order."""
from __future__ import annotations

from typing import Any, Optional, Union

from ..citations import cite
from .model import ALLOWED, DENIED, Approved, Decision, EntryRef, Explanation, Need, RuleExplanation, RuleMatch, RuleRef


def _asked(e: Explanation) -> str:
    where = f"[{e.destination}]" if e.kind == "ip" and ":" in e.destination and e.port is not None else e.destination
    return where + (f":{e.port}" if e.port is not None else "") + (f" for role {e.role}" if e.role else "")


def _need_lines(need: Need, indent: str) -> list[str]:
    lines = [f"{indent}{need.flow}, {need.level}" + (f" ({need.match})" if need.match else "")]
    lines.append(f"{indent}  entries: {', '.join(need.entry_ids)}")
    lines += [f"{indent}  why: {purpose}" for purpose in need.purposes]
    lines += [f"{indent}  cited: {cite(url, section)}" for url, section in need.citations]
    lines += [f"{indent}  approved: {approved.describe()}" for approved in need.approvals]
    if need.group:
        lines.append(f"{indent}  source group: {need.group} ({', '.join(need.sources) or 'no sources'})")
    lines += [f"{indent}  via: {via}" for via in _vias(need.via)]
    return lines


def _vias(vias: tuple[str, ...]) -> list[str]:
    """``host (for a)``, ``host (for b)`` -> ``host (for a, b)``; anything else as it is."""
    grouped: dict[str, list[str]] = {}
    for via in vias:
        host, marker, rest = via.partition(" (for ")
        key, value = (host, rest[:-1]) if marker and rest.endswith(")") else (via, "")
        grouped.setdefault(key, []).extend([value] if value else [])
    return [f"{host} (for {', '.join(ids)})" if ids else host for host, ids in grouped.items()]


def _rule_text(rule: RuleRef) -> str:
    return rule.describe() + (f" ({rule.text})" if rule.kind == "squid acl" and rule.text else "")


def _decision_line(d: Decision) -> list[str]:
    head = f"  {d.target} {d.role or '(no role)'} -> {d.destination} {d.protocol}/{d.ports}: "
    if d.outcome == ALLOWED:
        head += "allowed" + (f" by {'; '.join(map(_rule_text, d.rules))}" if d.rules else "")
        head += f" ({d.reason})" if d.reason else ""
        head += "" if d.required else ", though no requirement asks for it"
    elif d.outcome == DENIED:
        head += f"denied by {'; '.join(map(_rule_text, d.rules))}" if d.rules else f"denied: {d.reason}"
        head += "" if d.enforced else f" (not counted: {d.target} does not enforce this flow for the stack)"
    else:
        head += f"not enforced: {d.reason}"
    return [head] + [f"    {note}" for note in d.notes]


def _explanation_text(e: Explanation) -> str:
    lines = [f"{_asked(e)} (stack {e.stack})"]
    if e.requirements:
        lines.append(f"Required by {len(e.requirements)} requirement(s):")
        for need in e.requirements:
            lines += _need_lines(need, "  ")
    else:
        lines.append(f"Not required: no requirement of stack {e.stack} needs {_asked(e)}.")
        if e.nearest:
            lines.append("Nearest requirements:")
            for need in e.nearest:
                lines += _need_lines(need, "  ")
        else:
            lines.append("Nearest requirements: none")
    lines.append("Targets:" if e.decisions else "Targets: none (no target artefacts given)")
    for decision in e.decisions:
        lines += _decision_line(decision)
    lines += [f"Note: {note}" for note in e.notes]
    return "\n".join(lines) + "\n"


def _entry_line(entry: EntryRef) -> str:
    if not entry.known:
        return f"    {entry.id}: not an entry of this matrix"
    feature = f" {entry.feature}" if entry.feature else ""
    cited = [cite(*entry.citation)] if entry.citation[0] else []
    cited += [f"approved: {entry.approval.describe().split(': ', 1)[1]}"] if entry.approval else []
    group = f", for {entry.role}" if entry.approval and entry.role else ""
    return f"    {entry.id} ({entry.platform}{feature}{group}): {entry.purpose} [{'; '.join(cited)}]"


def _match_text(m: RuleMatch) -> list[str]:
    lines = [f"{m.rule.target} {m.rule.kind} ({m.rule.action}): {m.rule.describe()}"]
    lines += [f"  {line}" for line in m.rule.text.splitlines()]
    if m.note:
        lines.append(f"  note: {m.note}")
    lines.append(f"  entries ({len(m.entries)}):")
    lines += [_entry_line(entry) for entry in m.entries]
    lines.append(f"  requirements of the stack behind it ({len(m.requirements)}):")
    lines += [f"    {need.flow}, {need.level}" for need in m.requirements]
    return lines


def _rule_explanation_text(r: RuleExplanation) -> str:
    stack = f" (stack {r.stack})" if r.stack else ""
    if not r.found:
        close = ", ".join(r.close) if r.close else "none"
        return f"Rule '{r.query}'{stack}: no rule of the artefacts has this name.\nClose names: {close}\n"
    lines = [f"Rule '{r.query}'{stack}: {len(r.matches)} rule(s)"]
    for match in r.matches:
        lines += _match_text(match)
    return "\n".join(lines) + "\n"


def format_text(explanation: Union[Explanation, RuleExplanation]) -> str:
    """The explanation as plain text for the terminal (ends with a newline)."""
    if isinstance(explanation, RuleExplanation):
        return _rule_explanation_text(explanation)
    return _explanation_text(explanation)


def _approved(a: Optional[Approved]) -> Optional[dict[str, Any]]:
    if a is None:
        return None
    return {"entry": a.entry_id, "catalog": a.catalog, "owner": a.owner, "reference": a.reference, "expires": a.expires or None,
            "written": a.written}


def _need(n: Need) -> dict[str, Any]:
    return {"role": n.role, "destination": n.destination, "protocol": n.protocol, "ports": n.ports, "level": n.level,
            "entry_ids": list(n.entry_ids), "purposes": list(n.purposes),
            "citations": [{"url": u, "section": s} for u, s in n.citations], "via": list(n.via), "match": n.match,
            "approvals": [_approved(a) for a in n.approvals], "group": n.group or None, "sources": list(n.sources)}


def _rule(r: RuleRef) -> dict[str, Any]:
    return {"target": r.target, "kind": r.kind, "name": r.name, "where": dict(r.where), "action": r.action,
            "entry_ids": list(r.entry_ids), "text": r.text}


def _decision(d: Decision) -> dict[str, Any]:
    return {"target": d.target, "role": d.role, "destination": d.destination, "protocol": d.protocol, "ports": d.ports,
            "outcome": d.outcome, "required": d.required, "rules": [_rule(r) for r in d.rules], "reason": d.reason, "notes": list(d.notes),
            "enforced": d.enforced}


def _entry(e: EntryRef) -> dict[str, Any]:
    return {"id": e.id, "known": e.known, "platform": e.platform, "feature": e.feature, "purpose": e.purpose,
            "citation": {"url": e.citation[0], "section": e.citation[1]} if e.citation[0] else None,
            "approval": _approved(e.approval), "role": e.role}


def to_json(explanation: Union[Explanation, RuleExplanation]) -> dict[str, Any]:
    """The explanation as a JSON-ready dict (``json.dumps(to_json(x), indent=2)`` for ``--format json``)."""
    if isinstance(explanation, RuleExplanation):
        r = explanation
        return {"stack": r.stack, "rule": r.query, "found": r.found,
                "matches": [{"rule": _rule(m.rule), "roles": list(m.roles), "entries": [_entry(e) for e in m.entries],
                             "requirements": [_need(n) for n in m.requirements], "note": m.note} for m in r.matches],
                "close": list(r.close)}
    e = explanation
    return {"stack": e.stack, "destination": e.destination, "kind": e.kind, "port": e.port, "role": e.role, "required": e.required,
            "requirements": [_need(n) for n in e.requirements], "nearest": [_need(n) for n in e.nearest],
            "decisions": [_decision(d) for d in e.decisions], "notes": list(e.notes)}



