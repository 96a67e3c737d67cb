"""Names every target gives its rules (DESIGN.md, "Explainable rules"): platform, feature, role, protocol/ports."""
from __future__ import annotations

from typing import Optional

from ..models import Entry, Requirement


def rule_stem(platform: str, feature: Optional[str], role: str) -> str:
    """'aks-core', 'aks-azure-monitor', 'kkp-kubeone-bastion': platform, feature (its platform prefix dropped), role unless nodes."""
    label = (feature or "core").removeprefix(f"{platform}-")
    return "-".join([platform, label, *([role] if role != "nodes" else [])])


def feature_parts(req: Requirement, entries: dict[str, Entry]) -> dict[tuple[str, Optional[str]], list[str]]:
    """(platform, feature) -> the entry ids behind ``req`` for it: a host two features need is in each feature's rule,
    so turning a feature on or off never rewrites another feature's rules."""
    parts: dict[tuple[str, Optional[str]], list[str]] = {}
    for entry_id in req.entry_ids:
        entry = entries[entry_id]
        parts.setdefault((entry.platform, entry.feature), []).append(entry_id)
    return parts
