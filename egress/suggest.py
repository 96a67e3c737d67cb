"""Did-you-mean for names a user types: setting keys, features, platforms, locations, enum values, roles.

One rule everywhere, so every message offers the same kind of suggestion: a name that differs only in case, '-'/'_'
or spaces is that name; otherwise the closest by difflib's ratio, if close enough to be a typo rather than a guess.
"""
from __future__ import annotations

import difflib
from typing import Iterable, Optional

_CUTOFF = 0.75  # 'nodeSource' -> nodeSources (0.95), 'azure-monitr' -> azure-monitor (0.96); 'gke' finds nothing among aks, kkp


def _fold(name: str) -> str:
    return "".join(c for c in name.lower() if c not in " -_.")


def closest(name: object, choices: Iterable[str], cutoff: float = _CUTOFF) -> Optional[str]:
    """The choice ``name`` most likely meant, or None."""
    if not isinstance(name, str) or not name:
        return None
    options = [str(choice) for choice in choices]
    folded = {_fold(option): option for option in options}
    if _fold(name) in folded:
        return folded[_fold(name)]
    lowered = {option.lower(): option for option in options}
    match = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=cutoff)
    if match:
        return lowered[match[0]]
    if len(name) >= 3:  # short names: one slip ('kpp' for kkp) is below any ratio cutoff, so count edits instead
        near = [option for lower, option in lowered.items() if distance(name.lower(), lower) == 1]
        if len(near) == 1:
            return near[0]
    return None


def distance(a: str, b: str) -> int:
    """Optimal string alignment distance (edits and adjacent swaps)."""
    rows = [list(range(len(b) + 1))] + [[i] + [0] * len(b) for i in range(1, len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return rows[len(a)][len(b)]


def did_you_mean(name: object, choices: Iterable[str], *, listing: str = "use one of", limit: Optional[int] = None) -> str:
    """A fix: "did you mean 'x'?" when one is close, then the choices (all, or at most ``limit`` and how many more)."""
    options = sorted({str(choice) for choice in choices})
    guess = closest(name, options)
    cut = options if limit is None else options[:limit]
    shown = ", ".join(cut) + (f", ... ({len(options) - len(cut)} more)" if len(options) > len(cut) else "")
    if guess is not None and guess != name:
        return f"did you mean '{guess}'? ({listing}: {shown})"
    return f"{listing}: {shown}"
