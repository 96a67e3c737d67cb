"""Many stacks and their clusters: ``stacks`` (what each writes to), ``init`` (a new stack file), ``probe`` (live checks)."""
from __future__ import annotations

import sys
from enum import Enum
from typing import Optional

import typer
from typing_extensions import Annotated

from .app import app, ProjectOption, StackOption, ReportFormat, _format_option, _project, _err, _stack, _warn_expiry, _out, EgressError


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

    from ..fleet import document, fleet, github_output, select, table_lines

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
        from ..tables import fit_lines, terminal_width

        _out("\n".join(fit_lines(table_lines(select(stacks, list(only or []), known)), terminal_width())) + "\n")


@stacks_app.command("check")
def stacks_check(
    fmt: Annotated[ReportFormat, _format_option('{"ok", "stacks", "sharedPolicies": [{"lock", "stacks"}]}; refused stacks exit 1 '
                                                'with the error on stderr')] = ReportFormat.text,
    project: ProjectOption = None,
) -> None:
    """Refuse stacks that write to one Azure Firewall Policy with overlapping priority bands or the same group names."""
    from ..fleet import check_fleet, fleet

    stacks = fleet(_project(project))
    check_fleet(stacks)
    shared = sorted({s.lock for s in stacks if s.shares_with})
    _err().print(
        f"ok: {len(stacks)} stacks; {len(shared)} shared {'policy' if len(shared) == 1 else 'policies'}, each stack in its own band")
    if fmt is ReportFormat.json:
        from ..json_out import dump, stacks_check_json

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

    from ..probe.agent import PlanError, check_timeout, parse_resolve, run_plan, table
    from ..probe.markdown import markdown
    from ..probe.plan import build_plan, parse_samples

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
        from ..tables import fit_lines, terminal_width

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

    from ..init import Answers, init_stack, parse_sets

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
    commands = [(f"egress preview --stack {name}", "offline: what it would deploy, judged by the policy pack"),
                (f"pulumi stack init {name}", f"the real CLI: create the stack for this file, then: pulumi preview --stack {name}")]
    width = max(len(command) for command, _ in commands)
    lines += ["next:", *(f"  {command.ljust(width)}  # {why}" for command, why in commands)]
    _out("\n".join(lines) + "\n")
