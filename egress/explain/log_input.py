"""What ``egress explain`` was given: a DESTINATION[:PORT] (None here), one log line, or log lines on stdin.

A log line is told from a destination by its shape (a JSON record, Azure's 'request from' message, Squid's native
line); a destination never holds white space, so an argument with white space that is no log line is refused as one.
Stdin is read when the argument is '-', or when there is no argument nor --rule and stdin is not a terminal.
"""
from __future__ import annotations

from typing import IO, Optional

from ..errors import EgressError
from ..learn.lines import LineError, engine_of, parse_line

STDIN = "-"
_GIVE = ("give a DESTINATION[:PORT] or --rule NAME (one of them), or log lines: one as the argument, many on stdin "
         "(egress explain - < deny.log). Fix: e.g. egress explain mcr.microsoft.com:443, or egress explain --rule aks-core-https")


def _read(stdin: IO[str]) -> str:
    try:
        buffer = getattr(stdin, "buffer", None)
        return buffer.read().decode("utf-8-sig", errors="replace") if buffer is not None else stdin.read()
    except (OSError, ValueError):  # closed, or a test runner's stand-in that refuses to be read
        return ""


def split_lines(text: str) -> list[str]:
    """Lines as the engines end them: at \\n (a \\r before it dropped). Not str.splitlines(), which also ends a line at
    \\v, \\f, \\x1c-\\x1e, \\x85, U+2028 and U+2029: characters a JSON string or a URL in a record may hold raw."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _is_terminal(stdin: Optional[IO[str]]) -> bool:
    try:
        return stdin is None or stdin.isatty()
    except (OSError, ValueError):
        return True


def log_lines(argument: Optional[str], rule: Optional[str], role: Optional[str], stdin: Optional[IO[str]]) -> Optional[list[tuple[int, str]]]:
    """(line number, text) of the log lines to explain, or None when the argument is a destination (or --rule is given)."""
    if rule is not None:
        if argument is not None:
            raise EgressError(_GIVE)
        return None
    if argument is None and _is_terminal(stdin):
        raise EgressError(_GIVE)
    if argument is not None and argument != STDIN:
        if engine_of(argument) is None and not any(c.isspace() for c in argument.strip()):
            return None  # a destination: parse_destination_arg judges it, as before
        try:
            parse_line(argument)
        except LineError as exc:
            raise EgressError(f"log line: {exc.problem}. Fix: {exc.fix}") from None
        lines = [(1, argument)]
    else:
        text = _read(stdin) if stdin is not None else ""
        lines = [(number, line) for number, line in enumerate(split_lines(text), start=1) if line.strip()]
        if not lines:
            raise EgressError(f"stdin holds no log line. Fix: {_GIVE.split('Fix: ', 1)[0].rstrip('. ')}")
    if role is not None:
        raise EgressError(f"--role {role} does not apply to log lines: each line's source address says its role. Fix: leave out --role, "
                          "or give a DESTINATION[:PORT] instead of a log line")
    return lines
