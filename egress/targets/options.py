"""Which of a requirement's destination options a target uses: the narrowest it can express (DESIGN.md, "Alternatives")."""
from __future__ import annotations

from typing import Callable, Optional

from ..addresses import format_ports
from ..errors import EgressError
from ..models import Requirement, ResolvedAlternative, Strict

# option -> (form, "") when the target can express it, else (None, why not and the fix)
FormOf = Callable[[ResolvedAlternative], tuple[Optional[str], str]]


class Choice(Strict):
    """Which destination a target uses for a requirement, when it is not the resolver's first choice."""

    requirement: str
    used: str
    reason: str


def requirement_label(req: Requirement) -> str:
    return f"{req.role} -> {req.destination} {req.protocol}/{format_ports(req.ports)} (entries: {', '.join(req.entry_ids)})"


def choose(req: Requirement, form_of: FormOf, target: str, error: type[EgressError], choices: list[Choice]) -> tuple[ResolvedAlternative, str]:
    """The first option ``form_of`` can express, and its form; a departure from the first option is recorded in
    ``choices``. None expressible: ``error`` naming every option and why (``target``: e.g. "Azure Firewall")."""
    options = req.options()
    forms = [(o, *form_of(o)) for o in options]
    usable = [(o, form) for o, form, _ in forms if form]
    if not usable:
        reasons = "; ".join(f"{', '.join(o.destinations)} {o.protocol}/{format_ports(o.ports)}: {why}" for o, _, why in forms)
        raise error(f"requirement {requirement_label(req)} cannot be expressed on {target}: {reasons}")
    option, form = usable[0]
    if option != options[0]:
        choices.append(Choice(requirement=requirement_label(req), used=", ".join(option.destinations),
                              reason=f"{target.split()[0]} cannot express {', '.join(options[0].destinations)} ({options[0].kind}) as configured"))
    return option, form
