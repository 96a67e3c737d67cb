"""Exceptions raised by the egress core.

    EgressError                 base: every user-facing failure; the CLI prints it and exits 1
    ├── InputError              one bad value in a file: names file, location, field, value and the fix
    │   ├── CatalogError        a matrix/*.yaml file
    │   └── ProfileError        a stacks/Pulumi.<stack>.yaml file (one problem, or all of a file's: ProfileError.of)
    ├── ResolveError            the stack and the matrix do not fit together (e.g. an unresolved placeholder)
    └── ProjectError            no project found, unknown stack, unreadable directory
"""
from __future__ import annotations

import re
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
    """A defect in a stack's configuration (stacks/Pulumi.<stack>.yaml); ``problems`` holds every one found (in line
    order), and the attributes are the first's, so a caller that reads one problem still can."""

    problems: tuple["ProfileError", ...] = ()

    @classmethod
    def of(cls, problems: "list[ProfileError]") -> "ProfileError":
        """One error for all of a file's problems: sorted by line (those without a line last), duplicates dropped,
        printed as a numbered list when there are several (as a compiler lists a file's errors)."""
        unique: dict[str, ProfileError] = {}
        for problem in problems:
            for single in problem.problems or (problem,):
                unique.setdefault(str(single), single)
        ordered = sorted(unique.values(), key=_problem_order)
        if len(ordered) == 1:
            return ordered[0]
        first = ordered[0]
        combined = cls.__new__(cls)
        combined.file, combined.where, combined.field, combined.value = first.file, first.where, first.field, first.value
        combined.problem, combined.fix, combined.problems = first.problem, first.fix, tuple(ordered)
        files = {p.file for p in ordered}
        head = f"{first.file}: {len(ordered)} problems" if len(files) == 1 else f"{len(ordered)} problems"
        items = []
        for number, single in enumerate(ordered, 1):
            text = str(single)
            if len(files) == 1 and text.startswith(f"{single.file}: "):
                text = text[len(single.file) + 2:]
            items.append(f"  {number}. {text}")
        Exception.__init__(combined, "\n".join([head + ":", *items]))
        return combined


class ResolveError(EgressError):
    """The stack's settings cannot resolve a matrix entry."""


class ProjectError(EgressError):
    """The project directory or stack cannot be found."""


def _problem_order(error: "InputError") -> tuple:
    line = re.search(r"\bline (\d+)", error.where or "")
    return (error.file, int(line.group(1)) if line else 1 << 30, error.field, str(error))


def _show(value: object) -> str:
    text = repr(value) if not isinstance(value, str) else f"'{value}'"
    return text if len(text) <= 120 else text[:117] + "..."
