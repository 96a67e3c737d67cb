"""``egress diff``: the preview of a git ref against the working tree, as one pull-request comment per stack.

The base is previewed with its own code (``git archive`` of the ref, run in a child process with that tree first on
the path; ``diff_base``), so a change to the compiler shows as what it changes. Both sides are ``snapshot``s
(resources.json); the comparison is pure: requirements added / removed with citations, resources added / changed /
removed with the rules inside them and the old -> new value of every other changed field (``diff_values``; OpenShift's
resulting ``status.noProxy`` too), replacements called out, and the policy results (which pulumi/actions does not put in its
comment). The Markdown stays under GitHub's 65,535-character comment limit.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Optional

from .dangers import blocking, dangers
from .dangers import markdown_lines as danger_lines
from .diff_azure import replacement_reasons as azure_reasons
from .diff_base import DiffError, base_snapshot, check_base_ref  # noqa: F401 - the command's and the tests' names
from .diff_delta import dangerous_line
from .diff_moves import rule_moves, sid_moves
from .diff_own import RuleGroups, compare_own, requirement_source, who
from .diff_own import markdown_lines as own_lines
from .diff_rules import residual, rule_lines, rule_orders, rules
from .diff_values import PROXY_PATCH, code, field_changes, field_lines, operator_no_proxy

GITHUB_COMMENT_LIMIT = 65_535
MARKER = "<!-- egress-diff:{stack} -->"
# Inputs whose change makes the provider replace the resource (delete and create), by type.
REPLACE_ON = {
    "aws:networkfirewall/ruleGroup:RuleGroup": ("capacity", "type", "name"),
    "aws:networkfirewall/firewallPolicy:FirewallPolicy": ("name",),
    "aws:ec2/securityGroup:SecurityGroup": ("vpcId", "description", "name"),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": ("securityGroupId",),
    "azure-native:network:FirewallPolicyRuleCollectionGroup": ("ruleCollectionGroupName", "firewallPolicyName", "resourceGroupName"),
    "azure-native:network:IpGroup": ("ipGroupsName", "resourceGroupName", "location"),
    "azure-native:network:FirewallPolicy": ("resourceGroupName", "location", "firewallPolicyName"),
}
KUBERNETES_REPLACE_ON = ("apiVersion", "kind", "metadata.name", "metadata.namespace")
# Immutable fields of Kubernetes kinds: the API server refuses a change, so the program marks them replaceOnChanges.
KUBERNETES_IMMUTABLE = {"kubernetes:core/v1:Service": ("spec.clusterIP",)}


# -- comparison (pure) ---------------------------------------------------------------------------------------------------

def _req_key(req: dict) -> tuple:
    return (req["role"], req["destination"], req["protocol"], tuple(req.get("ports") or ()))


def _req_line(req: dict) -> str:
    ports = ",".join(str(p) for p in req.get("ports") or ()) or "any"
    return f"| {who(req['role'])} | `{req['destination']}` | {req['protocol']}/{ports} | {', '.join(req.get('entries', []))} | {requirement_source(req)} |"


def _get(document: Any, path: str) -> Any:
    for part in path.split("."):
        document = document.get(part) if isinstance(document, dict) else None
    return document


def fields(old: dict, new: dict) -> list:
    """The changed fields of a resource with their old and new values (diff_values.FieldChange): all but the exact parts
    rule lines show (diff_rules.residual)."""
    return field_changes(*residual(old, new))


def resource_changes(old: dict, new: dict, groups: Optional[RuleGroups] = None) -> tuple[list[str], list[str]]:
    """(rule-level and field change lines, replacement reasons) for one resource present on both sides; ``groups``: say
    which source group a rule is for."""
    lines = rule_lines(old, new, groups) + field_lines(fields(old, new), new["type"])
    keys = REPLACE_ON.get(new["type"], KUBERNETES_REPLACE_ON if new["type"].startswith("kubernetes:") else ())
    keys = tuple(dict.fromkeys((*keys, *KUBERNETES_IMMUTABLE.get(new["type"], ()), *new.get("replaceOnChanges", ()))))
    reasons = [f"{key}: {json.dumps(_get(old['props'], key))} -> {json.dumps(_get(new['props'], key))}"
               for key in keys if _get(old["props"], key) != _get(new["props"], key)]
    return lines, reasons


def _key(resource: dict) -> tuple[str, str]:
    return resource["type"], resource["name"]


def _adopted(base_res: dict, head_res: dict) -> dict:
    """Head resources keyed as the base resource their aliases adopt (the engine updates it in place, no delete and
    create): an alias is ``name`` (same type) or ``type::name``."""
    out = {}
    for key, resource in head_res.items():
        earlier = [tuple(a.split("::", 1)) if "::" in a and not a.startswith("urn:") else (resource["type"], a)
                   for a in resource.get("aliases") or ()]
        adopted = next((k for k in earlier if k in base_res and k not in head_res), None)
        out[adopted or key] = resource
    return out


def compare(base: dict, head: dict) -> dict[str, Any]:
    base_reqs, head_reqs = {_req_key(r): r for r in base["requirements"]}, {_req_key(r): r for r in head["requirements"]}
    base_res, head_res = {_key(r): r for r in base["resources"]}, {_key(r): r for r in head["resources"]}
    head_res = _adopted(base_res, head_res)
    groups = RuleGroups(head["requirements"], old=RuleGroups(base["requirements"]))
    changed = {}
    for key in sorted(set(base_res) & set(head_res)):
        if base_res[key]["props"] != head_res[key]["props"]:
            changed[key] = resource_changes(base_res[key], head_res[key], groups)
    # what the inputs do not show: a new subscription or provider, the groups of a replaced policy (diff_azure.py)
    for key, reasons in azure_reasons(base, head, {k: r for k, (_, r) in changed.items()}).items():
        lines, found_reasons = changed.get(key, ([], []))
        changed[key] = (lines, found_reasons + reasons)
    changed = dict(sorted(changed.items()))
    old_violations = {(v["policy"], v["resource"], v["message"]) for v in base.get("violations", [])}
    found = dangers(base, head, {key: reasons for key, (_, reasons) in changed.items()})
    return {
        "requirements_added": [head_reqs[k] for k in sorted(set(head_reqs) - set(base_reqs))],
        "requirements_removed": [base_reqs[k] for k in sorted(set(base_reqs) - set(head_reqs))],
        # the same flow, now also needed by other entries (a feature that shares a host adds its ids here)
        "requirements_reasons": [(head_reqs[k], sorted(set(head_reqs[k].get("entries", [])) - set(base_reqs[k].get("entries", []))),
                                  sorted(set(base_reqs[k].get("entries", [])) - set(head_reqs[k].get("entries", []))))
                                 for k in sorted(set(base_reqs) & set(head_reqs)) if base_reqs[k].get("entries") != head_reqs[k].get("entries")],
        "own_entries": compare_own(base["requirements"], head["requirements"]),
        # the source group each new resource's rules are for (by the own entries they name)
        "rules_added": [_rules_of_new(head_res[k], groups) for k in sorted(set(head_res) - set(base_res))],  # as resources_added
        "resources_added": [head_res[k] for k in sorted(set(head_res) - set(base_res))],
        "resources_removed": [base_res[k] for k in sorted(set(base_res) - set(head_res))],
        "resources_changed": changed,
        "fields_changed": {key: fields(base_res[key], head_res[key]) for key in changed},
        # rules both sides have in a new order, whatever else changed (dangerous where the first match decides)
        "rule_orders": [(key, order) for key in changed for order in rule_orders(base_res[key], head_res[key])],
        "operator": operator_no_proxy(base, head),  # OpenShift's status.noProxy, as each side's program computed it
        # what the head's preview could not verify offline (a corporate proxy it does not deploy)
        "corporate_proxy": list(head.get("corporateProxy") or ()),
        "violations": head.get("violations", []),
        "new_violations": [v for v in head.get("violations", []) if (v["policy"], v["resource"], v["message"]) not in old_violations],
        "coverage": head.get("coverage", []),
        "dangers": found,
        "blocking": blocking(found, base, head),
        "rule_moves": rule_moves(base, head),
        "rule_group_moves": sid_moves(base, head),  # Network Firewall rules that change rule group (by what they allow)
        "base": {"allowFirewallReplacement": base.get("allowFirewallReplacement", False)},
        "head": {"allowFirewallReplacement": head.get("allowFirewallReplacement", False)},
    }


def _rules_of_new(resource: dict, groups: Optional[RuleGroups] = None) -> list[str]:
    groups = groups or RuleGroups()
    headers = groups.squid_headers(resource)
    named = rules(resource)
    return [f"+ {name}" + groups.suffix(named[name], headers) for name in sorted(named)][:50]


def markdown(stack: str, base_ref: str, result: dict[str, Any], limit: int = GITHUB_COMMENT_LIMIT) -> str:
    replacements = [(key, reasons) for key, (_, reasons) in result["resources_changed"].items() if reasons]
    mandatory = [v for v in result["violations"] if v["level"] == "mandatory"]
    lines = [MARKER.format(stack=stack), f"### egress-matrix: `{stack}` against `{base_ref}`", "",
             f"**Requirements** +{len(result['requirements_added'])} / -{len(result['requirements_removed'])} · "
             f"**Resources** +{len(result['resources_added'])} / ~{len(result['resources_changed'])} / -{len(result['resources_removed'])}"
             f"{f' ({len(replacements)} replaced)' if replacements else ''} · "
             f"**Policy** {len(mandatory)} mandatory, {len(result['violations']) - len(mandatory)} advisory ({len(result['new_violations'])} new)"]
    if not any(result[k] for k in ("requirements_added", "requirements_removed", "resources_added", "resources_removed", "resources_changed")):
        lines += ["", "No change to the requirements or the resources."]
    lines += danger_lines(result.get("dangers", []), result.get("rule_moves", []), result.get("blocking", []), result.get("base", {}), result.get("head", {}))
    lines += _sid_lines(result)
    lines += _order_lines(result)
    for title, reqs in (("Requirements added", result["requirements_added"]), ("Requirements removed", result["requirements_removed"])):
        if reqs:
            lines += ["", f"#### {title}", "", "| Role | Destination | Protocol/ports | Entries | Source |", "|---|---|---|---|---|",
                      *(_req_line(r) for r in reqs)]
    lines += own_lines(result.get("own_entries", {}))
    if result.get("requirements_reasons"):
        lines += ["", "#### Requirements needed by other entries now", ""]
        lines += [f"- {r['role']} `{r['destination']}` {r['protocol']}: " + "; ".join(filter(None, [
                  f"+{', '.join(added)}" if added else "", f"-{', '.join(gone)}" if gone else ""])) for r, added, gone in result["requirements_reasons"]]
    if replacements:
        lines += ["", "#### Replacements (delete and create)", ""]
        lines += [f"- :warning: `{t}` **{n}**: {'; '.join(reasons)}" for (t, n), reasons in replacements]
    if result["resources_added"] or result["resources_changed"] or result["resources_removed"]:
        lines += ["", "#### Resources", ""]
        rules_added = result.get("rules_added") or [_rules_of_new(resource) for resource in result["resources_added"]]
        for resource, rules in zip(result["resources_added"], rules_added):
            lines.append(f"- **+** `{resource['type']}` **{resource['name']}**")
            lines += [f"  - `{line}`" for line in rules]
        operator = result.get("operator")
        for (typ, name), (changes, _) in result["resources_changed"].items():
            lines.append(f"- **~** `{typ}` **{name}**")
            lines += [f"  - {code(line)}" for line in changes]
            if operator is not None and operator.resource == (typ, name):
                lines += [f"  - {code(line)}" for line in operator.lines()]
        for resource in result["resources_removed"]:
            lines.append(f"- **-** `{resource['type']}` **{resource['name']}**")
    lines += ["", "#### Policy pack", ""]
    if mandatory:
        lines += [f"- :x: **{v['policy']}** on {v['resource']}: {v['message']}" for v in mandatory]
    advisory = [v for v in result["new_violations"] if v["level"] != "mandatory"]
    if advisory:
        lines += ["", f"<details><summary>{len(advisory)} new advisory finding(s)</summary>", "",
                  *(f"- {v['policy']} on {v['resource']}: {v['message']}" for v in advisory), "", "</details>"]
    if not mandatory and not advisory:
        lines.append("No mandatory violation; no new advisory finding.")
    lines += _operator_lines(result)
    proxy = result.get("corporate_proxy") or []
    # a kubernetes target that deploys only the cluster's proxy settings enforces nothing: the proxy lines say what is unverified
    coverage = ", ".join(f"{c['target']} {c['allowed']}/{c['enforced']}" for c in result["coverage"]
                         if c["enforced"] or not (c["target"] == "kubernetes" and proxy))
    if coverage:
        lines += ["", f"Requirements allowed by what will be deployed: {coverage}."]
    if proxy:  # as egress preview prints them: a path per proxy, then what it means
        lines += [""] + [f"  - {line.strip()}" if line.startswith(" ") else f"- kubernetes: {line}" for line in proxy]
    return truncate("\n".join(lines) + "\n", limit)


def _sid_lines(result: dict[str, Any]) -> list[str]:
    """Network Firewall rules changing rule group: into a group created in this change they are a danger (above); between
    existing groups the new group's rules and the old group's are written side by side, a window of seconds."""
    moves = result.get("rule_group_moves") or []
    if not moves:
        return []
    count = sum(len(m.rules) for m in moves)
    return ["", "#### Network Firewall rules changing rule group", "", f"{count} rule(s) leave one rule group for another:", "",
            *(f"- {m.old} -> {m.new}: {', '.join(m.rules[:20])}{' ...' if len(m.rules) > 20 else ''}" for m in moves)]


def _order_lines(result: dict[str, Any]) -> list[str]:
    """Rules both sides have that moved where the first match decides: with dangers, as a move can widen what passes
    (a deny below the allow it used to stop), and not blocking, as a planned change may reorder rules."""
    moved = [f"- `{typ}` **{name}**: {code(order.line())}" for (typ, name), order in result.get("rule_orders") or () if order.dangerous]
    moved += [f"- `{typ}` **{name}**: {code(change.line())}" for (typ, name), found in (result.get("fields_changed") or {}).items()
              for change in found if change.moved and any(dangerous_line(m) for m in change.moved)]
    if not moved:
        return []
    return ["", "#### :warning: Rules in a new order", "", f"{len(moved)} resource change(s) move rules where the first match decides: "
            "check that no deny now stands below an allow it used to stop (the rules added and removed are listed under Resources).",
            "", *moved]


def _operator_lines(result: dict[str, Any]) -> list[str]:
    """The operator's status.noProxy change when its Proxy patch is not among the changed resources (a network changed)."""
    operator = result.get("operator")
    if operator is None or operator.resource in result["resources_changed"] or not operator.lines():
        return []
    return ["", "#### What the platform computes", "", f"- `{PROXY_PATCH}` **{operator.resource[1] or 'cluster Proxy'}**",
            *(f"  - {code(line)}" for line in operator.lines())]


def truncate(text: str, limit: int = GITHUB_COMMENT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    note = "\n\n**Truncated: {n:,} more characters.** The full diff is in the workflow's artifact (or run `egress diff` locally).\n"
    room = limit - len(note.format(n=len(text)))
    cut = text.rfind("\n", 0, room)
    cut = cut if cut > 0 else room
    return text[:cut] + note.format(n=len(text) - cut)


def diff_markdown(project_root: Path, base_ref: str, stack: str, head: dict[str, Any]) -> str:
    return markdown(stack, base_ref, compare(base_snapshot(project_root, base_ref, stack), head))


def diff_result(project_root: Path, base_ref: str, stack: str, head: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The comment and the comparison behind it (``egress diff`` fails on its dangers unless the stack allows them)."""
    result = compare(base_snapshot(project_root, base_ref, stack), head)
    return markdown(stack, base_ref, result), result


def stacks_of(snapshots: Iterable[dict]) -> list[str]:
    return [s["stack"] for s in snapshots]
