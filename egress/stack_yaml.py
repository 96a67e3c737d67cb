"""YAML as the Pulumi CLI reads a stack file, with the line of every value.

Pulumi parses ``Pulumi.<stack>.yaml`` with gopkg.in/yaml.v3 (YAML 1.2 core schema: ``yes``/``on`` are text, only
``true``/``false`` are booleans; a duplicate key is an error). PyYAML resolves plain scalars by YAML 1.1 (``yes`` is
true, ``010`` is 8, ``1:20`` is 80) and lets a duplicate key win silently. So PyYAML only composes the nodes (syntax
and positions); every plain scalar is resolved here as yaml.v3 resolves it (its resolve.go), and also as YAML 1.1
would, so a caller can refuse the spellings the two read differently.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Union

import yaml

from .json_file import MAX_DEPTH

_IMPLICIT = "!egress-matrix/implicit"  # what our resolver gives untagged nodes: anything else carried an explicit tag


class YamlProblem(Exception):
    def __init__(self, line: int, problem: str, fix: str, field: str = "(file)", value: Any = ""):
        super().__init__(problem)
        self.line, self.problem, self.fix, self.field, self.value = line, problem, fix, field, value


class Timestamp(str):
    """A plain scalar yaml.v3 reads as a time (``2024-01-31``): Pulumi hands the program Go's time text, not this."""


@dataclass(frozen=True)
class Scalar:
    value: Any  # as yaml.v3 resolves it: str, bool, int, float, None or Timestamp
    text: str  # as written
    plain: bool  # unquoted (only plain scalars are resolved; quoted ones are text)
    yaml11: str  # what YAML 1.1 makes of it: str, bool, int, float, null, timestamp
    line: int


@dataclass(frozen=True)
class Seq:
    items: tuple["Node", ...]
    line: int


@dataclass(frozen=True)
class Map:
    entries: tuple[tuple[Scalar, "Node"], ...]
    line: int


Node = Union[Scalar, Seq, Map]


class _Loader(yaml.SafeLoader):
    def resolve(self, kind, value, implicit):  # noqa: ARG002 - resolution is ours (below)
        return _IMPLICIT


_YAML11 = yaml.resolver.Resolver()
_MAP_VALUES: dict[str, Any] = {
    **{t: True for t in ("true", "True", "TRUE")}, **{f: False for f in ("false", "False", "FALSE")},
    **{n: None for n in ("", "~", "null", "Null", "NULL")},
    **{s: math.nan for s in (".nan", ".NaN", ".NAN")},
    **{s: math.inf for s in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")},
    **{s: -math.inf for s in ("-.inf", "-.Inf", "-.INF")},
}
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_GO_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?")  # what Go's ParseFloat accepts of a '.'-led scalar
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
                        r"([Tt ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?(Z|[-+][0-9]{2}:[0-9]{2})?)?")
_INT64 = (-(1 << 63), (1 << 63) - 1)
_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}


def _go_parse_int(text: str, base: int = 0) -> int | None:
    """Go's strconv.ParseInt(text, base, 64), then ParseUint: None where both fail."""
    sign, digits = (-1, text[1:]) if text[:1] == "-" else (1, text[1:] if text[:1] == "+" else text)
    if base == 0:
        lower = digits[:2].lower()
        base, digits = {"0x": (16, digits[2:]), "0o": (8, digits[2:]), "0b": (2, digits[2:])}.get(lower, (10, digits))
        if base == 10 and len(digits) > 1 and digits[0] == "0":
            base = 8  # Go's base 0: a leading 0 is octal
    if not digits or any(c not in _DIGITS[base] for c in digits):
        return None
    value = sign * int(digits, base)
    if _INT64[0] <= value <= _INT64[1] or (sign > 0 and value < (1 << 64) and text[:1] != "+"):
        return value
    return None


def resolve_plain(text: str) -> Any:
    """A plain scalar as yaml.v3 resolves it (resolve.go: map, then by the first character)."""
    if text in _MAP_VALUES:
        return _MAP_VALUES[text]
    first = text[:1]
    if first == ".":
        return float(text) if _GO_FLOAT.fullmatch(text) else text
    if first and first in "+-0123456789":
        if _TIMESTAMP.fullmatch(text):
            return Timestamp(text)
        plain = text.replace("_", "")
        number = _go_parse_int(plain)
        if number is not None:
            return number
        if _FLOAT.fullmatch(plain):
            return float(plain)
        for prefix, base in (("0b", 2), ("-0b", 2), ("0o", 8), ("-0o", 8)):
            if plain.startswith(prefix):
                number = _go_parse_int(("-" if prefix[0] == "-" else "") + plain[len(prefix):], base)
                if number is not None:
                    return number
    return text


def _yaml11_kind(text: str) -> str:
    tag = _YAML11.resolve(yaml.ScalarNode, text, (True, False))
    return tag.rsplit(":", 1)[-1]


def _convert(node: yaml.Node, seen: dict[int, Node], path: str, depth: int = 1) -> Node:
    line = node.start_mark.line + 1
    if depth > MAX_DEPTH:  # every reader of the tree recurses: bounded here, as for JSON (egress/json_file.py)
        raise _too_deep(line, path)
    if node.tag != _IMPLICIT:
        raise YamlProblem(line, f"explicit YAML tag '{node.tag}'", "remove the tag; quote a value to make it text", path or "(file)")
    if id(node) in seen:  # an alias: the anchored node again
        return seen[id(node)]
    if isinstance(node, yaml.ScalarNode):
        plain = node.style is None
        result: Node = Scalar(resolve_plain(node.value) if plain else node.value, node.value, plain,
                              _yaml11_kind(node.value) if plain else "str", line)
    elif isinstance(node, yaml.SequenceNode):
        result = Seq(tuple(_convert(item, seen, f"{path}[{index}]", depth + 1) for index, item in enumerate(node.value)), line)
    else:
        entries, first_line = [], {}
        for key_node, value_node in node.value:
            key = _convert(key_node, seen, path)
            if not isinstance(key, Scalar):
                raise YamlProblem(key.line, "a mapping key that is not text", "write the key as text", path or "(file)")
            child = f"{path}.{key.text}" if path else key.text
            if key.plain and key.text == "<<":
                raise YamlProblem(key.line, "a YAML merge key '<<'", "write the settings out in full", child)
            identity = (type(key.value).__name__, key.value if isinstance(key.value, str) else repr(key.value))
            if identity in first_line:
                raise YamlProblem(key.line, f"key '{key.text}' is already defined at line {first_line[identity]} "
                                            "(Pulumi refuses the file; other readers keep the last value)",
                                  "keep one of the two lines", child, "(not shown)")
            first_line[identity] = key.line
            entries.append((key, _convert(value_node, seen, child, depth + 1)))
        result = Map(tuple(entries), line)
    seen[id(node)] = result
    return result


def load(text: str) -> Node | None:
    """The document's node tree, or None for an empty document. Raises YamlProblem, syntax errors included, each with
    its line and in words (not the parser's own report, which quotes '<unicode string>' and a caret)."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise syntax_problem(text, exc) from None
    except RecursionError:  # PyYAML composes recursively: '[[[[...' a few hundred deep overflows the stack
        raise _too_deep(_deep_line(text), "(file)") from None
    return None if root is None else _convert(root, {}, "")


def _too_deep(line: int, path: str) -> YamlProblem:
    return YamlProblem(line, f"lists and mappings nested deeper than {MAX_DEPTH} levels", "write the value flat; no setting nests this deep",
                       path.split("[", 1)[0][:120] or "(file)", "(not shown)")  # the setting, not 128 '[0]'s


def _deep_line(text: str) -> int:
    """The first line where flow brackets ('[', '{') open deeper than MAX_DEPTH (quotes ignored: a best guess), else 0."""
    depth = 0
    for number, line in enumerate(text.splitlines(), start=1):
        for char in line:
            depth += 1 if char in "[{" else -1 if char in "]}" else 0
            if depth > MAX_DEPTH:
                return number
    return 0


_VALUE_END = re.compile(r"[,\]}]|\s#|\s*$")


def syntax_problem(text: str, exc: yaml.YAMLError) -> YamlProblem:
    """A parser error as a YamlProblem. A plain value that starts with '*' (``*.example.com``) is a YAML alias, a
    reference to an anchor: said so, with the key it belongs to and the quoted spelling."""
    context, problem = getattr(exc, "context", None) or "", getattr(exc, "problem", None) or str(exc)
    mark = getattr(exc, "context_mark", None) if "alias" in context else getattr(exc, "problem_mark", None)
    lines = text.splitlines()
    if mark is not None and mark.line < len(lines) and lines[mark.line][mark.column:mark.column + 1] == "*":
        rest = lines[mark.line][mark.column:]
        value = rest[:_VALUE_END.search(rest, 1).start()].strip()
        return YamlProblem(mark.line + 1, f"'{value}' starts with '*', which YAML reads as an alias (a reference to an anchor), not as text",
                           f"quote it: '{value}'", _key_of(lines, mark.line, mark.column), value)
    where = getattr(exc, "problem_mark", None) or mark
    line = where.line + 1 if where is not None else 0
    said = f"{context}: {problem}" if context and problem else problem or context
    column = f" (column {where.column + 1})" if where is not None else ""
    return YamlProblem(line, f"not valid YAML: {said}{column}".replace("\n", " "), "correct the YAML syntax on that line")


def _key_of(lines: list[str], line: int, column: int) -> str:
    """The mapping key a value at (line, column) belongs to: on its line, else the nearest less-indented key above."""
    own = re.match(r"\s*([^\s#][^#]*?):(\s|$)", lines[line][:column])
    if own:
        return own.group(1).strip("'\"")
    indent = len(lines[line]) - len(lines[line].lstrip())
    for above in range(line - 1, -1, -1):
        text = lines[above]
        found = re.match(r"(\s*)([^\s#-][^#]*?):(\s|$)", text)
        if found and len(found.group(1)) < indent:
            return found.group(2).strip("'\"")
    return "(file)"



_DECIMAL = re.compile(r"-?(0|[1-9][0-9]*)")  # stack_rules.DECIMAL: a whole number every reader reads alike
_KINDS = {"str": "text", "bool": "a boolean", "int": "a number", "float": "a number", "null": "nothing", "timestamp": "a date"}


def _kind_of(value: Any) -> str:
    if isinstance(value, Timestamp):
        return "timestamp"
    return {bool: "bool", int: "int", float: "float", type(None): "null"}.get(type(value), "str")


def readers_disagree(text: str, yaml11: str | None = None) -> tuple[str, str] | None:
    """(problem, fix) (the problem does not quote ``text``) when a plain scalar is read differently by YAML 1.2 (yaml.v3, what Pulumi uses) and YAML 1.1
    (PyYAML): '20:21' is text for one and 1221 for the other, 'yes' text or true, '010' is 8 where 10 was meant.
    ``yaml11``: the YAML 1.1 kind when the caller's parser resolved it already. None when every reader agrees."""
    value, yaml11 = resolve_plain(text), yaml11 or _yaml11_kind(text)
    kind = _kind_of(value)
    if kind != yaml11 and _KINDS[kind] != _KINDS.get(yaml11):
        return (f"YAML 1.2 (Pulumi) reads it as {_KINDS[kind]}, YAML 1.1 as {_KINDS.get(yaml11, yaml11)}",
                f'quote it: "{text}"')
    if kind == "int" and not _DECIMAL.fullmatch(text):
        return (f"a number YAML readers disagree on (YAML 1.2 reads {value}, a YAML 1.1 reader may not)",
                f"write it in plain decimal: {value}, or quote it if it is text")
    return None
