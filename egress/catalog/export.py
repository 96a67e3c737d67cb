"""The JSON form of one unresolved entry (``egress catalog export``)."""
from __future__ import annotations

from typing import Any

from ..addresses import classify, parse_port
from ..models import Catalog, Entry
from ..placeholders import names_in, with_samples


def export_entry(entry: Entry, catalog: Catalog) -> dict[str, Any]:
    """The JSON form of one unresolved entry (``egress catalog export``)."""
    source = catalog.sources[entry.citation.source]
    data: dict[str, Any] = {
        "id": entry.id,
        "platform": entry.platform,
        "variant": entry.variant,
        "feature": entry.feature,
        "level": entry.level,
        "role": entry.role,
        "destination": entry.destination,
        "kind": entry.kind,
        "protocol": entry.protocol,
        "ports": [_export_port(p) for p in entry.ports],
        "conditions": entry.when.model_dump(exclude_defaults=True, mode="json"),
        "alternatives": [
            {k: v for k, v in {
                "destination": alt.destination,
                "kind": alt.kind or classify(with_samples(alt.destination)),
                "protocol": alt.protocol or entry.protocol,
                "ports": [_export_port(p) for p in (alt.ports or entry.ports)],
                "note": alt.note,
            }.items() if v is not None}
            for alt in entry.alternatives
        ],
        "purpose": entry.purpose,
        # url: the public page outputs cite; doc: what was read (and, for a seed, the copy transcribed)
        "citation": {"url": source.url, "section": entry.citation.section, "doc": source.doc},
    }
    if entry.images:
        data["images"] = list(entry.images)
    if entry.note:
        data["note"] = entry.note
    if entry.documented_as:
        data["documented_as"] = [
            {"destination": d.destination, "protocol": d.protocol or entry.protocol,
             "ports": [_export_port(p) for p in (d.ports or entry.ports)]}
            for d in entry.documented_as
        ]
    if entry.differs_because:
        data["differs_because"] = entry.differs_because
    if entry.broad:
        data["broad"] = entry.broad
    if entry.retires:
        retire_source = catalog.sources[entry.retires.citation.source]
        data["retires"] = {"date": entry.retires.date.isoformat(),
                           "citation": {"url": retire_source.url, "section": entry.retires.citation.section, "doc": retire_source.doc}}
    return data


def _export_port(item: Any) -> Any:
    if isinstance(item, str) and names_in(item):
        return item
    return parse_port(item).export()
