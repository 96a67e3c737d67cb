"""YAML for catalog files, with the line every mapping starts on (for error messages).

PyYAML resolves plain scalars by YAML 1.1 ('20:21' is the sexagesimal 1221, '010' is 8, 'yes' is true); the stack files
are read as YAML 1.2 (Pulumi's reader). A catalog value the two read differently is refused with the stack reader's rule
and words (stack_yaml.readers_disagree), so 'ports: [20:21]' is never silently port 1221 in a matrix or team file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import CatalogError
from ..json_file import MAX_DEPTH
from ..stack_yaml import readers_disagree


class _LineDict(dict):
    line: int = 0


# libyaml's loader is ~10x faster and keeps node marks, so line numbers survive; fall back when absent.
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """SafeLoader whose mappings remember the line they start on (for error messages), and that refuses a plain scalar
    YAML 1.1 and 1.2 read differently."""

    path: list = []  # the keys and list indices down to the value being built (set per loader in read_yaml)

    @property
    def field(self) -> str:
        """The value's path within its list item, as the entry checks name fields ('approval.reference' of an entry,
        'ports' for an item of its ports; the line says which entry), for the error."""
        keys = self.path[max((i + 1 for i, part in enumerate(self.path) if isinstance(part, int)), default=0):]
        return ".".join(keys) or next((part for part in reversed(self.path) if isinstance(part, str)), "(file)")

    def construct_object(self, node, deep=False):
        if isinstance(node, yaml.ScalarNode) and not node.style and node not in self.constructed_objects:  # libyaml: plain is ""
            kind = node.tag.rsplit(":", 1)[-1] if node.tag.startswith("tag:yaml.org,2002:") else None
            found = readers_disagree(node.value, kind) if kind else None
            if found:
                raise CatalogError(self.file_name, f"line {node.start_mark.line + 1}", self.field, node.value, *found)
        return super().construct_object(node, deep)


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _LineDict:
    loader.flatten_mapping(node)
    mapping = _LineDict()
    mapping.line = node.start_mark.line + 1
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in mapping:
            raise CatalogError(loader.file_name, f"line {key_node.start_mark.line + 1}", str(key), "", "duplicate key",
                               "keep one of the two")
        loader.path.append(str(key))
        mapping[key] = loader.construct_object(value_node, deep=True)
        loader.path.pop()
    return mapping


def _construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> list:
    out = []
    for index, item in enumerate(node.value):
        loader.path.append(index)
        out.append(loader.construct_object(item, deep=True))
        loader.path.pop()
    return out


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def read_yaml(path: Path) -> Any:
    try:
        loader = _LineLoader(path.read_text(encoding="utf-8"))
        loader.file_name, loader.path = str(path), []
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except UnicodeDecodeError as exc:  # a ValueError too: before the clause below, which would call it a date
        raise CatalogError(path, "", "(file)", "", f"not UTF-8 text (byte {exc.start} cannot be decoded)", "save the file as UTF-8") from None
    except RecursionError:  # '[[[[...' hundreds deep: the parser and constructor recurse
        raise CatalogError(path, "", "(file)", "", f"lists and mappings nested deeper than {MAX_DEPTH} levels",
                           "write the value flat; no catalog field nests this deep") from None
    except ValueError as exc:  # a plain scalar PyYAML resolves but cannot build, e.g. the date 2026-13-01
        raise CatalogError(path, "", "(file)", "", f"a value YAML reads as a date or number cannot be built: {exc}",
                           "quote it (dates as 'YYYY-MM-DD' text), or correct it") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise CatalogError(path, where, "(file)", "", f"not valid YAML: {problem}", "correct the YAML syntax") from None
