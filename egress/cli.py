"""The ``egress`` command line: a thin layer over the core.

Exit codes: 0 ok, 1 user error (one clear message, no traceback), 2 usage error.
"""
from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from typing_extensions import Annotated

from .errors import EgressError

if TYPE_CHECKING:
    from .project import Project

# Start-up: each command imports what it uses INSIDE its function (rich, the catalog, pydantic models, the targets,
# pulumi), so `egress --help` and `egress matrix` load only their own (tests/test_cli_startup.py). Help is click's plain
# text (rich_markup_mode=None): typer's rich help alone imports rich's Markdown, Syntax and Traceback (pygments).
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Cited, machine-readable egress requirements for Kubernetes clusters.")
catalog_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Inspect and check the required-endpoint matrix.")
docs_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Generate the documentation that is derived from the matrix.")
app.add_typer(catalog_app, name="catalog")
app.add_typer(docs_app, name="docs")

ProjectOption = Annotated[Optional[Path], typer.Option("--project", help="Project directory (default: the nearest directory with Pulumi.yaml).",
                                                        file_okay=False)]

# Every command that works on one stack: --stack, else PULUMI_STACK, else Pulumi's selected stack (egress/stack_choice.py).
StackOption = Annotated[Optional[str], typer.Option("--stack", "-s", show_default=False,
                                                    help="Stack name (stacks/Pulumi.<stack>.yaml); default: $PULUMI_STACK, else the stack "
                                                    "`pulumi stack select` chose for this project.")]


class MatrixFormat(str, Enum):
    table = "table"
    md = "md"
    csv = "csv"
    json = "json"


class ExportFormat(str, Enum):
    json = "json"


class ReportFormat(str, Enum):
    """text for people; json for scripts: one document on stdout, messages on stderr (egress/json_out.py)."""
    text = "text"
    json = "json"


class SummaryFormat(str, Enum):
    md = "md"
    json = "json"


def _format_option(shape: str):
    return typer.Option("--format", "-f", help=f"text, or json: {shape} (stdout; messages stay on stderr).")


def _project(project: Optional[Path]) -> Project:
    from .project import find_project, open_project

    return open_project(project) if project else find_project()


def _err():
    """The console for messages (stderr); rich is imported only when a command has something to say."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _stack(proj: Project, given: Optional[str]) -> str:
    """The stack the user means; when not given with --stack, say on stderr where the name came from."""
    from .stack_choice import choose_stack

    choice = choose_stack(proj.root, proj.stacks(), given)
    if choice.note():
        _err().print(_escape(choice.note()))
    return choice.name


def _warn_expiry(catalog) -> None:
    """Own entries that expired or expire soon: on stderr, so the output stays the same and the warning is seen."""
    from .catalog.own import expiry_notices

    for notice in expiry_notices(catalog):
        _err().print(f"[yellow]warning[/yellow]: {_escape(notice)}")


def _out(text: str) -> None:
    from .redact import redact

    sys.stdout.write(redact(text))  # explain, diff, exports: whatever they quote, no credentials or private key


@app.command("matrix")
def matrix_command(
    stack: StackOption = None,
    fmt: Annotated[MatrixFormat, typer.Option("--format", "-f", help="Output format.")] = MatrixFormat.table,
    project: ProjectOption = None,
) -> None:
    """Show the stack's resolved requirements: entry, feature, role, destination, protocol, ports, level, purpose, citation.
    The table fits the terminal ($COLUMNS, else its width; unbounded into a pipe); json, csv and md are for scripts."""
    from .matrix_cache import cached

    proj = _project(project)
    stack = _stack(proj, stack)
    width = None
    if fmt is MatrixFormat.table:
        from .tables import terminal_width

        width = terminal_width()

    def compute() -> tuple[str, list[str]]:
        from .matrix_output import matrix_output

        return matrix_output(proj, stack, fmt.value, width)

    text, warnings = cached([str(proj.root), "matrix", stack, fmt.value, width], compute)  # a repeat skips the imports
    for warning in warnings:
        _err().print(f"[yellow]warning[/yellow]: {_escape(warning)}")
    _out(text)


# The targets' names without importing the targets (start-up); tests/test_cli_startup.py checks they are TARGETS' keys.
TARGET_NAMES = ("azure", "aws", "kubernetes")
Target = Enum("Target", {**{name: name for name in TARGET_NAMES}, "all": "all"}, type=str)  # type: ignore[misc]


@app.command("render")
def render_command(
    stack: StackOption = None,
    target: Annotated[Target, typer.Option("--target", "-t", help="Enforcement target to render; all: every target the stack lists.")] = Target("all"),  # type: ignore[valid-type]
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory; files go to OUT/<target>/. Only files an earlier run wrote "
                                      "(OUT/.egress-manifest.json) are replaced or removed.")] = Path("out"),
    fmt: Annotated[ReportFormat, _format_option('{"stack", "out", "targets": [{"target", "files", "summary"}], "kept"}')] = ReportFormat.text,
    project: ProjectOption = None,
) -> None:
    """Write what each target would deploy, offline: azure, each rule collection group's REST body and each IP Group; aws,
    each rule group's CreateRuleGroup body, the firewall policy, the rules the engine runs and the security groups."""
    from .outdir import write_output
    from .targets import TARGETS

    proj = _project(project)
    stack = _stack(proj, stack)
    catalog, profile, reqs = proj.requirements(stack)
    _warn_expiry(catalog)
    names = list(profile.targets) if target.value == "all" else [target.value]
    if not names:
        raise EgressError(f"{proj.stack_file(stack)}: stack '{stack}' lists no targets (egress-matrix:targets). "
                          f"Fix: add them to the stack, or pass --target {'|'.join(TARGETS)}")
    plans = {name: TARGETS[name].compile(catalog, profile, reqs, f"{proj.stack_file(stack)}: stack '{stack}'") for name in names}
    from .hub_facts import judge_offline

    hub_notes, hub_warnings = judge_offline(plans, catalog, profile, reqs, proj.root, stack)  # an existing policy, as preview judges it
    files = {path: text for name, plan in plans.items() for path, text in TARGETS[name].render(plan).items()}
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
        from .json_out import dump, render_json

        _out(dump(render_json(stack, str(out), {name: list(TARGETS[name].render(plan)) for name, plan in plans.items()},
                              {name: TARGETS[name].summary(plan) for name, plan in plans.items()}, written.kept)))


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

    from .outdir import check_out_dir
    from .targets import TARGETS

    proj = _project(project)
    stack = _stack(proj, stack)
    err = _err()
    interactive = err.is_terminal and not os.environ.get("CI")
    config = _pack_config(policy_config)
    if deployed is not None and phase is not Phase.preview:
        raise EgressError(f"--deployed {deployed}: a deployed state is what a preview compares with. Fix: add --phase preview, or drop --deployed")
    from .deployed_file import load_deployed

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
        from .json_out import dump, preview_json

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
                                      "(a child process with a scrubbed environment: no cloud, Pulumi or Kubernetes credentials); "
                                      "only pass a ref whose code you would run.")],
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
        from .json_out import dump, policy_gate_json

        _out(dump(policy_gate_json(gate)))
    else:
        _out("\n".join(report_lines(gate)) + "\n")
    if not gate.ok:
        first = gate.blocking[0].line() if gate.blocking else gate.problems[0]
        raise EgressError(f"{event_log}: the policy gate failed ({len(gate.blocking)} blocking result(s), {len(gate.problems)} problem(s) "
                          f"with the log); the first: {first}. Fix: fix what a violation names; a policy that can't run met a value "
                          "unknown until a resource is created: make that value known at preview (README, 'Where the policy gate is')")


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

    from .deployed_file import blamed_on, load_deployed
    from .explain import explain_destination, explain_rule, format_text, parse_destination_arg, to_json
    from .explain.log_input import log_lines
    from .targets import TARGETS

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
            from .explain.logs_cli import explain_logs

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
        from .explain.verdict import DENIED_EXIT, denied

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
    from .learn import PROPOSALS_EXIT, check_out, learn

    proj = _project(project)
    stack = _stack(proj, stack)
    catalog, profile, _ = proj.requirements(stack)
    _warn_expiry(catalog)  # an expired own entry may be why a flow is denied now
    check_out(out)
    learned = learn(catalog, profile, stack, [(path, str(path)) for path in logs or []], fmt)
    out.write_text(learned.yaml, encoding="utf-8")
    if summary is SummaryFormat.json:
        from .json_out import dump, learn_json

        _out(dump(learn_json(learned, str(out))))
    else:
        _out(learned.summary(str(out)))
    if learned.proposals:
        sys.exit(PROPOSALS_EXIT)


class ProxyExportFormat(str, Enum):
    squid = "squid"
    pac = "pac"
    csv = "csv"
    json = "json"


@app.command("export")
def export_command(
    for_: Annotated[str, typer.Option("--for", help="proxy: what a corporate proxy the stack does not deploy must allow, what goes "
                                            "direct, what it must not inspect; allowlists: this cluster's addresses other teams allowlist.")],
    stack: StackOption = None,
    fmt: Annotated[ProxyExportFormat, typer.Option("--format", "-f", help="squid, pac, csv or json (--for allowlists: json only).")] = ProxyExportFormat.json,
    pac_default: Annotated[str, typer.Option("--pac-default", help="PAC: the final line for what neither noProxy nor the list names: "
                                             "proxy (as the cluster's clients do) or direct.")] = "proxy",
    project: ProjectOption = None,
) -> None:
    """Lists for other teams: --for proxy (the stack's clusterProxy and httpProxy) gives the proxy team the destinations that
    must traverse the proxy after noProxy (Squid, PAC, CSV or JSON, with URL paths and TLS-inspection exemptions), and the
    firewall team what goes direct; --for allowlists the allowlist exports of `egress matrix` as JSON."""
    import json

    if for_ not in ("proxy", "allowlists"):
        raise EgressError(f"--for '{for_}' is not a list egress export writes. Fix: use --for proxy (a corporate proxy's allowlist) or "
                          "--for allowlists (this cluster's addresses for other teams' allowlists)")
    proj = _project(project)
    stack = _stack(proj, stack)
    catalog, profile, reqs = proj.requirements(stack)
    _warn_expiry(catalog)
    if for_ == "allowlists":
        if fmt is not ProxyExportFormat.json:
            raise EgressError(f"--for allowlists has no --format {fmt.value}. Fix: use --format json")
        from .exports import allowlist_exports

        _out(json.dumps(allowlist_exports(catalog, profile), indent=2) + "\n")
        return
    from .proxy_export import proxy_export, to_csv, to_json
    from .proxy_export_pac import pac_file
    from .proxy_export_squid import squid_fragment

    export = proxy_export(catalog, profile, reqs, str(proj.stack_file(stack).relative_to(proj.root)))
    if fmt is ProxyExportFormat.squid:
        roles = {r.role for r in export.traverse}
        _out(squid_fragment(export, catalog, {role: profile.role_sources(role) for role in roles}))
    elif fmt is ProxyExportFormat.pac:
        _out(pac_file(export, pac_default))
    elif fmt is ProxyExportFormat.csv:
        _out(to_csv(export))
    else:
        _out(to_json(export))


# install-config platform names -> the Infrastructure platform type the operator keys on
_PLATFORM_TYPES = {"aws": "AWS", "gcp": "GCP", "azure": "Azure", "openstack": "OpenStack", "vsphere": "VSphere", "baremetal": "BareMetal",
                   "none": "None", "nutanix": "Nutanix", "ovirt": "oVirt", "ibmcloud": "IBMCloud", "powervs": "PowerVS", "external": "External"}


@app.command("noproxy")
def noproxy_command(
    platform: Annotated[Optional[str], typer.Option("--platform", help="Infrastructure platform type (AWS, GCP, Azure, OpenStack, VSphere, ... or the install-config name).")] = None,
    region: Annotated[str, typer.Option("--region", help="AWS region (platformStatus.aws.region).")] = "",
    cluster_name: Annotated[str, typer.Option("--cluster-name", help="Cluster name: the internal API host is api-int.<name>.<base domain>.")] = "",
    base_domain: Annotated[str, typer.Option("--base-domain", help="Base domain.")] = "",
    service_network: Annotated[Optional[list[str]], typer.Option("--service-network", help="Service network CIDR (repeatable).")] = None,
    cluster_network: Annotated[Optional[list[str]], typer.Option("--cluster-network", help="Cluster (pod) network CIDR (repeatable).")] = None,
    machine_network: Annotated[Optional[list[str]], typer.Option("--machine-network", help="Machine network CIDR (repeatable).")] = None,
    no_proxy: Annotated[str, typer.Option("--no-proxy", help="Proxy spec.noProxy, as written.")] = "",
    http_proxy: Annotated[str, typer.Option("--http-proxy", help="Proxy spec.httpProxy.")] = "",
    https_proxy: Annotated[str, typer.Option("--https-proxy", help="Proxy spec.httpsProxy.")] = "",
    azure_cloud_name: Annotated[str, typer.Option("--azure-cloud-name", help="platformStatus.azure.cloudName (Azure).")] = "",
    fmt: Annotated[ReportFormat, _format_option('{"noProxy": the string, "entries": its comma-separated entries}')] = ReportFormat.text,
    project: ProjectOption = None,
) -> None:
    """Print the status.noProxy OpenShift's network operator computes for a Proxy (last line of output), after its own
    validation: an invalid Proxy exits 1 with the operator's message."""
    from .noproxy import NoProxyInputs, merge_no_proxy
    from .targets.kubernetes.openshift_checks import ProxyValidationError, degraded_message, validate_proxy_spec

    note = _err()
    if http_proxy or https_proxy or no_proxy:
        try:
            validate_proxy_spec(http_proxy, https_proxy, no_proxy)
        except ProxyValidationError as exc:
            raise EgressError(degraded_message(str(exc))) from None
    if (http_proxy or https_proxy) and no_proxy != "*":
        if not cluster_name or not base_domain:
            raise EgressError("internal api server url missing from infrastructure config 'cluster'. Fix: pass --cluster-name and --base-domain")
        if not service_network:
            note.print("note: no --service-network given; a running cluster's network status always has one")
        if not cluster_network:
            note.print("note: no --cluster-network given; a running cluster's network status always has one")
    platform_type = _PLATFORM_TYPES.get((platform or "").lower(), platform) if platform else None
    if platform_type == "AWS" and not region:
        note.print("note: no --region: the operator would add '..compute.internal' for an empty AWS region")
    facts = NoProxyInputs(platform=platform_type, aws_region=region, azure_cloud_name=azure_cloud_name,
                          api_internal_host=f"api-int.{cluster_name}.{base_domain}" if cluster_name and base_domain else "",
                          machine_networks=tuple(machine_network or ()), service_networks=tuple(service_network or ()),
                          cluster_networks=tuple(cluster_network or ()))
    merged = merge_no_proxy(_project(project).catalog(), facts, http_proxy, https_proxy, no_proxy)
    if fmt is ReportFormat.json:
        from .json_out import dump

        _out(dump({"noProxy": merged, "entries": [e for e in merged.split(",") if e]}))
    else:
        _out(merged + "\n")


@catalog_app.command("export")
def catalog_export(
    fmt: Annotated[ExportFormat, typer.Option("--format", "-f", help="Output format.")] = ExportFormat.json,
    project: ProjectOption = None,
) -> None:
    """Print the whole unresolved matrix as a JSON list."""
    from .render import catalog_json

    _out(catalog_json(_project(project).catalog()))


@catalog_app.command("check")
def catalog_check(
    stack: Annotated[Optional[str], typer.Option("--stack", "-s", help="Check only this stack (default: every stack).")] = None,
    fmt: Annotated[ReportFormat, _format_option('{"ok", "entries", "platforms", "sources", "stacks": [{"stack", "own", "resolved", '
                                                '"expired", "groups", "warnings"}]}; a failed check exits 1 with the error on stderr')] = ReportFormat.text,
    project: ProjectOption = None,
) -> None:
    """Validate the matrix and every stack against it, with each stack's own catalogs and entries (the same checks, and
    the guard rails for own entries); print what each stack adds, and warn about own entries that repeat a vendor entry
    or expire soon."""
    from .catalog_check import check_stack

    proj = _project(project)
    catalog = proj.catalog()
    # No --stack means every stack here (not PULUMI_STACK): a check of the project; a named one is validated as elsewhere.
    checks = [check_stack(proj, name) for name in ([_stack(proj, stack)] if stack is not None else proj.stacks())]
    err = _err()
    err.print(f"ok: {len(catalog.entries)} entries in {len(catalog.platforms)} platforms, {len(catalog.sources)} sources, "
              f"{len(checks)} {'stack resolves' if len(checks) == 1 else 'stacks resolve'}")
    for check in checks:
        if check.own or check.expired or check.groups:
            err.print(_escape(check.line()))
        for warning in check.warnings:
            err.print(f"[yellow]warning[/yellow]: {_escape(warning)}")
    if fmt is ReportFormat.json:
        from .json_out import catalog_check_json, dump

        _out(dump(catalog_check_json(catalog, checks)))


@docs_app.command("matrix")
def docs_matrix(
    check: Annotated[bool, typer.Option("--check", help="Fail if docs/MATRIX.md differs from what the matrix generates.")] = False,
    project: ProjectOption = None,
) -> None:
    """Write docs/MATRIX.md from the matrix (or check it is current)."""
    proj = _project(project)
    from .docs import matrix_markdown

    text = matrix_markdown(proj.catalog())
    target = proj.root / "docs" / "MATRIX.md"
    if check:
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            raise EgressError(f"{target}: out of date with the matrix. Fix: run 'egress docs matrix'")
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


@docs_app.command("policies")
def docs_policies(
    check: Annotated[bool, typer.Option("--check", help="Fail if docs/POLICIES.md differs from what the policy pack generates.")] = False,
    project: ProjectOption = None,
) -> None:
    """Write docs/POLICIES.md from the policy pack and its fixtures (or check it is current)."""
    from egress_preview.policy_docs import policies_markdown

    root = _project(project).root
    text = policies_markdown(root / "policy" / "fixtures")
    target = root / "docs" / "POLICIES.md"
    if check:
        if (target.read_text(encoding="utf-8") if target.exists() else "") != text:
            raise EgressError(f"{target}: out of date with the policy pack. Fix: run 'egress docs policies'")
        return
    target.write_text(text, encoding="utf-8")


@docs_app.command("config")
def docs_config(
    check: Annotated[bool, typer.Option("--check", help="Fail if Pulumi.yaml's config declarations differ from the stack settings.")] = False,
    project: ProjectOption = None,
) -> None:
    """Rewrite the config: section of Pulumi.yaml from the stack settings the code reads (or check it is current)."""
    target = _project(project).root / "Pulumi.yaml"
    current = target.read_text(encoding="utf-8")
    from .docs import pulumi_yaml_with_config

    text = pulumi_yaml_with_config(current)
    if check:
        if current != text:
            raise EgressError(f"{target}: config declarations out of date with the stack settings. Fix: run 'egress docs config'")
        return
    target.write_text(text, encoding="utf-8")


class StacksFormat(str, Enum):
    table = "table"
    json = "json"
    github_output = "github-output"


stacks_app = typer.Typer(help="The stacks in stacks/: what each writes to, and the job matrices of the workflows.")
app.add_typer(stacks_app, name="stacks")


@stacks_app.callback(invoke_without_command=True)
def stacks_command(
    ctx: typer.Context,
    fmt: Annotated[StacksFormat, typer.Option("--format", "-f", help="table; json (per stack what it writes to, and the deploy matrices); "
                                              "github-output (name=JSON lines for $GITHUB_OUTPUT: stacks, first, parallel, serial).")] = StacksFormat.table,
    only: Annotated[Optional[list[str]], typer.Option("--only", help="List only this stack (repeatable).")] = None,
    first: Annotated[Optional[list[str]], typer.Option("--first", help="A stack a deployment updates before the others (repeatable).")] = None,
    project: ProjectOption = None,
) -> None:
    """Every stack in stacks/ with the policies, firewalls and clusters it writes to, its priority band, and its lock:
    stacks that write to one existing Azure Firewall Policy share one, so their deployments run one at a time."""
    if ctx.invoked_subcommand is not None:
        return
    import json

    from .fleet import document, fleet, github_output, select, table_lines

    proj = _project(project)
    stacks = fleet(proj)
    known = [s.stack for s in stacks]
    select(stacks, list(first or []), known)  # a --first that names no stack is as wrong as an --only
    doc = document(stacks, select(stacks, list(only or []), known), list(first or []))
    if fmt is StacksFormat.json:
        _out(json.dumps(doc, indent=2) + "\n")
    elif fmt is StacksFormat.github_output:
        _out(github_output(doc))
    else:
        from .tables import fit_lines, terminal_width

        _out("\n".join(fit_lines(table_lines(select(stacks, list(only or []), known)), terminal_width())) + "\n")


@stacks_app.command("check")
def stacks_check(
    fmt: Annotated[ReportFormat, _format_option('{"ok", "stacks", "sharedPolicies": [{"lock", "stacks"}]}; refused stacks exit 1 '
                                                'with the error on stderr')] = ReportFormat.text,
    project: ProjectOption = None,
) -> None:
    """Refuse stacks that write to one Azure Firewall Policy with overlapping priority bands or the same group names."""
    from .fleet import check_fleet, fleet

    stacks = fleet(_project(project))
    check_fleet(stacks)
    shared = sorted({s.lock for s in stacks if s.shares_with})
    _err().print(
        f"ok: {len(stacks)} stacks; {len(shared)} shared {'policy' if len(shared) == 1 else 'policies'}, each stack in its own band")
    if fmt is ReportFormat.json:
        from .json_out import dump, stacks_check_json

        _out(dump(stacks_check_json(stacks)))


class ProbeFormat(str, Enum):
    table = "table"
    json = "json"
    md = "md"


@app.command("probe")
def probe_command(
    stack: StackOption = None,
    role: Annotated[str, typer.Option("--role", help="The role (or source group) whose egress to check, from where it runs.")] = "nodes",
    fmt: Annotated[ProbeFormat, typer.Option("--format", "-f", help="Report format.")] = ProbeFormat.table,
    resolve: Annotated[Optional[list[str]], typer.Option("--resolve", help="HOST=IP: connect to IP for HOST (split DNS, tests); repeatable.")] = None,
    sample: Annotated[Optional[list[str]], typer.Option("--sample", help="'*.DOMAIN=HOST': probe a wildcard requirement on HOST; repeatable.")] = None,
    plan_only: Annotated[bool, typer.Option("--plan-only", help="Print the plan (JSON, what the Kubernetes Job gets) and probe nothing.")] = False,
    timeout: Annotated[str, typer.Option("--timeout", help="Seconds per check.")] = "5",
    total_timeout: Annotated[str, typer.Option("--total-timeout", help="Seconds for all checks.")] = "300",
    project: ProjectOption = None,
) -> None:
    """Check every resolved requirement of a role from here: DNS, TCP, TLS with the host as SNI, HTTP where the requirement is
    HTTP or names a path, NTP; through the stack's proxy where the role uses one. Plus near misses that must be denied (if
    one gets through, the firewall is not enforcing). Exits 1 when a check fails."""
    import json

    from .probe.agent import PlanError, check_timeout, parse_resolve, run_plan, table
    from .probe.markdown import markdown
    from .probe.plan import build_plan, parse_samples

    try:
        per_check, total = check_timeout(timeout), check_timeout(total_timeout, "--total-timeout")
        hosts = parse_resolve(resolve)
    except PlanError as exc:
        raise EgressError(str(exc)) from None
    proj = _project(project)
    stack = _stack(proj, stack)
    catalog, profile, reqs = proj.requirements(stack)
    _warn_expiry(catalog)
    plan = build_plan(catalog, profile, reqs, role, hosts=hosts, samples=parse_samples(sample), timeout=per_check, total_timeout=total,
                      source=f"{proj.stack_file(stack)}: stack '{stack}'")
    if plan_only:
        _out(json.dumps(plan, indent=2) + "\n")
        return
    report = run_plan(plan)
    if fmt is ProbeFormat.table:
        from .tables import fit_lines, terminal_width

        lines = table(report).splitlines()  # the agent's own table (it runs in the Job too), fitted here: DETAIL wraps under itself
        detail = lines[0].find("DETAIL") if lines else -1
        _out("\n".join(fit_lines(lines, terminal_width(), column=detail if detail > 0 else None)) + "\n")
    else:
        _out(json.dumps(report, indent=2) + "\n" if fmt is ProbeFormat.json else markdown(report))
    if not report["ok"]:
        failed = f"{report['counts']['failed']} check(s) failed (listed above)" if report["counts"]["failed"] else ""
        unproven = "enforcement NOT proven: no near miss was conclusively denied" if report["enforcement"] == "not proven" else ""
        raise EgressError(f"stack '{stack}' role '{role}': {'; '.join(m for m in (failed, unproven) if m)}")


@app.command("init")
def init_command(
    stack: Annotated[Optional[str], typer.Argument(help="Stack name: the file becomes stacks/Pulumi.<STACK>.yaml.", show_default=False)] = None,
    platform: Annotated[Optional[list[str]], typer.Option("--platform", "-p", help="A platform of the matrix (aks, kkp, openshift, ibm-vpc, ...); repeatable.")] = None,
    cloud: Annotated[Optional[str], typer.Option("--cloud", help="AKS: azure-public (default), azure-china or azure-usgov (or az's AzureCloud, ...).")] = None,
    location: Annotated[Optional[str], typer.Option("--location", help="Azure location, e.g. westeurope.")] = None,
    region: Annotated[Optional[str], typer.Option("--region", help="AWS region (KKP on AWS, OpenShift on AWS, target aws) or IBM Cloud region (ibm-vpc).")] = None,
    openshift_platform: Annotated[Optional[str], typer.Option("--openshift-platform", help="OpenShift: AWS, Azure, VSphere, BareMetal, None, ... (install-config names too).")] = None,
    base_domain: Annotated[Optional[str], typer.Option("--base-domain", help="OpenShift: install-config baseDomain.")] = None,
    cluster_name: Annotated[Optional[str], typer.Option("--cluster-name", help="The name the firewall resources carry (default: the stack name).")] = None,
    target: Annotated[Optional[list[str]], typer.Option("--target", "-t", help="azure, aws or kubernetes; repeatable (none: a matrix-only stack).")] = None,
    node_sources: Annotated[Optional[list[str]], typer.Option("--node-sources", help="CIDR of the nodes' subnet; repeatable.")] = None,
    feature: Annotated[Optional[list[str]], typer.Option("--feature", help="A feature of the platforms to turn on; repeatable.")] = None,
    http_proxy: Annotated[Optional[str], typer.Option("--http-proxy", help="The corporate proxy's URL, without credentials (target kubernetes).")] = None,
    azure_policy_id: Annotated[Optional[str], typer.Option("--azure-policy-id", help="An existing Firewall Policy to attach to (resource id).")] = None,
    priority_base: Annotated[Optional[int], typer.Option("--priority-base", help="azurePriorityBase (default on an existing policy: the first band no other stack uses).")] = None,
    resource_group: Annotated[Optional[str], typer.Option("--resource-group", help="Target azure: the resource group of the policy and IP Groups.")] = None,
    subscription_id: Annotated[Optional[str], typer.Option("--subscription-id", help="Target azure: the subscription of that resource group.")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="Any other stack setting as KEY=VALUE (VALUE in YAML: [a, b], true, 3000); repeatable.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing stack file (the replaced text is shown as a diff).")] = False,
    no_input: Annotated[bool, typer.Option("--no-input", help="Ask nothing: a missing answer is an error naming its option.")] = False,
    project: ProjectOption = None,
) -> None:
    """Write a commented stack file for a platform from a few answers (options, or questions in a terminal), validated as
    every command reads it, and print the next commands. Never overwrites a stack file without --force."""
    from rich.console import Console
    from rich.markup import escape

    from .init import Answers, init_stack, parse_sets

    proj = _project(project)
    given = {"cloud": cloud, "location": location, "openshiftPlatform": openshift_platform, "baseDomain": base_domain,
             "clusterName": cluster_name, "httpProxy": http_proxy, "azurePolicyId": azure_policy_id, "azurePriorityBase": priority_base,
             "azureResourceGroup": resource_group, "azureSubscriptionId": subscription_id, "nodeSources": list(node_sources or []) or None}
    if region is not None:
        given["ibmRegion" if "ibm-vpc" in (platform or []) else "awsRegion"] = region
    values = {**parse_sets(list(set_ or []), f"stacks/Pulumi.{stack or '<stack>'}.yaml"), **{k: v for k, v in given.items() if v is not None}}
    answers = Answers(stack, [p for item in platform or [] for p in item.split(",") if p], list(feature or []), list(target or []), values, force)
    err = Console(stderr=True, highlight=False, soft_wrap=True)

    def ask(question) -> str:
        return str(typer.prompt(question.question, default=question.default, show_default=question.default is not None))

    interactive = not no_input and sys.stdin.isatty()
    if interactive:
        err.print("egress init: a few questions (Ctrl-C to stop; every answer is also an option, see egress init --help)")
    written = init_stack(proj, answers, ask if interactive else None)
    if written.replaced:
        err.print(escape(written.replaced.rstrip("\n")))
    name = answers.stack
    lines = [f"wrote {written.path.relative_to(proj.root)}"]
    if written.later:
        lines.append(f"to fill when known (commented in the file): {', '.join(written.later)}")
    lines += ["next:", f"  egress preview --stack {name}     # offline: what it would deploy, judged by the policy pack",
              f"  pulumi stack init {name}         # the real CLI: create the stack for this file, then: pulumi preview --stack {name}"]
    _out("\n".join(lines) + "\n")


def main() -> None:
    try:
        app(standalone_mode=False)
    except EgressError as exc:
        from .redact import redact

        _err().print(f"[red]{type(exc).__name__}[/red]: {_escape(redact(str(exc)))}")
        sys.exit(1)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(1)
    except Exception as exc:
        # Usage errors come from click (vendored inside newer typer releases): show them as click would.
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
