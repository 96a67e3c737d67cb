"""The ``egress`` command line's shared parts: the app, the options every command takes, and the error handling of ``main``.

Exit codes: 0 ok, 1 user error (one clear message, no traceback), 2 usage error.
"""
from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from typing_extensions import Annotated

from ..errors import EgressError

if TYPE_CHECKING:
    from ..project import Project

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
    from ..project import find_project, open_project

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
    from ..stack_choice import choose_stack

    choice = choose_stack(proj.root, proj.stacks(), given)
    if choice.note():
        _err().print(_escape(choice.note()))
    return choice.name


def _warn_expiry(catalog) -> None:
    """Own entries that expired or expire soon: on stderr, so the output stays the same and the warning is seen."""
    from ..catalog.own import expiry_notices

    for notice in expiry_notices(catalog):
        _err().print(f"[yellow]warning[/yellow]: {_escape(notice)}")


def _out(text: str) -> None:
    from ..redact import redact

    sys.stdout.write(redact(text))  # explain, diff, exports: whatever they quote, no credentials or private key


def main() -> None:
    try:
        app(standalone_mode=False)
    except EgressError as exc:
        from ..redact import redact

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
