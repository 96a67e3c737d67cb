"""Allowlist exports: this cluster's addresses that other teams must put in *their* allowlists (pure)."""
from __future__ import annotations

from typing import Any

from .models import Catalog
from .profile import PROJECT, Profile, attribute_for_key


def allowlist_exports(catalog: Catalog, profile: Profile) -> list[dict[str, Any]]:
    """One record per export of the stack's platforms, with the stack's values (or which key to set)."""
    out = []
    for export in catalog.exports:
        if export.platform not in profile.platforms or export.level not in profile.levels:
            continue
        values = list(export.values) if export.values else list(getattr(profile, attribute_for_key(export.values_from)))
        source = catalog.sources[export.citation.source]
        record: dict[str, Any] = {
            "id": export.id, "allowlist": export.allowlist, "direction": export.direction, "values": values,
            "purpose": export.purpose, "citation": {"url": source.cited, "section": export.citation.section},
        }
        if export.level != "required":
            record["level"] = export.level
        if export.ports:
            record["ports"] = [str(p) for p in export.ports]
        if not values:
            record["missing"] = f"set {PROJECT}:{export.values_from}"
        if export.note:
            record["note"] = export.note
        out.append(record)
    return out
