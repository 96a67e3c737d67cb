"""``egress explain --deployed FILE``: the ``resources.json`` an ``egress preview`` wrote, read back as resources and each
target's artefacts. The file comes from outside (an artifact, a hand edit), so its shape is checked here and every
defect is one error naming the file, the place, the field and the fix, never a traceback."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from .deployed import DeployedResource, resources_from_json
from .errors import EgressError, InputError
from .json_file import NotJSON, parse_json, read_json_text
from .models import Catalog
from .targets import TARGETS

_FIX = "pass the resources.json that egress preview --out DIR wrote for this stack"
_STRINGS = ("type", "name", "urn")
_STRING_LISTS = ("dependencies", "secretPaths", "additionalSecretOutputs", "replaceOnChanges", "aliases")


def _kind(value: Any) -> str:
    for kind, name in ((bool, "a boolean"), (int, "a number"), (float, "a number"), (str, "a string"), (list, "an array"), (dict, "an object")):
        if isinstance(value, kind):
            return name
    return "null"


def _check_resource(path: Path, index: int, document: Any) -> None:
    where = f"resources[{index}]"
    if not isinstance(document, dict):
        raise InputError(path, where, "(resource)", document, f"a resource is an object, not {_kind(document)}", _FIX)
    for key in _STRINGS:
        if not isinstance(document.get(key), str):
            problem = "required field is missing" if key not in document else f"not a string ({_kind(document[key])})"
            raise InputError(path, where, key, document.get(key), problem, _FIX)
    where = f"resources[{index}] ({document['type']} '{document['name']}')"
    if not isinstance(document.get("props", {}), dict):
        raise InputError(path, where, "props", document["props"], f"not an object ({_kind(document['props'])})", _FIX)
    if not isinstance(document.get("parent"), (str, type(None))):
        raise InputError(path, where, "parent", document["parent"], f"not a URN or null ({_kind(document['parent'])})", _FIX)
    if not isinstance(document.get("protect", False), bool):
        raise InputError(path, where, "protect", document["protect"], f"not true or false ({_kind(document['protect'])})", _FIX)
    for key in _STRING_LISTS:
        value = document.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise InputError(path, where, key, value, "not a list of strings", _FIX)


def load_deployed(path: Path, stack: str, deployed_state: bool = False) -> list[DeployedResource]:
    """The resources in ``path``, which must be the preview of ``stack`` (``deployed_state``: as an update leaves them,
    not a ``--phase preview``, whose unknowns are no state)."""
    try:
        document = parse_json(read_json_text(path))
    except NotJSON as exc:
        raise EgressError(f"{path}: not the resources.json of an egress preview ({exc}). Fix: run egress preview --out DIR") from None
    if not isinstance(document, dict):
        raise InputError(path, "", "(document)", document, f"the resources.json of an egress preview is an object, not {_kind(document)}", _FIX)
    for key, wanted in (("stack", str), ("resources", list)):
        if not isinstance(document.get(key), wanted):
            problem = "required field is missing" if key not in document else f"not {'a string' if wanted is str else 'an array'} ({_kind(document[key])})"
            raise InputError(path, "", key, document.get(key), problem, _FIX)
    if document["stack"] != stack:
        raise EgressError(f"{path}: the preview of stack '{document['stack']}', not '{stack}'. Fix: pass --stack {document['stack']}")
    if deployed_state and document.get("phase", "up") != "up":
        raise InputError(path, "", "phase", document["phase"], "a preview's resources hold values not known until an update, not a deployed state",
                         "pass the resources.json of an `egress preview` run without --phase preview")
    for index, resource in enumerate(document["resources"]):
        _check_resource(path, index, resource)
    return resources_from_json(document["resources"])


_UNREADABLE = (AttributeError, IndexError, KeyError, TypeError, ValueError)


@contextmanager
def blamed_on(path: Path, targets: Iterable[str], resources: list[DeployedResource], catalog: Catalog) -> Iterator[None]:
    """Run the targets' readers and judges over the file's resources: a property they cannot read (an edited file,
    another version's shape) becomes one error naming the file and, when one resource alone is unreadable, that one."""
    try:
        yield
    except _UNREADABLE as exc:
        culprit = next(((name, r) for name in targets for r in resources if _unreadable(name, r, catalog)), None)
        where = f"resource {culprit[1].label()}: field 'props': the {culprit[0]} target cannot read it" if culprit else \
            "its resources cannot be read"
        raise EgressError(f"{path}: {where} ({exc}). Fix: {_FIX}, unedited") from None


def _unreadable(target: str, resource: DeployedResource, catalog: Catalog) -> bool:
    try:
        TARGETS[target].evaluate(TARGETS[target].deployed([resource]), (), catalog)
    except _UNREADABLE:
        return True
    return False
