"""The breadth check now lives in the core, ``egress/guard.py``: ``Project.requirements`` runs it for every command
without loading the targets (``egress matrix`` stays light). These names stay importable from here."""
from __future__ import annotations

from ..guard import (BreadthError, accepted, accepted_flows, check_breadth, check_own_entries, check_own_entries_together,
                     duplicate_notices, duplicates, limits_of, no_proxy_findings, no_proxy_inputs, own_entry_findings,
                     own_entry_origin, own_ids, requirement_allows)

__all__ = ["BreadthError", "accepted", "accepted_flows", "check_breadth", "check_own_entries", "check_own_entries_together",
           "duplicate_notices", "duplicates", "limits_of", "no_proxy_findings", "no_proxy_inputs", "own_entry_findings",
           "own_entry_origin", "own_ids", "requirement_allows"]
