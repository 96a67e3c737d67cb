"""Render resolved requirements and the catalog as table rows, Markdown, CSV and JSON. Pure, deterministic."""
from __future__ import annotations

import csv
import io
import json
from typing import Any, Iterable

from .addresses import format_ports
from .catalog import export_entry
from .citations import cite
from .models import ApprovalRef, Catalog, Requirement

COLUMNS = ("role", "destination", "kind", "protocol", "ports", "level", "purpose", "citation", "choice")


def requirement_row(req: Requirement) -> dict[str, str]:
    return {
        "role": req.role,
        "destination": req.destination,
        "kind": req.kind,
        "protocol": req.protocol,
        "ports": format_ports(req.ports),
        "level": req.level,
        "purpose": "; ".join(req.purposes),
        # the public address of each document (an own entry cites its approval in place of, or besides, a document)
        "citation": "; ".join([*(cite(url, section) for url, section in req.citations), *(_approval_text(a) for a in req.approvals)]),
        "choice": req.chosen or "",  # which alternative was picked, and what else would do
    }


def _approval_text(approval: ApprovalRef) -> str:
    expires = f", expires {approval.expires.isoformat()}" if approval.expires else ""
    return f"{approval.entry_id} approved by {approval.owner} ({approval.reference}{expires})"


def requirement_json(req: Requirement) -> dict[str, Any]:
    data: dict[str, Any] = {
        "role": req.role,
        "sources": list(req.sources),
        "destination": req.destination,
        "kind": req.kind,
        "protocol": req.protocol,
        "ports": [p.export() for p in req.ports],
        "level": req.level,
        "purpose": "; ".join(req.purposes),
        "entries": list(req.entry_ids),
        "platforms": list(req.platforms),
        "citations": [{"url": url, "section": section} for url, section in req.citations],
    }
    if req.paths:
        data["paths"] = list(req.paths)
    if req.images:
        data["images"] = list(req.images)
    if req.via:
        data["via"] = list(req.via)
    if req.alternatives:
        data["alternatives"] = [
            {"kind": a.kind, "destinations": list(a.destinations), "protocol": a.protocol,
             "ports": [p.export() for p in a.ports], **({"note": a.note} if a.note else {})}
            for a in req.alternatives
        ]
    if req.chosen:
        data["chosen"] = req.chosen
    if req.deviations:
        data["differsFromDocument"] = list(req.deviations)
    if req.retires:
        data["retires"] = req.retires.isoformat()
    if req.approvals:
        data["approvals"] = [{"entry": a.entry_id, "owner": a.owner, "reference": a.reference,
                              **({"expires": a.expires.isoformat()} if a.expires else {})} for a in req.approvals]
    return data


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def requirements_json(stack: str, reqs: Iterable[Requirement], extras: dict[str, Any] | None = None) -> str:
    reqs = list(reqs)
    return to_json({"stack": stack, "count": len(reqs), **(extras or {}), "requirements": [requirement_json(r) for r in reqs]})


def requirements_csv(reqs: Iterable[Requirement]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for req in reqs:
        writer.writerow(requirement_row(req))
    return buffer.getvalue()


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def requirements_markdown(stack: str, reqs: Iterable[Requirement]) -> str:
    reqs = list(reqs)
    lines = [f"# Egress requirements for stack `{stack}`", "", f"{len(reqs)} requirements.", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for req in reqs:
        row = requirement_row(req)
        row["destination"] = f"`{row['destination']}`"
        lines.append("| " + " | ".join(_md_cell(row[c]) for c in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def catalog_json(catalog: Catalog) -> str:
    return to_json([export_entry(entry, catalog) for entry in catalog.entries])
