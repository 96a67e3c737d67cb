"""JSON that egress did not write (a resources.json, a policy pack config, a pulumi event log, an az export): one reader
that turns every way such a file can fail into one ``NotJSON`` reason, so each command words one clear error.

``json.loads`` raises ValueError for bad syntax (and for an integer of more than 4300 digits) and RecursionError for
nesting deeper than the interpreter's stack ('[' * 200000); a document that parses just under that limit would still
overflow the first recursive walk over it, so nesting is bounded here, far above any file these commands read.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

MAX_DEPTH = 128  # arrays and objects inside each other; preview's resources.json nests about 12 deep

__all__ = ["MAX_DEPTH", "NotJSON", "parse_json", "read_json_text"]


class NotJSON(ValueError):
    """``reason`` says what is wrong (never quoting the text); ``line`` and ``column`` where, when known."""

    def __init__(self, reason: str, line: Optional[int] = None, column: Optional[int] = None):
        super().__init__(reason)
        self.reason, self.line, self.column = reason, line, column

    def where(self) -> str:
        return f"line {self.line}, column {self.column}" if self.line else ""

    def __str__(self) -> str:
        return f"{self.reason} at {self.where()}" if self.line else self.reason


def read_json_text(path: Path) -> str:
    """The file's text; NotJSON when it cannot be read or is not UTF-8 (OSError's reason, without a traceback)."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise NotJSON(f"not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise NotJSON(f"cannot be read ({exc.strerror or exc.__class__.__name__})") from None


def parse_json(text: str) -> Any:
    """``text`` parsed; NotJSON for bad syntax, a number Python refuses, or nesting deeper than MAX_DEPTH."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotJSON(f"not valid JSON ({exc.msg})", exc.lineno, exc.colno) from None
    except RecursionError:
        raise NotJSON(f"arrays and objects nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # e.g. an integer longer than sys.get_int_max_str_digits()
        raise NotJSON(f"not valid JSON ({str(exc).split(';')[0]})") from None
    if _too_deep(value):
        raise NotJSON(f"arrays and objects nested deeper than {MAX_DEPTH} levels")
    return value


def _too_deep(value: Any) -> bool:
    pending = [(value, 1)]
    while pending:  # iterative: the check must not itself overflow
        item, depth = pending.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                return True
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False
