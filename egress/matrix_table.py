"""``egress matrix``'s table: the resolved requirements for a person at a terminal, fitted to its width (egress/tables.py).

Unlike the JSON, CSV and Markdown forms (egress/render.py, unchanged for scripts), the table leads with the entry ids
and their features, one per line, so a row can be traced to matrix/*.yaml and to the stack's ``features`` setting, and
lists each citation on its own line.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

from .citations import cite
from .models import Catalog, Requirement
from .render import _approval_text, requirement_row
from .tables import Column, table_lines, wrap

COLUMNS = (Column("entry", keep=True), Column("feature", keep=True), Column("role"), Column("destination", min_width=32), Column("kind"),
           Column("protocol"), Column("ports"), Column("level"), Column("purpose", detail=True),
           Column("citation", detail=True), Column("choice", detail=True))
BASE = "-"  # an entry of no feature: the platform's base requirements


def rows(catalog: Catalog, reqs: Iterable[Requirement]) -> list[list[str]]:
    feature = {entry.id: entry.feature or BASE for entry in catalog.entries}
    out = []
    for req in reqs:
        row = requirement_row(req)
        features = dict.fromkeys(feature.get(entry_id, BASE) for entry_id in req.entry_ids)  # in entry order, once each
        # one document (or approval) per line; the row's own text joins them with '; ', which a section title may hold
        row["citation"] = "\n".join([*(cite(url, section) for url, section in req.citations), *map(_approval_text, req.approvals)])
        out.append(["\n".join(req.entry_ids), "\n".join(features), *(row[c.header] for c in COLUMNS[2:])])
    return out


def matrix_table(stack: str, catalog: Catalog, reqs: Iterable[Requirement], extras: dict[str, Any], width: Optional[int]) -> str:
    reqs = list(reqs)
    lines = [f"egress requirements for stack '{stack}' ({len(reqs)})", *table_lines(COLUMNS, rows(catalog, reqs), width)]
    notes = []
    if "openshiftNoProxy" in extras:
        notes.append(f"OpenShift status.noProxy: {extras['openshiftNoProxy']}")
    for export in extras.get("allowlistExports", ()):
        values = ", ".join(export["values"]) or f"(not set: {export['missing']})"
        notes.append(f"Export for {export['allowlist']} ({export['direction']}): {values}")
    for note in notes:
        first, *rest = wrap(note, width - 2) if width else [note]
        lines.extend([first, *("  " + line for line in rest)])
    return "\n".join(lines) + "\n"
