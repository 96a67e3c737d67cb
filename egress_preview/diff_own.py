"""``egress diff``, own egress: the own entries (a stack's entries, its container registries, the catalogs it lists)
added, removed or re-approved between base and head, each with its approval (owner, reference, expiry), and the
source group a changed rule is for.

Read from the snapshots' requirements (``approvals`` and ``role``, as ``egress matrix --format json`` writes them), so
both sides are judged from what their own code resolved. A rule is for a group when it names an own entry of that
group (Azure description, Suricata ``metadata``) or, in squid.conf, when its ACL's comment says so
(``# NAME: GROUP -> HTTPS PORTS``). Pure.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterable, Optional

from egress.citations import cite
from egress.models import ROLES

_SQUID_HEADER = re.compile(r"^#\s*([a-z0-9][a-z0-9-]*): (\S+) -> (?:HTTPS|HTTP) \S+\s*$")


def is_group(role: str) -> bool:
    return role not in ROLES


def who(role: str) -> str:
    """'group payments' for a source group, 'nodes' for a role."""
    return f"group {role}" if is_group(role) else role


def _ports(req: dict) -> str:
    return ",".join(str(p) for p in req.get("ports") or ()) or "any"


def own_entries(requirements: Iterable[dict]) -> dict[str, dict[str, Any]]:
    """Own entry id -> its approval, the role or group it is for, and the flows it asks for (sorted)."""
    out: dict[str, dict[str, Any]] = {}
    for req in requirements:
        for approval in req.get("approvals") or ():
            entry = out.setdefault(approval["entry"], {"approval": {k: approval.get(k) for k in ("owner", "reference", "expires")},
                                                       "role": req["role"], "flows": set()})
            entry["flows"].add(f"`{req['destination']}` {req['protocol']}/{_ports(req)}")
    for entry in out.values():
        entry["flows"] = sorted(entry["flows"])
    return dict(sorted(out.items()))


def compare_own(base_requirements: Iterable[dict], head_requirements: Iterable[dict]) -> dict[str, list]:
    """Own entries added, removed, and re-approved (same id, another owner, reference or expiry)."""
    base, head = own_entries(base_requirements), own_entries(head_requirements)
    return {
        "added": [{"entry": i, **head[i]} for i in head if i not in base],
        "removed": [{"entry": i, **base[i]} for i in base if i not in head],
        "reapproved": [{"entry": i, "before": base[i]["approval"], "after": head[i]["approval"], "role": head[i]["role"]}
                       for i in head if i in base and base[i]["approval"] != head[i]["approval"]],
    }


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def approval_text(approval: dict) -> str:
    expires = f", expires {approval['expires']}" if approval.get("expires") else ", no expiry"
    return f"owner {approval.get('owner')}, reference {approval.get('reference')}{expires}"


def markdown_lines(own: dict[str, list]) -> list[str]:
    lines: list[str] = []
    for title, key in (("Own entries added", "added"), ("Own entries removed", "removed")):
        if own.get(key):
            lines += ["", f"#### {title}", "", "| Entry | For | Destinations | Owner | Reference | Expires |", "|---|---|---|---|---|---|"]
            lines += ["| " + " | ".join(_cell(x) for x in (f"`{e['entry']}`", who(e["role"]), "<br>".join(e["flows"]), e["approval"].get("owner"),
                                                            e["approval"].get("reference"), e["approval"].get("expires") or "never")) + " |"
                      for e in own[key]]
    if own.get("reapproved"):
        lines += ["", "#### Own entries re-approved", ""]
        lines += [f"- `{e['entry']}` ({who(e['role'])}): {approval_text(e['before'])} → {approval_text(e['after'])}" for e in own["reapproved"]]
    return lines


def requirement_source(req: dict) -> str:
    """What stands behind a requirement in the diff's tables: its citations (two at most), or its approvals."""
    # a base previewed with its own code may predate citing by address ("doc": the document's name then)
    cites = [cite(c.get("url") or c.get("doc", ""), c.get("section", "")) for c in req.get("citations", [])[:2]]
    cites += [f"{a['entry']} approved by {a.get('owner')} ({a.get('reference')}{', expires ' + a['expires'] if a.get('expires') else ''})"
              for a in req.get("approvals") or ()]
    return _cell("; ".join(cites))  # approvals are the stack author's text: escaped like every other cell


class RuleGroups:
    """The source groups a rule is for, told by the own entries it names (or, in squid.conf, its ACL's comment)."""

    def __init__(self, *requirement_lists: Iterable[dict], old: Optional["RuleGroups"] = None):
        roles = {a["entry"]: req["role"] for reqs in requirement_lists for req in reqs for a in req.get("approvals") or ()
                 if is_group(req["role"])}
        self.roles = roles
        # a removed rule is the base's: its entries' groups there name it (an entry may have moved to a group since)
        self.old = old or self
        ids = sorted(roles, key=lambda i: (-len(i), i))
        self.pattern = re.compile(r"(?<![a-z0-9/-])(" + "|".join(map(re.escape, ids)) + r")(?![a-z0-9-])") if ids else None

    def squid_headers(self, resource: dict) -> dict[str, str]:
        """squid.conf ACL name -> the group its comment names."""
        data = resource.get("props", {}).get("data")
        text = data.get("squid.conf", "") if isinstance(data, dict) else ""
        found = {}
        for line in str(text).splitlines():
            header = _SQUID_HEADER.match(line.strip())
            if header and is_group(header.group(2)):
                found[header.group(1)] = header.group(2)
        return found

    def of(self, rule: Any, headers: Optional[dict[str, str]] = None) -> list[str]:
        groups = set()
        if self.pattern is not None:
            text = rule if isinstance(rule, str) else json.dumps(rule, sort_keys=True)
            groups |= {self.roles[i] for i in self.pattern.findall(text)}
        if headers and isinstance(rule, str):
            for name in re.findall(r"[A-Za-z0-9_.-]+", rule):
                if name in headers:
                    groups.add(headers[name])
        return sorted(groups)

    def suffix(self, rule: Any, headers: Optional[dict[str, str]] = None) -> str:
        groups = self.of(rule, headers)
        return f" (for {'groups' if len(groups) > 1 else 'group'} {', '.join(groups)})" if groups else ""
