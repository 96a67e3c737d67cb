"""``egress learn``: from deny logs to proposals a team reviews (docs/LEARN.md). Pure core: reads logs, writes nothing.

    learn(catalog, profile, stack, logs, fmt) -> Learned
        read each log (formats.py: azure.py, aws.py, squid.py), group the denied flows by source role or group and
        destination (match.py), judge each group against every row of the matrix the stack could resolve
        (candidates.py), and build the proposals document and its Markdown summary (proposals.py)

Exit status of the command (a CI job can gate on it): 0 nothing to propose, 3 proposals written, 1 bad input.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..models import Catalog
from ..profile import Profile
from .candidates import candidates, patterns
from .flows import LearnError, LogRead
from .formats import FORMATS, check_format, read_log
from .match import group_flows, judge
from .out_file import check_out, write_out
from .proposals import document, markdown, to_yaml

PROPOSALS_EXIT = 3  # not 1 (bad input) nor 2 (usage): a script tells "review these" from "it failed"

__all__ = ["FORMATS", "LearnError", "Learned", "PROPOSALS_EXIT", "check_out", "learn", "write_out"]


@dataclass(frozen=True)
class Learned:
    document: dict[str, Any]
    yaml: str
    reads: tuple[LogRead, ...]

    @property
    def proposals(self) -> int:
        return len(self.document["proposals"])

    def summary(self, out: str) -> str:
        return markdown(self.document["stack"], self.document, out)


def learn(catalog: Catalog, profile: Profile, stack: str, logs: list[tuple[Path, str]], fmt: str = "auto") -> Learned:
    """``logs``: (path, the name to show for it). Every log is read before anything is judged: one bad line stops all."""
    check_format(fmt)
    if not logs:
        raise LearnError("egress learn", None, "no log given", "pass one or more exported deny logs: egress learn --stack S LOG...")
    reads = tuple(read_log(path, fmt, shown) for path, shown in dict.fromkeys(logs))  # a log named twice counts once
    flows = [flow for read in reads for flow in read.flows]
    rows, unresolved = candidates(catalog, profile), patterns(catalog, profile)
    judged = [(group, judge(group, rows, unresolved)) for group in group_flows(flows, profile)]
    doc = document(stack, list(reads), judged, tuple(entry.id for entry in profile.entries))
    return Learned(doc, to_yaml(stack, doc), reads)

