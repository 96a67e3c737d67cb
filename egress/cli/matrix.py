"""The stack's resolved requirements (``egress matrix``), answered from a cache when nothing it read changed."""
from __future__ import annotations



import typer
from typing_extensions import Annotated

from .app import app, ProjectOption, StackOption, MatrixFormat, _project, _err, _escape, _stack, _out


@app.command("matrix")
def matrix_command(
    stack: StackOption = None,
    fmt: Annotated[MatrixFormat, typer.Option("--format", "-f", help="Output format.")] = MatrixFormat.table,
    project: ProjectOption = None,
) -> None:
    """Show the stack's resolved requirements: entry, feature, role, destination, protocol, ports, level, purpose, citation.
    The table fits the terminal ($COLUMNS, else its width; unbounded into a pipe); json, csv and md are for scripts."""
    from ..matrix_cache import cached

    proj = _project(project)
    stack = _stack(proj, stack)
    width = None
    if fmt is MatrixFormat.table:
        from ..tables import terminal_width

        width = terminal_width()

    def compute() -> tuple[str, list[str]]:
        from ..matrix_output import matrix_output

        return matrix_output(proj, stack, fmt.value, width)

    text, warnings = cached([str(proj.root), "matrix", stack, fmt.value, width], compute)  # a repeat skips the imports
    for warning in warnings:
        _err().print(f"[yellow]warning[/yellow]: {_escape(warning)}")
    _out(text)
