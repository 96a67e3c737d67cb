"""The offline run of the stack: ``render``, ``preview``, ``diff`` against a base ref, and the policy gate on an event log."""
from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from typing_extensions import Annotated

from .app import app, ProjectOption, StackOption, ReportFormat, _format_option, _project, _err, _escape, _stack, _warn_expiry, _out, EgressError


# The targets' names without importing the targets (start-up); tests/test_cli_startup.py checks they are TARGETS' keys.
TARGET_NAMES = ("azure", "aws", "kubernetes")
Target = Enum("Target", {**{name: name for name in TARGET_NAMES}, "all": "all"}, type=str)  # type: ignore[misc]


@app.command("render")
def render_command(
    stack: StackOption = None,
    target: Annotated[Target, typer.Option("--target", "-t", help="Enforcement target to render; all: every target the stack lists.")] = Target("all"),  # type: ignore[valid-type]
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory; files go to OUT/<target>/. Only files an earlier run wrote "
                                      "(OUT/.egress-manifest.json) are replaced or removed.")] = Path("out"),
    fmt: Annotated[ReportFormat, _format_option('{"stack", "out", "targets": [{"target", "files", "summary"}], "kept", "notes", "warnings"}')] = ReportFormat.text,
    project: ProjectOption = None,
) -> None:
    """Write what each target would deploy, offline: azure, each rule collection group's REST body and each IP Group; aws,
    each rule group's CreateRuleGroup body, the firewall policy, the rules the engine runs and the security groups."""
    from ..outdir import write_output
    from ..targets import TARGETS

    proj = _project(project)
    stack = _stack(proj, stack)
    catalog, profile, reqs = proj.requirements(stack)
    _warn_expiry(catalog)
    names = list(profile.targets) if target.value == "all" else [target.value]
    if not names:
        raise EgressError(f"{proj.stack_file(stack)}: stack '{stack}' lists no targets (egress-matrix:targets). "
                          f"Fix: add them to the stack, or pass --target {'|'.join(TARGETS)}")
    plans = {name: TARGETS[name].compile(catalog, profile, reqs, f"{proj.stack_file(stack)}: stack '{stack}'") for name in names}
    from ..hub_facts import judge_offline

    hub_notes, hub_warnings = judge_offline(plans, catalog, profile, reqs, proj.root, stack)  # an existing policy, as preview judges it
    renders = {name: TARGETS[name].render(plan) for name, plan in plans.items()}
    files = {path: text for render in renders.values() for path, text in render.items()}
    written = write_output(out, files, names, proj.root)  # everything compiles before anything is written
    err = _err()
    for name, plan in plans.items():
        head, *details = TARGETS[name].summary(plan).split("\n")
        err.print(_escape("\n".join([f"wrote {head} to {out / name}", *details])))
    for line in [*(f"note: {n}" for n in hub_notes), *(f"warning: {w}" for w in hub_warnings)]:
        err.print(_escape(line))
    for note in written.kept:
        err.print(_escape(note))
    if fmt is ReportFormat.json:
        from ..json_out import dump, render_json

        _out(dump(render_json(stack, str(out), {name: list(render) for name, render in renders.items()},
                              {name: TARGETS[name].summary(plan) for name, plan in plans.items()}, written.kept, hub_notes, hub_warnings)))


def _pack_config(path: Optional[Path]) -> Optional[dict]:
    from egress_preview.pack_config import load_pack_config

    return None if path is None else load_pack_config(path)


class Phase(str, Enum):
    up = "up"
    preview = "preview"


@app.command("preview")
def preview_command(
    stack: StackOption = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder: resources.json and every target's render. Only files an earlier "
                                      "run wrote (OUT/.egress-manifest.json) are replaced or removed.")] = Path("out"),
    policy_config: Annotated[Optional[Path], typer.Option("--policy-pack-config", help="Policy pack config (JSON, as for pulumi --policy-pack-config).",
                                                          dir_okay=False)] = None,
    phase: Annotated[Phase, typer.Option("--phase", help="What the pack is shown: 'up' the resources as an update leaves them (all values "
                                         "known); 'preview' as a real `pulumi preview` shows them (what providers compute is unknown): "
                                         "a first deployment, or with --deployed an update of that state.")] = Phase.up,
    deployed: Annotated[Optional[Path], typer.Option("--deployed", help="With --phase preview: the resources.json of an earlier "
                                                     "`egress preview` of this stack, standing for the deployed state.", dir_okay=False)] = None,
    fmt: Annotated[ReportFormat, _format_option('{"stack", "phase", "resources", "resourceTypes", "requirements", "coverage": '
                                                '[{"target", "enforced", "allowed", "extra", "rulesChecked"}], "notes", "warnings", '
                                                '"mandatory", "advisory", "violations": [{"policy", "level", "severity", "resource", '
                                                '"message", "urn"}], ...}')] = ReportFormat.text,
    project: ProjectOption = None,
) -> None:
    """The main job offline: run the Pulumi program under the SDK's mocks with the stack's config, run the policy pack over
    what it registers (as the engine presents it at up, or at a preview with --phase preview), print a summary, write
    OUT/resources.json and every target's render. Exits 1 on a mandatory policy violation."""
    import os

    from egress_preview.preview import RESOURCES_JSON, preview, summary_lines, write
    from rich.console import Console
    from rich.markup import escape

    from ..outdir import check_out_dir
    from ..targets import TARGETS

    proj = _project(project)
    stack = _stack(proj, stack)
    err = _err()
    interactive = err.is_terminal and not os.environ.get("CI")
    config = _pack_config(policy_config)
    if deployed is not None and phase is not Phase.preview:
        raise EgressError(f"--deployed {deployed}: a deployed state is what a preview compares with. Fix: add --phase preview, or drop --deployed")
    from ..deployed_file import load_deployed

    prior = load_deployed(deployed, stack, deployed_state=True) if deployed is not None else None
    check_out_dir(out, proj.root, [*TARGETS, RESOURCES_JSON])  # before the slow part; write() checks everything again
    if interactive:
        with err.status("preview") as status:
            result = preview(proj, stack, config, progress=lambda text: status.update(text), phase=phase.value, prior=prior)
    else:
        result = preview(proj, stack, config, phase=phase.value, prior=prior)
    written = write(result, out, proj.root)
    _warn_expiry(proj.requirements(stack)[0])
    for note in written.kept:
        err.print(escape(note))
    wrote = f"wrote {out / 'resources.json'} and the renders of {', '.join(c.target for c in result.coverage) or 'no target'} to {out}"
    if fmt is ReportFormat.json:
        from ..json_out import dump, preview_json

        _out(dump(preview_json(result, str(out))))
        err.print(_escape(wrote))
    else:
        console = Console(width=None if sys.stdout.isatty() else 200, highlight=False, soft_wrap=True)
        for line in summary_lines(result):
            console.print(escape(line))
        console.print(wrote)
    if result.mandatory:
        raise EgressError(f"stack '{stack}': {len(result.mandatory)} mandatory policy violation(s); the first: {result.mandatory[0].line()}")


class DiffFormat(str, Enum):
    md = "md"
    json = "json"


@app.command("diff")
def diff_command(
    base: Annotated[str, typer.Option("--base", help="Git ref to compare against (e.g. origin/main). Its code is EXECUTED to preview it "
                                      "(a child process with a scrubbed environment and an empty temporary HOME: no cloud, Pulumi or Kubernetes "
                                      "credentials; it still runs as you and can read any file you can read); only pass a ref whose "
                                      "code you would run.")],
    stack: StackOption = None,
    fmt: Annotated[DiffFormat, typer.Option("--format", "-f", help="md: one pull-request comment; json: the same comparison for "
                                            "scripts.")] = DiffFormat.md,
    project: ProjectOption = None,
) -> None:
    """The preview of BASE against the working tree, as Markdown for one pull-request comment (or JSON with --format
    json): requirements added and removed (with citations), resources and rules added, changed (old -> new values),
    removed, replacements, and the policy results. Exits 1 when the change replaces or deletes a firewall resource (a
    danger to production) unless the stack sets allowFirewallReplacement."""
    from egress_preview.dangers import summary
    from egress_preview.diff import check_base_ref, diff_result
    from egress_preview.preview import preview, snapshot

    check_base_ref(base)  # before the preview: an option-like ref never reaches git
    proj = _project(project)
    stack = _stack(proj, stack)
    head = snapshot(preview(proj, stack))
    text, result = diff_result(proj.root, base, stack, head)
    if fmt is DiffFormat.json:
        import json

        from egress_preview.diff_json import diff_json

        text = json.dumps(diff_json(stack, base, result), indent=2, ensure_ascii=False) + "\n"
    _out(text)
    if result["blocking"]:
        raise EgressError(f"stack '{stack}': {summary(result['blocking'])}. Fix: make the change safely (README, 'Protection and migrations'): "
                          "a replacement needs egress-matrix:allowFirewallReplacement: true in this change, a deletion in an update before it")


@app.command("policy-events")
def policy_events_command(
    event_log: Annotated[Path, typer.Argument(help="The file a real pulumi preview wrote with --event-log FILE.", dir_okay=False)],
    policy_config: Annotated[Optional[Path], typer.Option("--policy-pack-config", help="The policy pack config given to that pulumi "
                                                          "preview (JSON): it sets which policies are mandatory.", dir_okay=False)] = None,
    fmt: Annotated[ReportFormat, _format_option('{"ok", "blocking", "advisory", "results": [{"policy", "pack", "level", "cantRun", '
                                                '"resource", "message", "blocking"}], "problems", "passed"}')] = ReportFormat.text,
    project: ProjectOption = None,
) -> None:
    """The policy gate of a real pulumi preview: list its policy results; exit 1 on a mandatory violation, on a "can't run"
    from a policy that is mandatory (the engine reports that as advisory and lets the preview pass), or on a log that does
    not show this pack judging a finished run."""
    from egress_preview.policy_events import check_event_log, report_lines

    gate = check_event_log(event_log, policy_config, _project(project).root / "policy")
    if fmt is ReportFormat.json:
        from ..json_out import dump, policy_gate_json

        _out(dump(policy_gate_json(gate)))
    else:
        _out("\n".join(report_lines(gate)) + "\n")
    if not gate.ok:
        first = gate.blocking[0].line() if gate.blocking else gate.problems[0]
        raise EgressError(f"{event_log}: the policy gate failed ({len(gate.blocking)} blocking result(s), {len(gate.problems)} problem(s) "
                          f"with the log); the first: {first}. Fix: fix what a violation names; a policy that can't run met a value "
                          "unknown until a resource is created: make that value known at preview (README, 'Where the policy gate is')")
