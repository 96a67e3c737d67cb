"""From a destination, a rule name or log lines to the requirements: ``explain``; from deny logs to proposals: ``learn``."""
from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from typing_extensions import Annotated

from .app import app, ProjectOption, StackOption, SummaryFormat, _project, _stack, _warn_expiry, _out, EgressError


class ExplainFormat(str, Enum):
    text = "text"
    json = "json"


@app.command("explain")
def explain_command(
    destination: Annotated[Optional[str], typer.Argument(help="DESTINATION[:PORT] (host, *.wildcard, IP, CIDR or URL); or a whole log "
                                                         "line (Azure Firewall, Network Firewall, Squid); or - for log lines on stdin.")] = None,
    stack: StackOption = None,
    role: Annotated[Optional[str], typer.Option("--role", help="Only this source role (nodes, seed, ...) or source group of the stack.")] = None,
    rule: Annotated[Optional[str], typer.Option("--rule", help="A rule name as a log shows it (Azure rule, AWS sid or group, squid ACL).")] = None,
    deployed: Annotated[Optional[Path], typer.Option("--deployed", help="Judge the resources of an egress preview (its resources.json) "
                                                     "instead of the stack's own render.", dir_okay=False)] = None,
    fmt: Annotated[ExplainFormat, typer.Option("--format", "-f", help="Output format.")] = ExplainFormat.text,
    project: ProjectOption = None,
) -> None:
    """Which requirements need DESTINATION[:PORT] (ids, purpose, citation) and which emitted rule of each target allows or
    denies it; or, with --rule, the requirements behind a rule name; or, for log lines (one as the argument, many on stdin),
    what each line says happened, the source's role, the requirements and what the stack's rules would do with that flow.

    Exit status: 0 everything explained is allowed; 3 something is denied: a log line says denied, or a target that
    enforces the flow denies it (DESTINATION[:PORT]: any target; a log line: the target running the engine that wrote
    it, azure for Azure Firewall, aws for Network Firewall, kubernetes for Squid, when the stack has it); a target that
    leaves the flow's requirement or role out is shown, not counted; 1 bad input (a single line unreadable, no line on
    stdin readable, or --rule naming no rule)."""
    import json
    from contextlib import nullcontext

    from ..deployed_file import blamed_on, load_deployed
    from ..explain import explain_destination, explain_rule, format_text, parse_destination_arg, to_json
    from ..explain.log_input import log_lines
    from ..targets import TARGETS

    lines = log_lines(destination, rule, role, sys.stdin)
    proj = _project(project)
    stack = _stack(proj, stack)
    catalog, profile, reqs = proj.requirements(stack)
    _warn_expiry(catalog)
    target, port = parse_destination_arg(destination) if destination is not None and lines is None else ("", None)  # the user's
    resources = load_deployed(deployed, stack) if deployed is not None else []
    with blamed_on(deployed, profile.targets, resources, catalog) if deployed is not None else nullcontext():  # an edited file
        if deployed is not None:
            artefacts = {name: TARGETS[name].deployed(resources) for name in profile.targets}
        else:
            artefacts = {name: TARGETS[name].render(TARGETS[name].compile(catalog, profile, reqs, f"{proj.stack_file(stack)}: stack '{stack}'"))
                         for name in profile.targets}
        if lines is not None:
            from ..explain.logs_cli import explain_logs

            code = explain_logs(catalog, profile, reqs, artefacts, lines, fmt is ExplainFormat.json, _out)
            if code:
                sys.exit(code)  # as learn does: typer.Exit would be returned, not raised, outside standalone mode
            return
        if rule is not None:
            result = explain_rule(catalog, reqs, artefacts, rule, profile)
        else:
            result = explain_destination(catalog, profile, reqs, artefacts, target, port, role)
    _out(json.dumps(to_json(result), indent=2) + "\n" if fmt is ExplainFormat.json else format_text(result))
    if rule is None:
        from ..explain.verdict import DENIED_EXIT, denied

        if denied(result.decisions):
            sys.exit(DENIED_EXIT)  # a target enforcing the flow denies it: the same rule as for a log line (verdict.py)
    if rule is not None and not result.found:
        raise EgressError(f"no rule of stack '{stack}' is named '{rule}'. Fix: copy the rule name from the log line (Azure rule, "
                          "AWS sid or rule group, squid ACL), or use a close name listed above")


@app.command("learn")
def learn_command(
    logs: Annotated[Optional[list[Path]], typer.Argument(help="Deny logs: Azure Firewall exports (CSV or az JSON), Network Firewall alert "
                                                         "logs (JSON lines, .gz too), Squid access.log.", dir_okay=False)] = None,
    stack: StackOption = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="auto, azure, aws-nfw or squid.")] = "auto",
    out: Annotated[Path, typer.Option("--out", "-o", help="The proposals file (YAML) to write; only an earlier proposals file is replaced.",
                                      dir_okay=False)] = Path("learn-proposals.yaml"),
    summary: Annotated[SummaryFormat, typer.Option("--summary", help="md: the Markdown summary; json: {\"stack\", \"out\", \"proposals\": "
                                                   "count, \"document\": the proposals file's content} (stdout; --format is the logs').")] = SummaryFormat.md,
    project: ProjectOption = None,
) -> None:
    """Read deny logs, group the denied flows by source role or group and destination, match them against the whole matrix,
    and write proposals for review (turn on a feature, or a stack entry with owner and reference to fill). Changes nothing.
    Prints a Markdown summary. Exits 0 when nothing is proposed, 3 when proposals were written, 1 on bad input."""
    from ..learn import PROPOSALS_EXIT, check_out, learn, write_out

    proj = _project(project)
    stack = _stack(proj, stack)
    catalog, profile, _ = proj.requirements(stack)
    _warn_expiry(catalog)  # an expired own entry may be why a flow is denied now
    check_out(out)
    learned = learn(catalog, profile, stack, [(path, str(path)) for path in logs or []], fmt)
    write_out(out, learned.yaml)
    if summary is SummaryFormat.json:
        from ..json_out import dump, learn_json

        _out(dump(learn_json(learned, str(out))))
    else:
        _out(learned.summary(str(out)))
    if learned.proposals:
        sys.exit(PROPOSALS_EXIT)
