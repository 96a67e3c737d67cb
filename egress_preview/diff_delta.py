"""``egress diff``: how a long changed value is printed so that its change stays visible, and which changes come first
when the Markdown's limits cut the rest (pure).

Values are compared whole (``diff_values``); only printing shortens them. Two long values that differ somewhere in the
middle would look the same once shortened, so a pair of similar long values is printed as its delta: word by word for
text with words (a squid ``acl ... dstdomain`` line gaining a domain prints ``+.evil.example``), else character by
character around the part that differs. When a limit cuts the Markdown, every field that could widen what a firewall
lets through is printed before the others: all fields are dangerous but the few known harmless ones (tags, descriptions,
display names, a resource's own labels and annotations), so a field nobody listed (an ipBlock's CIDR, a threat-intel mode,
a base policy) is never among the ones only counted.
"""
from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Iterable

SHOWN = 72  # characters of one value shown inline; longer values keep both ends
LEAD = 3  # equal leading words kept as the delta's context ("acl allow_nodes dstdomain")
CONTEXT = 8  # characters kept either side of a character-level delta
PAIRED = 48  # long items compared for pairing per side (the ones printed come first)
# Harmless fields, matched on the path without its [name] parts: the top-level ones, any object's description (not a key
# of a selector's labels), and a resource's own metadata labels and annotations, except on kinds where a label is
# selected by network policies (Namespace, Pod) or an annotation changes exposure (a Service's load balancer).
_HARMLESS_TOP = {"tags", "tagsall", "description", "displayname"}
_HARMLESS_LAST = {"description", "displayname"}
_SELECTED = {"Namespace": ("labels", "annotations"), "Pod": ("labels", "annotations"), "Service": ("annotations",)}
# squid.conf directives that route, allow or bypass (an upstream peer, going direct, access and bump decisions)
DANGEROUS_LINES = ("cache_peer", "never_direct", "always_direct", "http_access", "ssl_bump", "tcp_outgoing_address", "acl")


def shorten(text: str, limit: int = SHOWN) -> str:
    """``text`` on one line, at most about ``limit`` characters: its start and end kept, the middle counted."""
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    if len(text) <= limit:
        return text
    keep = (limit - 3) // 2
    return f"{text[:keep]}...({len(text) - 2 * keep} more)...{text[-keep:]}"


def dangerous_path(path: str, typ: str = "") -> bool:
    """Whether a changed field may widen what a firewall lets through: every field but the known harmless ones."""
    segments = [s.lower() for s in re.split(r"\.", re.sub(r"\[[^\]]*\]", "", path)) if s]
    if not segments:
        return True
    if segments[0] in _HARMLESS_TOP:
        return False
    if segments[-1] in _HARMLESS_LAST and not any(s.endswith(("labels", "selector", "expressions")) for s in segments[:-1]):
        return False
    if segments[0] == "metadata" and len(segments) > 1 and segments[1] in ("labels", "annotations"):
        return segments[1] in _SELECTED.get(typ.rsplit(":", 1)[-1], ())
    return True


def dangerous_line(text: str) -> bool:
    return text.lstrip().split(" ", 1)[0] in DANGEROUS_LINES


def dangerous_first(items: Iterable[str]) -> list[str]:
    """The items with squid's routing and access lines first, each group in its own order."""
    items = list(items)
    return [i for i in items if dangerous_line(i)] + [i for i in items if not dangerous_line(i)]


def _similar(old: str, new: str) -> bool:
    prefix = len(_common_prefix(old, new))
    suffix = len(_common_prefix(old[prefix:][::-1], new[prefix:][::-1]))
    return prefix + suffix >= min(len(old), len(new)) // 2


def _common_prefix(a: str, b: str) -> str:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return a[:n]


def word_delta(old: str, new: str) -> str:
    """The words replaced, added and removed between two lines ('443 -> any; +.evil.example'), each part shortened."""
    a, b = old.split(), new.split()
    parts = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        was, now = " ".join(a[i1:i2]), " ".join(b[j1:j2])
        if tag == "replace":
            parts.append(f"{shorten(was, SHOWN // 2)} -> {shorten(now, SHOWN // 2)}")
        elif tag == "insert":
            parts.append(f"+{shorten(now, SHOWN // 2)}")
        elif tag == "delete":
            parts.append(f"-{shorten(was, SHOWN // 2)}")
    return "; ".join(parts) or "whitespace only"


def lead(old: str, new: str) -> str:
    """The equal leading words of two lines, at most LEAD of them ('acl allow_nodes dstdomain')."""
    words = []
    for x, y in zip(old.split()[:LEAD], new.split()[:LEAD]):
        if x != y:
            break
        words.append(x)
    return " ".join(words)


def delta(old: str, new: str) -> str:
    """A printable delta of two similar values: word-level for text with words, else the differing characters with a
    little context ('...aaaaaaaa[X -> Y]bbbbbbbb...')."""
    if old == new:  # the values differ where redaction hides them (a URL's credentials)
        return f"{shorten(old)}: changed in a part not shown (redacted)"
    if len(old.split()) > 1 and len(new.split()) > 1:
        context = shorten(lead(old, new), SHOWN // 2)
        return f"{context}: {word_delta(old, new)}" if context else word_delta(old, new)
    prefix = len(_common_prefix(old, new))
    suffix = len(_common_prefix(old[prefix:][::-1], new[prefix:][::-1]))
    before = old[max(0, prefix - CONTEXT):prefix]
    after = old[len(old) - suffix:len(old) - suffix + CONTEXT]
    return (f"{'...' if prefix > CONTEXT else ''}{shorten(before)}[{shorten(old[prefix:len(old) - suffix], SHOWN // 2)} -> "
            f"{shorten(new[prefix:len(new) - suffix], SHOWN // 2)}]{shorten(after)}{'...' if suffix > CONTEXT else ''}")


def pairs(added: list[str], removed: list[str]) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """(removed, added) pairs of long similar items, printed as deltas; the rest of ``added`` and ``removed``."""
    paired: list[tuple[str, str]] = []
    used_added, used_removed = set(), set()
    long_removed = [(i, r) for i, r in enumerate(removed) if len(r) > SHOWN][:PAIRED]
    for i, item in enumerate(added):
        if len(item) <= SHOWN or len(paired) >= PAIRED:
            continue
        match = next(((j, r) for j, r in long_removed if j not in used_removed and _similar(r, item)), None)
        if match is not None:
            used_added.add(i)
            used_removed.add(match[0])
            paired.append((match[1], item))
    return (paired, [a for i, a in enumerate(added) if i not in used_added], [r for j, r in enumerate(removed) if j not in used_removed])
