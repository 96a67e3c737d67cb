"""``egress diff``: a new order of the rules both sides have, whatever else changed (pure).

Where the first match decides (squid's ``http_access`` and ``ssl_bump`` lines, a STRICT_ORDER Suricata group), moving a
deny below an allow widens what passes, and it can come with any number of rules added, removed or edited. So the order
is compared on the rules both sides have (copies matched in turn, a duplicate is its own rule), independently of the
rest: the first place where they differ, and the fewest rules that moved (those outside a longest run kept in order),
each said with the unmoved rule it now stands before or after. Linear-logarithmic: a squid.conf has thousands of lines.
"""
from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass
from typing import Any, Optional

from .diff_delta import dangerous_line

MOVES = 12  # moved rules named per line; the rest counted (JSON names them all)


def _short(text: str, limit: int = 72) -> str:
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclass(frozen=True)
class OrderChange:
    """The rules both sides have, in a new order: ``position`` (1-based, among them) where they first differ, the rule
    that was there and the one that is; ``moved``: (rule, 'before X' | 'after X') for each rule that moved."""
    what: str  # "rule order" | "order of <directive> lines"
    position: int
    was: str
    now: str
    moved: tuple[tuple[str, str], ...]
    dangerous: bool  # the first match decides: a moved rule can widen what passes
    why: str = "the first match decides"

    def line(self) -> str:
        shown = [f"{_short(rule)} now {_short(where)}" for rule, where in self.moved[:MOVES]]
        more = f"; ... {len(self.moved) - MOVES} more moved" if len(self.moved) > MOVES else ""
        return (f"~ {self.what} ({self.why}): {'; '.join(shown)}{more} (first difference at position {self.position} among "
                f"those both sides have: was {_short(self.was)}, is {_short(self.now)})")

    def moves(self) -> list[str]:
        return [f"{rule} now {where}" for rule, where in self.moved]

    def json(self) -> dict[str, Any]:
        return {"what": self.what, "dangerous": self.dangerous, "why": self.why, "position": self.position, "was": self.was,
                "is": self.now, "moved": [{"rule": rule, "now": where} for rule, where in self.moved]}


def _labels(names: list[str]) -> list[tuple[str, int]]:
    """Each name with its copy number, so duplicates are told apart (the k-th copy matches the other side's k-th)."""
    seen: Counter = Counter()
    out = []
    for name in names:
        seen[name] += 1
        out.append((name, seen[name]))
    return out


def _kept(sequence: list[int]) -> set[int]:
    """The indexes of one longest strictly increasing run of ``sequence`` (patience sorting)."""
    tails: list[int] = []  # the value ending the best run of each length
    tail_at: list[int] = []  # its index
    back = [-1] * len(sequence)
    for i, value in enumerate(sequence):
        k = bisect_left(tails, value)
        back[i] = tail_at[k - 1] if k else -1
        if k == len(tails):
            tails.append(value)
            tail_at.append(i)
        else:
            tails[k], tail_at[k] = value, i
    kept, i = set(), tail_at[-1] if tail_at else -1
    while i >= 0:
        kept.add(i)
        i = back[i]
    return kept


def order_change(before: list[str], after: list[str], what: str = "rule order", dangerous: bool = True,
                 why: str = "the first match decides") -> Optional[OrderChange]:
    """How the rules in both ``before`` and ``after`` (names, duplicates kept) changed order; None when they did not."""
    old, new = _labels(before), _labels(after)
    in_new, in_old = set(new), set(old)
    common_old = [label for label in old if label in in_new]
    common_new = [label for label in new if label in in_old]
    if common_old == common_new:
        return None
    at = next(i for i, (a, b) in enumerate(zip(common_old, common_new)) if a != b)
    place = {label: i for i, label in enumerate(common_old)}
    kept = _kept([place[label] for label in common_new])
    following: list[Optional[str]] = [None] * len(common_new)  # the next unmoved rule after each (linear, not a search each)
    for i in range(len(common_new) - 2, -1, -1):
        following[i] = common_new[i + 1][0] if i + 1 in kept else following[i + 1]
    last_kept = common_new[max(kept)][0]  # a moved rule after every unmoved one stands after the last of them
    moved = [(name, f"before {following[i]}" if following[i] is not None else f"after {last_kept}")
             for i, (name, _) in enumerate(common_new) if i not in kept]
    return OrderChange(what, at + 1, common_old[at][0], common_new[at][0], tuple(moved), dangerous, why)


def directive(line: str) -> str:
    """A squid.conf line's directive (its first word; squid splits on any whitespace)."""
    words = line.split(None, 1)
    return words[0] if words else ""


# squid.conf directives whose lines are checked in order, the first match deciding (squid.conf.documented)
FIRST_MATCH = ("http_access", "http_reply_access", "ssl_bump", "never_direct", "always_direct", "cache_peer_access",
               "tcp_outgoing_address", "miss_access", "adaptation_access", "icap_access")


def squid_orders(before: list[str], after: list[str]) -> list[OrderChange]:
    """The order changes of a squid.conf's lines, directive by directive (only a directive's own lines' order means
    anything to squid: an ``acl`` line may stand anywhere before its use)."""
    out = []
    for name in sorted({directive(line) for line in (*before, *after)} - {""}):
        change = order_change([line for line in before if directive(line) == name], [line for line in after if directive(line) == name],
                              f"order of {name} lines", name != "acl" and (name in FIRST_MATCH or dangerous_line(name)),
                              "the first match decides" if name in FIRST_MATCH else "the order squid reads them in")
        if change is not None:
            out.append(change)
    return out
