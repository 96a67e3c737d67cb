"""The matrix as a whole: ``catalog export|check``, and the documents generated from it (``docs``)."""
from __future__ import annotations

from typing import Optional

import typer
from typing_extensions import Annotated

from .app import catalog_app, docs_app, ProjectOption, ExportFormat, ReportFormat, _format_option, _project, _err, _escape, _stack, _out, EgressError


@catalog_app.command("export")
def catalog_export(
    fmt: Annotated[ExportFormat, typer.Option("--format", "-f", help="Output format.")] = ExportFormat.json,
    project: ProjectOption = None,
) -> None:
    """Print the whole unresolved matrix as a JSON list."""
    from ..render import catalog_json

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
    from ..catalog_check import check_stack

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
        from ..json_out import catalog_check_json, dump

        _out(dump(catalog_check_json(catalog, checks)))


@docs_app.command("matrix")
def docs_matrix(
    check: Annotated[bool, typer.Option("--check", help="Fail if docs/MATRIX.md differs from what the matrix generates.")] = False,
    project: ProjectOption = None,
) -> None:
    """Write docs/MATRIX.md from the matrix (or check it is current)."""
    proj = _project(project)
    from ..docs import matrix_markdown

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
    from ..docs import pulumi_yaml_with_config

    text = pulumi_yaml_with_config(current)
    if check:
        if current != text:
            raise EgressError(f"{target}: config declarations out of date with the stack settings. Fix: run 'egress docs config'")
        return
    target.write_text(text, encoding="utf-8")
