"""``--format json`` of the commands that print a report for people: the same facts as the text, for scripts.

One JSON document on stdout (messages stay on stderr), keys in camelCase and stable: a key is added, never renamed or
removed without a changelog entry. The shapes are documented in each command's --help and tested in
tests/test_cli_json.py. Duck-typed on purpose: this module imports neither the preview nor the pack.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterable


def dump(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n"


def render_json(stack: str, out: str, written: dict[str, list[str]], summaries: dict[str, str], kept: Iterable[str],
                notes: Iterable[str] = (), warnings: Iterable[str] = ()) -> dict[str, Any]:
    """egress render: per target the files written (relative to OUT) and its summary lines; the notes and warnings on an
    existing policy's facts (where each came from, what was not read offline), as preview's JSON carries them."""
    return {"stack": stack, "out": out,
            "targets": [{"target": name, "files": sorted(files), "summary": summaries[name].split("\n")} for name, files in written.items()],
            "kept": list(kept), "notes": list(notes), "warnings": list(warnings)}


def violation_json(v: Any) -> dict[str, Any]:
    return {"policy": v.policy, "level": v.level, "severity": v.severity or None, "resource": v.resource, "message": v.message,
            "urn": v.urn or None}


def preview_json(result: Any, out: str) -> dict[str, Any]:
    """egress preview: what the summary says, with every violation (the text shows the first few advisory ones)."""
    recorded = result.recorded
    return {"stack": result.stack, "phase": recorded.phase, "updating": bool(result.updating), "out": out,
            "resources": len(recorded.resources), "unknownResources": sum(1 for r in recorded.resources if r.unknowns),
            "resourceTypes": dict(sorted(Counter(r.type for r in recorded.resources).items())),
            "requirements": len(result.requirements),
            "coverage": [{"target": c.target, "enforced": c.enforced, "allowed": c.allowed, "extra": c.extra, "rulesChecked": c.rules_checked}
                         for c in result.coverage],
            "corporateProxy": [line.strip() for line in result.corporate_proxy],
            "notes": list(getattr(recorded, "notes", ())), "warnings": list(recorded.warnings),
            "mandatory": len(result.mandatory), "advisory": len(result.violations) - len(result.mandatory),
            "violations": [violation_json(v) for v in result.violations]}


def policy_gate_json(gate: Any) -> dict[str, Any]:
    """egress policy-events: the gate's verdict, each result, the problems with the log."""
    return {"ok": gate.ok, "blocking": len(gate.blocking), "advisory": len(gate.results) - len(gate.blocking),
            "results": [{"policy": r.policy, "pack": r.pack, "level": r.level, "cantRun": r.cant_run, "resource": r.resource,
                         "message": r.message, "blocking": r.blocking} for r in gate.results],
            "problems": list(gate.problems), "passed": list(gate.passed)}


def catalog_check_json(catalog: Any, checks: Iterable[Any]) -> dict[str, Any]:
    """egress catalog check: the matrix's counts and, per stack, what it adds and its warnings."""
    return {"ok": True, "entries": len(catalog.entries), "platforms": len(catalog.platforms), "sources": len(catalog.sources),
            "stacks": [{"stack": c.stack, "own": dict(c.own), "resolved": c.resolved, "expired": c.expired, "groups": list(c.groups),
                        "warnings": list(c.warnings)} for c in checks]}


def stacks_check_json(stacks: Iterable[Any]) -> dict[str, Any]:
    """egress stacks check (passed): the stacks and the policies shared between them."""
    stacks = list(stacks)
    shared: dict[str, list[str]] = {}
    for s in stacks:
        if s.shares_with:
            shared.setdefault(s.lock, []).append(s.stack)
    return {"ok": True, "stacks": [s.stack for s in stacks], "sharedPolicies": [{"lock": lock, "stacks": sorted(names)}
                                                                               for lock, names in sorted(shared.items())]}


def learn_json(learned: Any, out: str) -> dict[str, Any]:
    """egress learn: the proposals file written, how many proposals, and the proposals document itself."""
    return {"stack": learned.document.get("stack"), "out": out, "proposals": learned.proposals, "document": learned.document}
