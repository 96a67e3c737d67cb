"""Exceptions raised by the egress core.

    EgressError                 base: every user-facing failure; the CLI prints it and exits 1
    ├── InputError              one bad value in a file: names file, location, field, value and the fix
    │   ├── CatalogError        a matrix/*.yaml file
    │   └── ProfileError        a stacks/Pulumi.<stack>.yaml file
    ├── ResolveError            the stack and the matrix do not fit together (e.g. an unresolved placeholder)
    └── ProjectError            no project found, unknown stack, unreadable directory
"""
from __future__ import annotations

from pathlib import Path

from .redact import redact, redact_message, redact_value


class EgressError(Exception):
    """Any failure a user can fix; the message is complete on its own (and never carries credentials or a key)."""

    def __init__(self, *args: object):
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class InputError(EgressError):
    """A single bad value in an input file."""

    def __init__(self, file: str | Path, where: str, field: str, value: object, problem: str, fix: str):
        self.file = str(file)
        self.where = where
        self.field = field
        self.value = redact_value(value, field)  # what may be shown: credentials masked, a secret or PEM text hidden
        self.problem = problem
        self.fix = fix
        location = f"{self.file}: {where}" if where else self.file
        super().__init__(redact_message(f"{location}: field '{field}' = {_show(self.value)}: {problem}. Fix: {fix}", value))


class CatalogError(InputError):
    """A defect in the required-endpoint matrix (matrix/*.yaml)."""


class ProfileError(InputError):
    """A defect in a stack's configuration (stacks/Pulumi.<stack>.yaml)."""


class ResolveError(EgressError):
    """The stack's settings cannot resolve a matrix entry."""


class ProjectError(EgressError):
    """The project directory or stack cannot be found."""


def _show(value: object) -> str:
    text = repr(value) if not isinstance(value, str) else f"'{value}'"
    return text if len(text) <= 120 else text[:117] + "..."
