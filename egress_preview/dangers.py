"""What a change would break in a real deployment, read from two previews (``egress diff``): the deletions and
replacements of firewall resources (here), and the rules that change resource where the write order opens a gap
(dangers_moves.py); the gate and the Markdown for both.

A policy pack sees only the new state, so it cannot tell a replacement from a creation; the diff sees both sides. The
program registers these resources protected (the real engine then refuses the change); this names the danger in the
pull request, with its consequence and the way to do it safely (README, "Migrations"), and ``egress diff`` exits
non-zero unless the head stack sets ``allowFirewallReplacement``. Pure: two snapshots in, findings out.
"""
from __future__ import annotations

from typing import Any

# FIREWALL_KINDS and RULE_GROUP are also the tests' names
from .danger import ALLOW_SETTING, AWS_POLICY, FIREWALL_KINDS, OWN_POLICY_REPLACEMENT, REFERENCED_KINDS, RULE_GROUP, Danger
from .dangers_moves import move_dangers
from .diff_azure import references
from .diff_moves import RuleMove

def _is_firewall(resource: dict, base: dict) -> bool:
    return resource["type"] in FIREWALL_KINDS or (resource["type"] in REFERENCED_KINDS and bool(references(resource, base)))


def _shrunk(resource: dict, head: dict) -> list[str]:
    """A rule group whose capacity only shrinks need not be replaced: the way to keep it."""
    if resource["type"] != RULE_GROUP:
        return []
    new = next((r for r in head["resources"] if r["type"] == RULE_GROUP and r["name"] == resource["name"]), None)
    old_capacity, new_capacity = (resource.get("props") or {}).get("capacity"), ((new or {}).get("props") or {}).get("capacity")
    if isinstance(old_capacity, int) and isinstance(new_capacity, int) and new_capacity < old_capacity:
        return [f"its rules fit the deployed capacity: keep it with egress-matrix:awsRuleGroupCapacities: ['{resource['name']}={old_capacity}'] "
                "and the group is updated in place"]
    return []


def dangers(base: dict, head: dict, replacements: dict[tuple[str, str], list[str]]) -> list[Danger]:
    """Deletions and replacements of firewall resources. ``replacements``: (type, name) -> the replacement reasons the
    comparison found for resources on both sides."""
    head_keys = {(r["type"], r["name"]) for r in head["resources"]}
    base_keys = {(r["type"], r["name"]) for r in base["resources"]}
    # A resource named after the cluster and present under the new cluster name is a rename: a replacement.
    successors = {(typ, _stable(name, head)): name for typ, name in head_keys - base_keys if typ in FIREWALL_KINDS}
    found, renamed_to = [], set()
    for resource in base["resources"]:
        key = (resource["type"], resource["name"])
        if not _is_firewall(resource, base):
            continue
        if key not in head_keys:
            successor = successors.get((resource["type"], _stable(resource["name"], base)))
            detail = f"renamed to {successor}" if successor else _removal_reason(resource, head)
            renamed_to.add(successor)
            found.append(Danger("replace" if successor else "delete", resource["type"], resource["name"], detail, unregistered=True,
                                base_protected=bool(resource.get("protect"))))
        elif replacements.get(key):
            own_policy = resource["type"] == RULE_GROUP and any(r["type"] == AWS_POLICY for r in head["resources"])
            found.append(Danger("replace", resource["type"], resource["name"], "; ".join(replacements[key] + _shrunk(resource, head)),
                                OWN_POLICY_REPLACEMENT if own_policy else "", base_protected=bool(resource.get("protect"))))
    # A group that only renames an old one is named above as its replacement, not as a move.
    found += move_dangers(base, head, renamed_to)
    return sorted(found, key=lambda d: (d.type, d.name))


def blocking(found: list[Danger], base: dict, head: dict) -> list[Danger]:
    """The dangers this change may not carry: a replacement needs allowFirewallReplacement in the head (the engine allows
    unprotecting and replacing in one update); a resource no longer registered needs it in the base too (its protect is
    read from the state, so an earlier update must have unprotected it); rules moving into a new group, never."""
    def allowed_one(danger: Danger) -> bool:
        if danger.kind in ("move", "priority"):
            return False
        return allowed(head) and (not danger.unregistered or allowed(base))
    return [d for d in found if not allowed_one(d)]


def _stable(name: str, snapshot: dict) -> str:
    """A logical name without the cluster's name (``egress-<cluster>-nodes-0`` -> ``egress-*-nodes-0``)."""
    cluster = snapshot.get("cluster")
    if not cluster:
        return name
    return "egress-*" if name == f"egress-{cluster}" else name.replace(f"egress-{cluster}-", "egress-*-", 1)


def _removal_reason(resource: dict, head: dict) -> str:
    family = resource["type"].split(":")[0]
    if not any(r["type"].split(":")[0] == family for r in head["resources"] if r["type"] in FIREWALL_KINDS):
        return f"no {family} firewall resource is left in the stack: its target was dropped"
    return "no longer in the stack"


def allowed(head: dict) -> bool:
    """The head stack plans a migration (allowFirewallReplacement)."""
    return bool(head.get("allowFirewallReplacement"))


def markdown_lines(found: list[Danger], moves: list[RuleMove], blocked: list[Danger], base: dict, head: dict) -> list[str]:
    lines: list[str] = []
    if found:
        unprotected = [d for d in found if not d.base_protected and d.kind in ("replace", "delete") and d.type in FIREWALL_KINDS]
        state = [f"{len(blocked)} block this change (`egress diff` fails)" if blocked else "all allowed by `allowFirewallReplacement`"]
        if unprotected:
            state.append(f"{len(unprotected)} not yet protected in the stack's state (the first update of this release records it), so "
                         "`pulumi up` would go ahead: this diff is the gate")
        elif blocked:
            state.append("the real `pulumi preview` / `up` refuse the protected ones")
        lines += ["", "#### :rotating_light: Dangers to production", "",
                  f"{len(found)} change(s) would replace, delete or strand a firewall resource; {'; '.join(state)}. Planned migrations: "
                  "README, *Protection and migrations* (a deletion needs `allowFirewallReplacement` deployed in an earlier update: the "
                  "engine reads its protection from the state).", ""]
        lines += [f"- **{d.kind}**{' (blocks)' if d in blocked else ''} `{d.type}` **{d.name}**: {d.line()}" for d in found]
    if allowed(base) and allowed(head):
        lines += ["", "`allowFirewallReplacement` was already set in the base: remove it once the migration is applied, or every later "
                  "replacement goes through unrefused."]
    if moves:
        lines += ["", "#### Security-group rules changing group", "",
                  f"{len(moves)} rule(s) leave one group for another. Safe only if every network interface of the role already carries "
                  "the new group (`awsSecurityGroupsAttached` says it does); the new rules are created before the old ones are deleted.", ""]
        lines += [f"- {m.line()}" for m in moves[:100]] + ([f"- ... and {len(moves) - 100} more"] if len(moves) > 100 else [])
    return lines


def summary(blocked: list[Danger]) -> str:
    return f"{len(blocked)} change(s) would replace, delete or strand a firewall resource; the first: {blocked[0].line()}"


def snapshot_flag(config: dict[str, Any]) -> bool:
    """allowFirewallReplacement from the config the program ran with (the CLI hands every value as a string)."""
    return str(config.get(ALLOW_SETTING, "false")).strip().lower() == "true"
