"""The proposals document a team reviews (YAML) and its Markdown summary. Nothing here changes a stack or a catalog.

Each group of denied flows becomes one of:

- ``proposals``: ``turn_on`` (the features or levels that bring a vendor row of the stack's platforms covering the
  flow, with the rows and their citations), or ``entry`` (a stack ``egress-matrix:entries`` item in the shape
  egress/own_settings.py StackEntry accepts, ``owner`` and ``reference`` left empty: the stack refuses it until someone
  takes ownership), with near misses and the rows of other platforms that list the destination;
- ``findings``: the stack already allows the flow (the firewall in front of it is not the stack's, or not deployed);
- ``unknown_sources``: no role or group of the stack holds the source (set its *Sources or sourceGroups first).

Every group carries its evidence: how many denials, first and last seen, the client addresses, the log lines.
"""
from __future__ import annotations

import re
from typing import Any

import yaml

from ..markdown_cells import cell
from ..models import DEFAULT_PORTS, ROLES
from ..redact import redact
from .candidates import Candidate
from .flows import LogRead, iso
from .match import Group, Verdict, enable_options, flow_text

MARKER = "# egress learn: proposals for review."
LINES = 5  # log lines quoted per group (the count says how many there are)
ELSEWHERE = 5
SETTINGS = {"feature": "egress-matrix:features", "level": "egress-matrix:levels"}


def document(stack: str, reads: list[LogRead], judged: list[tuple[Group, Verdict]], taken: tuple[str, ...] = ()) -> dict[str, Any]:
    """``taken``: the ids of the stack's own entries, which a proposed entry must not repeat."""
    proposals: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    unknown: list[dict[str, Any]] = []
    ids: set[str] = set(taken)
    for group, verdict in judged:
        head = {"source": group.source, "destination": group.destination, "protocol": group.protocol, "port": group.port}
        if not group.source:
            unknown.append({**head, "source": "", "fix": "no role or source group of the stack holds these sources: add them to a role's "
                            "*Sources setting or to egress-matrix:sourceGroups, then run egress learn again", "evidence": _evidence(group)})
        elif verdict.required:
            findings.append({**head, "allowed_by": sorted({i for c in verdict.required for i in c.req.entry_ids}),
                             "fix": "the stack already allows this flow, so the firewall that denied it does not enforce the stack as it is: "
                                    "deploy the stack (pulumi up), or check which firewall sits in front of these sources",
                             "evidence": _evidence(group)})
        elif verdict.enabling:
            proposals.append({**head, "turn_on": [_option(blockers, rows) for blockers, rows in enable_options(verdict.enabling)],
                              **_context(verdict), "evidence": _evidence(group)})
        else:
            proposals.append({**head, "entry": _entry(group, ids), **_context(verdict), "evidence": _evidence(group)})
    return {
        "stack": stack,
        "logs": [_log(r) for r in reads],
        "proposals": proposals,
        "findings": findings,
        "unknown_sources": unknown,
    }


def _log(read: LogRead) -> dict[str, Any]:
    out: dict[str, Any] = {"file": read.file, "format": read.format, "records": read.records, "denied": read.denied,
                           "allowed": read.allowed, "ignored": read.ignored}
    if read.because:  # the reasons and where, so a reviewer sees what was left out (and that someone planted '*')
        out["ignored_because"] = [{"reason": reason, "records": len(lines), "lines": [f"{read.file}:{n}" for n in lines[:LINES]]}
                                  for reason, lines in sorted(read.because.items(), key=lambda item: (-len(item[1]), item[0]))]
    return out


def _option(blockers: tuple[tuple[str, str], ...], rows: list[Candidate]) -> dict[str, Any]:
    settings: dict[str, list[str]] = {}
    for kind, value in blockers:
        settings.setdefault(SETTINGS[kind], []).append(value)
    return {"add": settings, "rows": [_row(c) for c in sorted(rows, key=lambda c: (c.entry.id, c.req.destination))]}


def _row(candidate: Candidate) -> dict[str, Any]:
    entry, req = candidate.entry, candidate.req
    row: dict[str, Any] = {"entry": entry.id, "platform": entry.platform}
    if entry.feature:
        row["feature"] = entry.feature
    row["allows"] = flow_text(req)
    if req.via:
        row["via"] = list(req.via)
    row["purpose"] = req.purposes[0]
    row["cited"] = [f"{url} ({section})" for url, section in req.citations] or [
        f"approved: {a.owner}, {a.reference}" for a in req.approvals]
    return row


def _context(verdict: Verdict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if verdict.near:
        out["near_misses"] = [dict(item) for item in verdict.near]
    if verdict.elsewhere:
        rows = {c.entry.id: _row(c) for c in sorted(verdict.elsewhere, key=lambda c: c.entry.id)}
        out["listed_by_other_platforms"] = list(rows.values())[:ELSEWHERE]
    return out


def slug(text: str) -> str:
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9]+", "-", text.lower())).strip("-")


def _entry(group: Group, taken: set[str]) -> dict[str, Any]:
    """A stack entry for the group, in StackEntry's shape; an id no other proposal of this document uses."""
    base = slug(group.destination) if group.kind == "fqdn" else f"ip-{slug(group.destination)}"
    if DEFAULT_PORTS.get(group.protocol) != group.port:
        base += f"-{group.port}"
    candidates = [base, f"{base}-{slug(group.source)}", f"{base}-{slug(group.source)}-{group.protocol}"]
    entry_id = next((c for c in candidates if c not in taken), f"{candidates[-1]}-{len(taken)}")
    taken.add(entry_id)
    who = group.source if group.source in ROLES else f"the {group.source} group"
    return {
        "id": entry_id, "destination": group.destination, "protocol": group.protocol, "ports": [group.port], "role": group.source,
        "purpose": f"TODO say what on {who} calls {group.destination} and why ({len(group.flows)} denied in the logs)",
        "owner": "", "reference": "",
    }


def _evidence(group: Group) -> dict[str, Any]:
    times = sorted(f.time for f in group.flows if f.time)
    out: dict[str, Any] = {"denied": len(group.flows), "first_seen": iso(times[0]) if times else "",
                           "last_seen": iso(times[-1]) if times else "",
                           "sources": sorted({f.source for f in group.flows}, key=_ip_key)}
    if group.addresses and group.kind == "fqdn":
        out["addresses"] = sorted(group.addresses, key=_ip_key)
    out["lines"] = [{"at": f"{f.file}:{f.line}", "text": f.text} for f in group.flows[:LINES]]
    return out


def _ip_key(text: str) -> tuple[int, str]:
    return (":" in text, text.zfill(39) if ":" in text else ".".join(part.zfill(3) for part in text.split(".")))


def to_yaml(stack: str, doc: dict[str, Any]) -> str:
    head = (f"{MARKER} Stack '{stack}': nothing was changed. Copy what you accept into the stack (README, 'Learn from deny logs'):\n"
            "# a turn_on's settings into its lists; an entry under egress-matrix:entries, with owner and reference filled in.\n")
    return redact(head + yaml.safe_dump(doc, sort_keys=False, width=10_000, allow_unicode=True, default_flow_style=False))


def markdown(stack: str, doc: dict[str, Any], out: str) -> str:
    logs = doc["logs"]
    total = {key: sum(log[key] for log in logs) for key in ("records", "denied", "allowed", "ignored")}
    lines = [f"## egress learn: stack '{stack}'", "",
             f"Read {len(logs)} log{'s' if len(logs) != 1 else ''}: {total['records']} records, {total['denied']} denied, "
             f"{total['allowed']} allowed (skipped), {total['ignored']} of no concern.", ""]
    rows = [*(_summary(p) for p in doc["proposals"]), *(_summary(f) for f in doc["findings"]), *(_summary(u) for u in doc["unknown_sources"])]
    if rows:
        lines += ["| Source | Destination | Denied | Outcome |", "|---|---|---|---|", *rows, ""]
    reasons: dict[str, int] = {}
    for log in logs:
        for item in log.get("ignored_because", []):
            reasons[item["reason"]] = reasons.get(item["reason"], 0) + item["records"]
    if reasons:
        lines += ["Ignored records, by reason (the proposals file says where):", "",
                  *(f"- {n} × {cell(reason)}" for reason, n in sorted(reasons.items(), key=lambda item: (-item[1], item[0]))), ""]
    count = len(doc["proposals"])
    lines.append(f"{count} proposal{'s' if count != 1 else ''} written to {out} for review; nothing in the stack or the matrix changed."
                 if count else f"Nothing to propose (written to {out}).")
    return redact("\n".join(lines) + "\n")


def _summary(item: dict[str, Any]) -> str:
    source = item["source"] or "(no role or group) " + ", ".join(item["evidence"]["sources"])
    if "turn_on" in item:
        options = " or ".join(", ".join(f"{key.split(':')[1][:-1]} {v}" for key, values in o["add"].items() for v in values) for o in item["turn_on"])
        outcome = f"turn on {options}"
    elif "entry" in item:
        near = item.get("near_misses", [])
        outcome = f"new stack entry '{item['entry']['id']}'" + (f" (near miss: {near[0]['why']})" if near else "")
    elif "allowed_by" in item:
        outcome = f"already allowed by the stack ({', '.join(item['allowed_by'])}): deploy it"
    else:
        outcome = "source in no role or group of the stack"
    # Every cell through cell(): a destination is what a client sent, and the summary goes into PR comments
    cells = (source, f"{item['destination']} {item['protocol']}/{item['port']}", item["evidence"]["denied"], outcome)
    return "| " + " | ".join(cell(text) for text in cells) + " |"
