"""Which log a file is (``--format auto``), and the parser that reads it."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from . import aws, azure, squid
from .flows import DOCS, LearnError, LogRead, read_text
from .lines_text import printable

PARSERS: dict[str, Callable[[str, str], LogRead]] = {"azure": azure.parse, "aws-nfw": aws.parse, "squid": squid.parse}
FORMATS = ("auto", *PARSERS)
_SQUID = re.compile(r"^\d{9,}\.\d{3}\s+\d+\s+\S+\s+[A-Z_]+/\d{3}\s")


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise LearnError(f"--format {fmt}", None, f"'{fmt}' is not a log format egress learn reads", f"use one of: {', '.join(FORMATS)}")
    return fmt


def detect(text: str, shown: str) -> str:
    """The format of ``text`` from its first record: a JSON object per line (Network Firewall), a JSON list (az), a CSV
    header naming Azure Firewall's columns, or Squid's native access.log line."""
    number, first = next((n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip())
    head = first.lstrip()
    if head.startswith("{"):
        return "aws-nfw"
    if head.startswith("[") or "SourceIp" in first:
        return "azure"
    if _SQUID.match(head):
        return "squid"
    raise LearnError(shown, number, f"is in no format egress learn reads ('{printable(head[:60])}')",
                     f"pass an Azure Firewall export (CSV or az JSON), a Network Firewall alert log or a Squid access.log ({DOCS}); "
                     "or name the format with --format azure|aws-nfw|squid")


def read_log(path: Path, fmt: str, shown: str | None = None) -> LogRead:
    shown = shown or str(path)
    text = read_text(path, shown)
    name = detect(text, shown) if fmt == "auto" else fmt
    return PARSERS[name](text, shown)
