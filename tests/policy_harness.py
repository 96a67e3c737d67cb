"""Policy fixtures: a stack's recording (the program under the mocks), edited, judged by one policy in-process.

A fixture (``policy/fixtures/<policy>/allowed-*.yaml`` or ``denied-*.yaml``):

    description: what the case shows
    stack: dev                          # whose program recording and config
    config: {egress-matrix:key: value}  # optional: stack config the pack sees instead (strings, as the engine passes)
    policyConfig: {prop: value}         # optional: the policy's config
    edits:                              # optional, in order, on the named resource (logical name)
      - {resource: NAME, set: a.b.0.c, value: ...}        # dotted path; list indexes are numbers
      - {resource: NAME, remove: a.b.0}
      - {resource: NAME, replace: [data, squid.conf], old: TEXT, new: TEXT}  # a string field edited in place
      - {resource: NAME, drop: true}                       # the resource is not deployed
      - {resource: NAME, dependencies: [NAME, ...]}        # what it waits for
      - {resource: NAME, additionalSecretOutputs: [...]}
      - {resource: NAME, protect: false}                   # registered without protect
      - {add: {type: T, name: N, props: {...}, parent: NAME}}
    expect:                             # exactly these violations of this policy (allowed fixtures: [])
      - {level: mandatory, resource: "<type> '<name>'" | "(stack)", message: "..."}
"""
from __future__ import annotations

import copy
import dataclasses
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from egress.deployed import DeployedResource
from egress_preview.pack import run_pack
from egress_preview.program import Recorded, run_program

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "policy" / "fixtures"


@lru_cache(maxsize=None)
def recording(stack: str) -> Recorded:
    return run_program(ROOT, stack)


def _walk(document: Any, path: str | list) -> tuple[Any, Any]:
    """``path``: dotted (list indexes as numbers), or a list of keys when a key holds a dot (data, squid.conf)."""
    parts = path if isinstance(path, list) else [int(p) if p.isdigit() else p for p in path.split(".")]
    for part in parts[:-1]:
        document = document[part]
    return document, parts[-1]


def _set(document: Any, path: str, value: Any) -> None:
    parent, key = _walk(document, path)
    parent[key] = value


def _remove(document: Any, path: str) -> None:
    parent, key = _walk(document, path)
    del parent[key]


def edited(recorded: Recorded, edits: list[dict], config: dict[str, str] | None = None) -> Recorded:
    resources = {r.name: r for r in recorded.resources}
    inputs = copy.deepcopy(recorded.inputs)
    order = [r.name for r in recorded.resources]
    for edit in edits:
        if "add" in edit:
            spec = edit["add"]
            parent = resources[spec["parent"]].urn if spec.get("parent") else None
            urn = f"urn:pulumi:{recorded.stack}::egress-matrix::{spec['type']}::{spec['name']}"
            resources[spec["name"]] = DeployedResource(type=spec["type"], name=spec["name"], urn=urn, props=copy.deepcopy(spec["props"]), parent=parent)
            inputs[urn] = copy.deepcopy(spec["props"])
            order.append(spec["name"])
            continue
        resource = resources[edit["resource"]]
        if edit.get("drop"):
            del resources[edit["resource"]]
            order.remove(edit["resource"])
            continue
        props = copy.deepcopy(resource.props)
        given = copy.deepcopy(inputs.get(resource.urn, resource.props))
        changes: dict[str, Any] = {}
        if "set" in edit:
            _set(props, edit["set"], edit["value"])
            _set(given, edit["set"], edit["value"])
        if "replace" in edit:  # a string field edited in place: {replace: path, old: text, new: text}
            parent, key = _walk(props, edit["replace"])
            assert edit["old"] in parent[key], f"{edit['old']!r} not in {edit['replace']}"  # a stale fixture fails loudly
            _set(props, edit["replace"], parent[key].replace(edit["old"], edit["new"]))
            _set(given, edit["replace"], _walk(given, edit["replace"])[0][key].replace(edit["old"], edit["new"]))
        if "remove" in edit:
            _remove(props, edit["remove"])
            _remove(given, edit["remove"])
        if "dependencies" in edit:
            changes["dependencies"] = tuple(resources[n].urn for n in edit["dependencies"])
        if "additionalSecretOutputs" in edit:
            changes["additional_secret_outputs"] = tuple(edit["additionalSecretOutputs"])
        if "protect" in edit:
            changes["protect"] = bool(edit["protect"])
        resources[edit["resource"]] = dataclasses.replace(resource, props=props, **changes)
        inputs[resource.urn] = given
    merged = dict(recorded.config)
    merged.update(config or {})
    return dataclasses.replace(recorded, resources=[resources[n] for n in order], inputs=inputs, config=merged)


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def judge(policy_name: str, fixture: dict) -> list[dict[str, str]]:
    """The fixture's violations of ``policy_name``, as {level, resource, message}, in the pack's order."""
    from egress_policies import POLICIES

    policy = next(p for p in POLICIES if p.name == policy_name)
    recorded = edited(recording(fixture["stack"]), fixture.get("edits") or [], fixture.get("config"))
    config = {policy_name: {"enforcementLevel": (policy.enforcement_level or "advisory").value if hasattr(policy.enforcement_level, "value") else "advisory",
                            **(fixture.get("policyConfig") or {})}}
    return [{"level": v.level, "resource": v.resource, "message": v.message} for v in run_pack(recorded, config, [policy])]
