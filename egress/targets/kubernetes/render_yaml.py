"""The YAML every rendered Kubernetes manifest is written with: a multi-line string (a PEM bundle, squid.conf) as a
literal block scalar, so it reads as the file it is, and parses back to exactly the same string.

PyYAML's default writes such a string as a quoted scalar, whose line breaks are blank lines (YAML 1.2.2 §6.5 "Line
Folding": in a quoted scalar a single break folds to a space, so every real break is written as an empty line). A
literal block (``|``, §8.1.2 "Literal Style") keeps every line as written; PyYAML's emitter adds the chomping indicator
the text needs (``|-`` without a final newline, ``|+`` with more than one) and an indentation indicator when it starts
with a space. The emitter itself falls back to a quoted scalar where a block cannot hold the text exactly (trailing
spaces on a line, tabs, ``\r``). It does not for NEL, LS and PS, which PyYAML (YAML 1.1, §5.4 "Line Break
Characters") reads back as a plain newline inside a block (and, unescaped, folds in a quoted one), so strings holding
one, or a CR, are written double-quoted, where they are escapes.
"""
from __future__ import annotations

from typing import Any

import yaml

# Line breaks a block scalar normalises to '\n' (CR; YAML 1.1's NEL, LS, PS): a string holding one would not read back the same.
_UNSAFE_IN_BLOCK = ("\r", "\x85", "\u2028", "\u2029")


class _ManifestDumper(yaml.SafeDumper):
    """SafeDumper with multi-line strings as literal blocks."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if any(c in value for c in _UNSAFE_IN_BLOCK):
        style = '"'  # escaped: PyYAML's own choice (a single-quoted scalar) would fold a NEL to a space
    else:
        style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ManifestDumper.add_representer(str, _string)


def dump(obj: Any) -> str:
    """``obj`` as one YAML document: keys in their given order, lines up to 200 columns, text as UTF-8 (not escaped)."""
    return yaml.dump(obj, Dumper=_ManifestDumper, sort_keys=False, width=200, allow_unicode=True)
