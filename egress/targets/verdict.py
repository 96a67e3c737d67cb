"""What a target's evaluator answers, the same for every target (DESIGN.md, "Targets")."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    """``missing``: requirements the artefacts do not allow; ``extra``: flows they allow that no requirement asked for;
    ``assumed``: what the verdict rests on but cannot be known offline (an FQDN tag's members, a platform's built-in
    allows, FQDN rules that allow by resolved address). ``ok`` is about missing and extra only: an assumption is
    reported so a reviewer can weigh it, not counted as a failure."""

    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    rules_checked: int = 0
    assumed: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.missing and not self.extra
