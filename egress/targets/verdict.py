"""What a target's evaluator answers, the same for every target (DESIGN.md, "Targets")."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    """``missing``: requirements the artefacts do not allow; ``extra``: flows they allow that no requirement asked for."""

    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    rules_checked: int = 0

    @property
    def ok(self) -> bool:
        return not self.missing and not self.extra
