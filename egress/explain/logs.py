"""``egress explain`` of log lines: for each line, what the log says happened to the flow and what the stack's render
(or a preview's resources) would do with that very flow, and the requirements behind it.

    explain_log_lines(catalog, profile, requirements, artefacts_by_target, lines) -> LogExplanation
        ``lines``: (line number, text). A line no engine writes so is skipped (counted, with its problem); the rest are
        read by egress/learn/lines.py (an Azure CSV export's rows with the columns of its header row). The flow's source role is the most specific of the stack's roles and source groups
        holding its source address (as ``egress learn`` groups flows); each target judges the flow from that address.

A line is ``denied`` when the log says so (Deny, blocked, TCP_DENIED) or the stack's rules deny its flow, judged by
verdict.py's rule: the target running the engine that wrote the line (Azure Firewall: azure, Network Firewall: aws,
Squid: kubernetes) when the stack has it, the others shown for information; a denial counts only where that target
enforces the flow. ``ignored`` when it records no decision on a flow the matrix could name (a flow event, Squid's 407
challenge); ``skipped`` when it cannot be read; else ``allowed``. ``DENIED_EXIT`` is the exit status when any is denied.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

from ..addresses import PortRange
from ..learn.lines import LineError, LogLine, csv_header, engine_of, parse_csv_row, parse_line
from ..learn.match import CARRIES, holders, sources_of
from ..models import Catalog, Requirement
from ..profile import Profile
from .destination import _decision, judges, origins
from .model import ALLOWED, DENIED, NOT_ENFORCED, Decision, Need, Probe
from .query import kind_of, needs
from .verdict import DENIED_EXIT, ENGINE_TARGET, allowed, denied

__all__ = ["DENIED_EXIT", "ENGINE_TARGET", "LineExplanation", "LogExplanation", "explain_log_lines"]
ALLOWED_LINE, DENIED_LINE, IGNORED_LINE, SKIPPED_LINE = "allowed", "denied", "ignored", "skipped"


@dataclass(frozen=True)
class LineExplanation:
    """One line: what the log says (``line``), the source's role, the requirements, each target's decision."""

    number: int
    status: str
    line: Optional[LogLine] = None
    error: str = ""  # why a skipped line could not be read (problem and fix)
    source_role: str = ""  # the role or source group the flow is judged for; '' when none holds the source
    source_roles: tuple[str, ...] = ()  # every role and group holding the source, the most specific first
    kind: str = ""
    judged_by: str = ""  # the target whose decision the line's status reads ('' : every target's)
    requirements: tuple[Need, ...] = ()
    decisions: tuple[Decision, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class LogExplanation:
    stack: str
    lines: tuple[LineExplanation, ...]

    def count(self, status: str) -> int:
        return sum(1 for line in self.lines if line.status == status)

    @property
    def denied(self) -> bool:
        return any(line.status == DENIED_LINE for line in self.lines)

    @property
    def read(self) -> int:
        return len(self.lines) - self.count(SKIPPED_LINE)


def _requirements(requirements: list[Requirement], line: LogLine, kind: str, held: tuple[str, ...]) -> list[Requirement]:
    """The stack's requirements for the flow: its destination and port, a protocol that carries what the log saw (a TCP
    flow may be TLS), and a role holding the source (any role when none does)."""
    carried = CARRIES.get(line.protocol, (line.protocol,))
    return [req for req, _ in needs(requirements, kind, line.destination, line.port, None)
            if req.protocol in carried and (not held or req.role in held)]


def _judged(name: str, judge, probe: Probe, req: Optional[Requirement], keys: set, roles: list[str]) -> Decision:
    if probe.role:
        return _decision(name, judge, probe, req, keys, roles)
    if judge.missing:
        return Decision(name, "", probe.destination, probe.protocol, str(probe.ports), NOT_ENFORCED, False, reason=judge.missing,
                        enforced=False)
    outcome = judge.decide(probe, probe.sources[0])  # a source of no role: the rules still see the address
    verdict = ALLOWED if outcome.allowed else DENIED if outcome.carried else NOT_ENFORCED
    # shown, not counted: the stack enforces nothing for a source in none of its roles (another stack's rules may cover it)
    return Decision(name, "", probe.destination, probe.protocol, str(probe.ports), verdict, False, outcome.rules, outcome.reason, outcome.notes,
                    enforced=False)


def _explain(number: int, line: LogLine, stack: str, requirements: list[Requirement], networks, targets, written) -> LineExplanation:
    if line.ignored or line.port is None:
        status = DENIED_LINE if line.action == "deny" else ALLOWED_LINE if line.action == "allow" else IGNORED_LINE
        return LineExplanation(number, status, line, notes=(line.ignored or "the line names no destination port",))
    kind = kind_of(line.destination)
    held = holders(line.source, networks)
    matched = _requirements(requirements, line, kind, held)
    role = next((r for r in held if any(req.role == r for req in matched)), held[0] if held else "")
    req = next((r for r in matched if r.role == role), None)
    notes = []
    if not held:
        notes.append(f"source {line.source} is in no role or source group of stack {stack}: the rules are asked about the address alone; a denial is shown, not counted (the stack enforces no flow from it)")
    decisions = []
    for name, judge, enforced in targets:
        probe = Probe(role, (line.source,), kind, line.destination, line.protocol, PortRange(line.port, line.port))
        decisions.append(_judged(name, judge, probe, req, {r.key for r in enforced}, sorted({r.role for r in enforced})))
    render_denies, render_allows = denied(decisions, line.engine), allowed(decisions, line.engine)
    judged_by = ENGINE_TARGET[line.engine] if any(d.target == ENGINE_TARGET[line.engine] for d in decisions) else ""
    if line.action == "deny" and render_allows:
        notes.append("the log says it was denied, the stack's rules allow it: the firewall that logged it does not run this stack's "
                     "rules yet (deploy them), or the flow left from elsewhere")
    elif line.action == "allow" and render_denies:
        notes.append("the log says it was allowed, the stack's rules deny it: once this stack is deployed, this flow stops")
    status = DENIED_LINE if line.action == "deny" or render_denies else ALLOWED_LINE
    return LineExplanation(number, status, line, source_role=role, source_roles=held, kind=kind, judged_by=judged_by,
                           requirements=tuple(Need.of(r, "", written) for r in matched), decisions=tuple(decisions), notes=tuple(notes))


def explain_log_lines(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement],
                      artefacts_by_target: Mapping[str, Mapping[str, str]], lines: Iterable[tuple[int, str]]) -> LogExplanation:
    requirements = list(requirements)
    networks = sources_of(profile)
    targets = judges(catalog, profile, requirements, artefacts_by_target)
    written = origins(catalog, profile)
    out = []
    header: Optional[list[str]] = None  # an Azure CSV export's columns: the rows after its header row are read with them
    for number, text in lines:
        if not text.strip():
            continue
        columns = csv_header(text)
        if columns is not None:
            header = columns
            continue
        try:
            line = parse_csv_row(text, header) if header is not None and engine_of(text) is None else parse_line(text)
        except LineError as exc:
            out.append(LineExplanation(number, SKIPPED_LINE, error=str(exc)))
            continue
        out.append(_explain(number, line, profile.stack, requirements, networks, targets, written))
    return LogExplanation(profile.stack, tuple(out))
