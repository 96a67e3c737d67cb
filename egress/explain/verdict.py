"""The one rule both halves of ``egress explain`` judge by: is what was explained denied (exit ``DENIED_EXIT``)?

    counts(decision) -> bool                  a DENIED decision of a target that enforces that flow for the stack
    judging(decisions, engine=None) -> decisions the verdict reads: for a log line, those of the target that runs the
                                             engine that wrote it (when the stack has that target), else all of them
    denied(decisions, engine=None) -> bool     allowed(decisions, engine=None) -> bool

A target enforces a flow when it enforces the flow's role for the stack and, for a flow a requirement asks for, that
requirement (``Decision.enforced``): AWS's rule group denying an AKS node's mcr.microsoft.com is no finding when the
stack's AWS target leaves that requirement out, and a source in no role of the stack is no flow the stack enforces.
A destination nothing requires, denied by a target that enforces the asking role, is denied: nothing asks for it.
"""
from __future__ import annotations

from typing import Iterable, Optional

from .model import ALLOWED, DENIED, Decision

DENIED_EXIT = 3  # not 1 (bad input) nor 2 (usage): a script tells "something is denied" from "it failed"
# Which target runs the engine that wrote a log line (egress/learn/lines.py names the engines).
ENGINE_TARGET = {"azure": "azure", "aws-nfw": "aws", "squid": "kubernetes"}


def counts(decision: Decision) -> bool:
    return decision.outcome == DENIED and decision.enforced


def judging(decisions: Iterable[Decision], engine: Optional[str] = None) -> tuple[Decision, ...]:
    decisions = tuple(decisions)
    own = ENGINE_TARGET.get(engine or "")
    mine = tuple(d for d in decisions if d.target == own)
    return mine if mine else decisions


def denied(decisions: Iterable[Decision], engine: Optional[str] = None) -> bool:
    return any(counts(d) for d in judging(decisions, engine))


def allowed(decisions: Iterable[Decision], engine: Optional[str] = None) -> bool:
    """Something judged allows the flow and nothing judged denies it."""
    judged = judging(decisions, engine)
    return any(d.outcome == ALLOWED for d in judged) and not any(counts(d) for d in judged)
