"""``egress explain``: from a firewall log line to the matrix (DESIGN.md, "Explainable rules"). Pure core.

    explain_destination(catalog, profile, requirements, artefacts_by_target, destination, port=None, role=None) -> Explanation
        which requirements need DESTINATION[:PORT] (or, if none, the nearest ones) and which rule of each target
        allows or denies it, judged with the target's own semantics (the evaluators' readings of the artefacts)
    explain_rule(catalog, requirements, artefacts_by_target, rule_name, profile=None) -> RuleExplanation
        from a rule name as a log shows it to the entries and requirements behind it (close names when unknown)
    parse_destination_arg(text) -> (destination, port or None)
    format_text(explanation) -> str           to_json(explanation) -> dict

``artefacts_by_target`` maps a target name to what ``TARGETS[name].render(plan)`` or ``TARGETS[name].deployed(resources)``
returns. query.py: what was asked and which requirements match; azure.py, aws.py, kubernetes.py: each target's
deciding rule and rule inventory; destination.py, rule.py: the two questions; output.py: text and JSON; logs*.py,
log_input.py: log lines; verdict.py: the one rule the exit status follows (a denial counts where the target enforces
the flow; a log line is judged by the target of the engine that wrote it).
"""
from __future__ import annotations

from .destination import explain_destination
from .model import (ALLOWED, DENIED, NOT_ENFORCED, Decision, EntryRef, Explanation, ExplainError, Need, RuleExplanation, RuleMatch,
                    RuleRef)
from .output import format_text, to_json
from .query import parse_destination_arg
from .rule import explain_rule

__all__ = ["ALLOWED", "DENIED", "NOT_ENFORCED", "Decision", "EntryRef", "Explanation", "ExplainError", "Need", "RuleExplanation", "RuleMatch",
           "RuleRef", "explain_destination", "explain_rule", "format_text", "parse_destination_arg", "to_json"]
