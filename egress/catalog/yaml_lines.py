"""YAML for catalog files, with the line every mapping starts on (for error messages)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import CatalogError


class _LineDict(dict):
    line: int = 0


# libyaml's loader is ~10x faster and keeps node marks, so line numbers survive; fall back when absent.
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """SafeLoader whose mappings remember the line they start on (for error messages)."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _LineDict:
    loader.flatten_mapping(node)
    mapping = _LineDict()
    mapping.line = node.start_mark.line + 1
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in mapping:
            raise CatalogError(loader.file_name, f"line {key_node.start_mark.line + 1}", str(key), "", "duplicate key",
                               "keep one of the two")
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(path: Path) -> Any:
    try:
        loader = _LineLoader(path.read_text(encoding="utf-8"))
        loader.file_name = str(path)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except ValueError as exc:  # a plain scalar PyYAML resolves but cannot build, e.g. the date 2026-13-01
        raise CatalogError(path, "", "(file)", "", f"a value YAML reads as a date or number cannot be built: {exc}",
                           "quote it (dates as 'YYYY-MM-DD' text), or correct it") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise CatalogError(path, where, "(file)", "", f"not valid YAML: {problem}", "correct the YAML syntax") from None
