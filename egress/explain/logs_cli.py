"""The log-line half of ``egress explain`` between the CLI and the core: explain, refuse a batch with nothing readable,
print, and give the exit status (0 allowed, ``DENIED_EXIT`` something denied)."""
from __future__ import annotations

import json
from typing import Callable, Iterable, Mapping

from ..errors import EgressError
from ..models import Catalog, Requirement
from ..profile import Profile
from .logs import DENIED_EXIT, SKIPPED_LINE, explain_log_lines
from .logs_output import format_log_text, log_json


def explain_logs(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement], artefacts: Mapping[str, Mapping[str, str]],
                 lines: list[tuple[int, str]], as_json: bool, out: Callable[[str], None]) -> int:
    explanation = explain_log_lines(catalog, profile, requirements, artefacts, lines)
    if explanation.read == 0:
        first = next(e for e in explanation.lines if e.status == SKIPPED_LINE)
        raise EgressError(f"stdin: none of its {len(explanation.lines)} line(s) is a log line egress explain reads; line {first.number}: "
                          f"{first.error}")
    out(json.dumps(log_json(explanation), indent=2) + "\n" if as_json else format_log_text(explanation))
    return DENIED_EXIT if explanation.denied else 0
