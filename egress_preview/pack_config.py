"""``--policy-pack-config FILE``, read and checked the way the Pulumi engine checks it before it runs a pack (its
analyzer's config parser: a JSON object of policy name -> enforcement level, or -> an object with an optional
``enforcementLevel`` and the policy's settings, each validated against the policy's ``config_schema``), so a value
the engine would refuse is refused here too, as one error naming the file, policy, setting, value and fix.

Stricter than the engine in one place: a policy name or setting this pack does not have is an error (the engine
ignores it, so a misspelt name would silently leave the policy at its default).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Sequence

import jsonschema

from egress.errors import EgressError, InputError
from egress.json_file import NotJSON, parse_json, read_json_text

LEVELS = ("advisory", "mandatory", "remediate", "disabled")
_EXAMPLE = 'e.g. {"trusted-ca-valid": {"enforcementLevel": "mandatory", "expiryWarningDays": 30}}'


def _json_type(value: Any) -> str:
    """'an integer', 'a string': the JSON type of ``value`` with its article."""
    for kind, name in ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"), (list, "an array"), (dict, "an object")):
        if isinstance(value, kind):
            return name
    return "null"


def _wanted(schema: dict[str, Any]) -> str:
    """What a setting's schema accepts, in words: 'an integer from 0', 'a boolean'."""
    kind = schema.get("type", "value")
    words = f"{'an' if str(kind)[0] in 'aeiou' else 'a'} {kind}"
    if "enum" in schema:
        words += " (one of " + ", ".join(json.dumps(v) for v in schema["enum"]) + ")"
    if "minimum" in schema and "maximum" in schema:
        words += f" from {schema['minimum']} to {schema['maximum']}"
    elif "minimum" in schema:
        words += f" from {schema['minimum']}"
    elif "maximum" in schema:
        words += f" up to {schema['maximum']}"
    return words


def _level(path: Path, name: str, field: str, value: Any) -> str:
    if not isinstance(value, str) or value not in LEVELS:
        raise InputError(path, f"policy '{name}'", field, value, f"not an enforcement level ({_json_type(value)})" if not isinstance(value, str)
                         else "not an enforcement level", f"use one of: {', '.join(LEVELS)}")
    return value


def _settings(path: Path, name: str, policy: Any, settings: dict[str, Any]) -> None:
    schema = policy.config_schema
    properties = dict(schema.properties) if schema and schema.properties else {}
    unknown = sorted(set(settings) - set(properties))
    if unknown:  # the engine ignores it; a misspelt setting would silently keep the default
        raise InputError(path, f"policy '{name}'", unknown[0], settings[unknown[0]], "this policy has no such setting",
                         f"its settings are: {', '.join(sorted(properties))}" if properties else
                         'give only its enforcement level, e.g. {"' + name + '": "mandatory"}')
    whole = {"type": "object", "properties": properties, **({"required": list(schema.required)} if schema and schema.required else {})}
    errors = sorted(jsonschema.Draft7Validator(whole).iter_errors(settings), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        error = errors[0]
        key = ".".join(str(p) for p in error.absolute_path) or "(settings)"
        setting = properties.get(str(next(iter(error.absolute_path), "")), {})
        fix = (f"give {_wanted(setting)}" + (f" ({setting['description']})" if setting.get("description") else "")) if setting else \
            f"its settings are: {', '.join(sorted(properties))}"
        raise InputError(path, f"policy '{name}'", key, error.instance, error.message, fix)


def load_pack_config(path: Path, policies: Optional[Sequence[Any]] = None) -> dict[str, Any]:
    """The config in ``path``, checked against ``policies`` (default: the pack's); what ``run_pack`` takes."""
    if policies is None:
        from egress_policies import POLICIES

        policies = POLICIES
    try:
        text = read_json_text(path)
        document = parse_json(text) if text.strip() else {}  # the engine accepts an empty file as no config
    except NotJSON as exc:
        raise EgressError(f"{path}: not a readable policy pack config ({exc}). Fix: pass the JSON file given to --policy-pack-config") from None
    if not isinstance(document, dict):
        raise InputError(path, "", "(document)", document, f"a policy pack config is a JSON object, not {_json_type(document)}",
                         f"write an object of policy name -> enforcement level or settings, {_EXAMPLE}")
    by_name = {p.name: p for p in policies}
    for name in sorted(document):
        value = document[name]
        if name != "all" and name not in by_name:
            raise InputError(path, "", "policy", name, "this pack has no such policy",
                             f"use one of: all, {', '.join(sorted(by_name))}")
        if isinstance(value, str):
            _level(path, name, "(level)", value)
        elif isinstance(value, dict):
            settings = {k: v for k, v in value.items() if k != "enforcementLevel"}
            if "enforcementLevel" in value:
                _level(path, name, "enforcementLevel", value["enforcementLevel"])
            if name == "all" and settings:
                key = sorted(settings)[0]
                raise InputError(path, "policy 'all'", key, settings[key], "'all' sets only an enforcement level",
                                 "put the setting under the policy it belongs to")
            if name != "all":
                _settings(path, name, by_name[name], settings)
        else:
            raise InputError(path, f"policy '{name}'", "(value)", value, f"{_json_type(value)}, but a policy's config is an enforcement "
                             "level or an object", f"write it like {_EXAMPLE[len('e.g. '):]}")
    return document
