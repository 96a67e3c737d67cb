"""Which of a requirement's destination options a target uses: the narrowest it can express (DESIGN.md, "Alternatives")."""
from __future__ import annotations

from typing import Callable, Iterable, Optional

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


class LeftOut(Strict):
    """A recommended or optional requirement a target cannot express: left out of that target, with why. A required
    one stops the stack instead (``choose``); the target's ``enforced`` leaves it out too, so no policy demands it."""

    requirement: str
    level: str
    reason: str


def requirement_label(req: Requirement) -> str:
    return f"{req.role} -> {req.destination} {req.protocol}/{format_ports(req.ports)} (entries: {', '.join(req.entry_ids)})"


def unexpressible(req: Requirement, form_of: FormOf) -> Optional[str]:
    """None when ``form_of`` can express some option of ``req``; else every option and why not (with its fix)."""
    forms = [(o, *form_of(o)) for o in req.options()]
    if any(form for _, form, _ in forms):
        return None
    return "; ".join(f"{', '.join(o.destinations)} {o.protocol}/{format_ports(o.ports)}: {why}" for o, _, why in forms)


def left_out(req: Requirement, form_of: FormOf) -> Optional[LeftOut]:
    """The note for a recommended or optional ``req`` no option of which the target can express; None otherwise."""
    if req.level == "required":
        return None
    reasons = unexpressible(req, form_of)
    if reasons is None:
        return None
    # the fix a stopping error gives ("add an alternative") is no news for a row the stack may do without
    why = "; ".join(dict.fromkeys(part.split(" Fix: ")[0].rstrip(".") for part in reasons.split("; ")))
    return LeftOut(requirement=requirement_label(req), level=req.level, reason=why)


def left_out_text(target: str, notes: Iterable[LeftOut]) -> str:
    """The render's note (``<target>/left-out.txt``): what the target does not allow although the stack's levels ask for it."""
    notes = list(notes)
    return (f"# {target} cannot express these {', '.join(sorted({n.level for n in notes}))} requirements: they are left out of it "
            "(a required one would stop the stack).\n" + "".join(f"{n.requirement} [{n.level}]: {n.reason}\n" for n in notes))


def choose(req: Requirement, form_of: FormOf, target: str, error: type[EgressError], choices: list[Choice]) -> tuple[ResolvedAlternative, str]:
    """The first option ``form_of`` can express, and its form; a departure from the first option is recorded in
    ``choices``. None expressible: ``error`` naming every option and why (``target``: e.g. "Azure Firewall")."""
    options = req.options()
    forms = [(o, *form_of(o)) for o in options]
    usable = [(o, form) for o, form, _ in forms if form]
    if not usable:
        raise error(f"requirement {requirement_label(req)} cannot be expressed on {target}: {unexpressible(req, form_of)}")
    option, form = usable[0]
    if option != options[0]:
        choices.append(Choice(requirement=requirement_label(req), used=", ".join(option.destinations),
                              reason=f"{target.split()[0]} cannot express {', '.join(options[0].destinations)} ({options[0].kind}) as configured"))
    return option, form


def left_out_lines(target: str, notes: Iterable[LeftOut]) -> list[str]:
    """The summary's lines for a target's left-out requirements (none: no lines)."""
    notes = list(notes)
    if not notes:
        return []
    return [f"  left out: {len(notes)} requirement(s) this target cannot express ({target}/left-out.txt):",
            *(f"    {n.requirement} [{n.level}]: {n.reason}" for n in notes)]
