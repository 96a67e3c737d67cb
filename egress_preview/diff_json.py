"""``egress diff --format json``: the comparison as one JSON document, for scripts (pure).

The same content as the Markdown comment, nothing beyond it: requirements (added, removed, needed by other entries now),
own entries, resources (added with their rules; changed with their rule lines, every changed field's old and new value
and the replacement reasons; removed), the operator's resulting ``status.noProxy``, dangers and whether they block,
rules in a new order, security-group rules changing group (and to which role), Network Firewall rules changing rule
group, policy results, coverage, and what could not be verified offline. Values are the ones the Markdown shows
(redacted, PEM as certificates, secrets as ``[secret]``) but whole: never shortened, every changed field listed (the
Markdown counts what its limits leave out); resource properties are not copied.
"""
from __future__ import annotations

from typing import Any

from .danger import Danger
from .diff_moves import Moved, RuleMove


def _resource(resource: dict) -> dict[str, str]:
    return {"type": resource["type"], "name": resource["name"]}


def _danger(danger: Danger, blocked: list[Danger]) -> dict[str, Any]:
    return {"kind": danger.kind, "type": danger.type, "name": danger.name, "detail": danger.detail, "blocks": danger in blocked,
            "message": danger.line()}


def _move(move: RuleMove) -> dict[str, str]:
    return {"role": move.role, "newRole": move.new_role or move.role, "rule": move.rule, "from": move.old_group, "to": move.new_group}


def _group_move(move: Moved) -> dict[str, Any]:
    return {"from": move.old, "to": move.new, "rules": list(move.rules)}


def diff_json(stack: str, base_ref: str, result: dict[str, Any]) -> dict[str, Any]:
    changed = result["resources_changed"]
    fields = result.get("fields_changed") or {}
    operator = result.get("operator")
    blocked = result.get("blocking") or []
    mandatory = [v for v in result["violations"] if v["level"] == "mandatory"]
    return {
        "stack": stack,
        "base": base_ref,
        "summary": {
            "requirementsAdded": len(result["requirements_added"]), "requirementsRemoved": len(result["requirements_removed"]),
            "resourcesAdded": len(result["resources_added"]), "resourcesChanged": len(changed),
            "resourcesRemoved": len(result["resources_removed"]),
            "replaced": sum(1 for _, reasons in changed.values() if reasons),
            "mandatoryViolations": len(mandatory), "advisoryViolations": len(result["violations"]) - len(mandatory),
            "newViolations": len(result["new_violations"]), "blocking": len(blocked),
        },
        "requirements": {
            "added": result["requirements_added"],
            "removed": result["requirements_removed"],
            "entriesChanged": [{"role": req["role"], "destination": req["destination"], "protocol": req["protocol"],
                                "ports": req.get("ports") or [], "entriesAdded": added, "entriesRemoved": gone}
                               for req, added, gone in result.get("requirements_reasons") or ()],
        },
        "ownEntries": result.get("own_entries") or {},
        "resources": {
            "added": [{**_resource(r), "rules": rules}
                      for r, rules in zip(result["resources_added"], result.get("rules_added") or [[] for _ in result["resources_added"]])],
            "changed": [{"type": typ, "name": name, "changes": lines, "fields": [c.json() for c in fields.get((typ, name), [])],
                         "replacement": reasons} for (typ, name), (lines, reasons) in changed.items()],
            "removed": [_resource(r) for r in result["resources_removed"]],
        },
        "operator": ({"resource": {"type": operator.resource[0], "name": operator.resource[1]},
                      "statusNoProxy": operator.change.json() if operator.change is not None else None,
                      "note": operator.unchanged_note or None} if operator is not None else None),
        "dangers": [_danger(d, blocked) for d in result.get("dangers") or ()],
        # rules both sides have in a new order (dangerous where the first match decides); moved lines of other text are
        # each field's "moved"
        "ruleOrder": [{"type": typ, "name": name, **order.json()} for (typ, name), order in result.get("rule_orders") or ()],
        "ruleMoves": [_move(m) for m in result.get("rule_moves") or ()],
        "ruleGroupMoves": [_group_move(m) for m in result.get("rule_group_moves") or ()],  # Network Firewall rules changing rule group
        "policy": {"violations": result["violations"], "new": result["new_violations"]},
        "coverage": result["coverage"],
        "notVerifiedOffline": result.get("corporate_proxy") or [],
    }
