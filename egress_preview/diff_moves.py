"""Rules that change firewall resource in one update, where the write order opens a gap (``egress diff``; pure).

- Network Firewall: a rule (its SID, derived from what it allows) leaving one rule group for another. Into a rule group
  created in this change the move always opens a gap: the old group is rewritten without the rule while the new group is
  created, and only then is the policy this stack creates updated to reference it (a policy named in
  awsFirewallPolicyArn does not reference it at all).
- Azure Firewall: a flow (rule type, source, destination, protocol and port) leaving one rule collection group for
  another written later in the chain (the component writes a policy's groups one at a time in priority order, 3-5
  minutes each): the removal lands first, and the destination is denied until the later group is written.
- Azure Firewall: a group taking the priority another group leaves in the same update: the chain writes the lower one
  first, while the other still holds the priority (a policy's priorities are unique).
The program does not know the deployed state, so the chain cannot put the group gaining rules first; the diff, which
sees both sides, names these and they block whatever the flag: each has a safe path in two updates.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

RULE_GROUP = "aws:networkfirewall/ruleGroup:RuleGroup"
AWS_POLICY = "aws:networkfirewall/firewallPolicy:FirewallPolicy"
RCG = "azure-native:network:FirewallPolicyRuleCollectionGroup"
_SID = re.compile(r"\bsid:\s*(\d+)\s*;")


@dataclass(frozen=True)
class Moved:
    """Rules of one kind leaving ``old`` for ``new``."""

    type: str
    old: str
    new: str
    rules: tuple[str, ...]  # what moved: 'sid 123', or an Azure flow


def _sids(resource: dict) -> set[str]:
    text = (((resource.get("props") or {}).get("ruleGroup") or {}).get("rulesSource") or {}).get("rulesString") or ""
    return set(_SID.findall(text)) if isinstance(text, str) else set()


def _pairs(before: dict[str, set[str]], after: dict[str, set[str]], typ: str) -> list[Moved]:
    """Each rule in one resource before and another after (a rule in several resources pairs those it left with those it
    joined)."""
    where_before: dict[str, set[str]] = {}
    where_after: dict[str, set[str]] = {}
    for name, rules in before.items():
        for rule in rules:
            where_before.setdefault(rule, set()).add(name)
    for name, rules in after.items():
        for rule in rules:
            where_after.setdefault(rule, set()).add(name)
    moved: dict[tuple[str, str], list[str]] = {}
    for rule in sorted(set(where_before) & set(where_after)):
        left, joined = sorted(where_before[rule] - where_after[rule]), sorted(where_after[rule] - where_before[rule])
        for index, new in enumerate(joined):
            if left:
                moved.setdefault((left[min(index, len(left) - 1)], new), []).append(rule)
    return [Moved(typ, old, new, tuple(rules)) for (old, new), rules in sorted(moved.items())]


def sid_moves(base: dict, head: dict) -> list[Moved]:
    """Network Firewall rules (by SID) that change rule group."""
    def placement(snapshot: dict) -> dict[str, set[str]]:
        return {r["name"]: {f"sid {sid}" for sid in _sids(r)} for r in snapshot["resources"] if r["type"] == RULE_GROUP}
    return _pairs(placement(base), placement(head), RULE_GROUP)


def _flows(resource: dict) -> set[str]:
    """An Azure rule collection group's flows, one per (type, source, destination, protocol:port)."""
    out = set()
    for collection in (resource.get("props") or {}).get("ruleCollections") or ():
        for rule in collection.get("rules") or ():
            sources = [*(rule.get("sourceIpGroups") or ()), *(rule.get("sourceAddresses") or ())]
            targets = [*(rule.get("targetFqdns") or ()), *(f"tag {t}" for t in rule.get("fqdnTags") or ()),
                       *(rule.get("destinationAddresses") or ()), *(rule.get("destinationFqdns") or ()),
                       *(rule.get("destinationIpGroups") or ())]
            ports = [f"{p.get('protocolType')}:{p.get('port')}" for p in rule.get("protocols") or ()] or \
                    [f"{proto}:{port}" for proto in rule.get("ipProtocols") or () for port in rule.get("destinationPorts") or ()]
            for source in sources:
                for target in targets:
                    for port in ports:
                        out.add(f"{rule.get('ruleType')} {source.rsplit('/', 1)[-1]} -> {target} {port}")
    return out


def _rcgs(snapshot: dict) -> dict[str, dict]:
    return {r["name"]: r for r in snapshot["resources"] if r["type"] == RCG}


def _priority(resource: dict) -> int:
    value = (resource.get("props") or {}).get("priority")
    return value if isinstance(value, int) else 0


def rcg_gaps(base: dict, head: dict) -> list[Moved]:
    """Flows leaving an Azure rule collection group for one the chain writes after it (the removal lands first)."""
    before, after = _rcgs(base), _rcgs(head)
    moves = _pairs({n: _flows(r) for n, r in before.items()}, {n: _flows(r) for n, r in after.items()}, RCG)
    # the chain runs in the head's priority order; a group the head no longer has is deleted after every write
    return [m for m in moves if m.old in after and _priority(after[m.old]) < _priority(after[m.new])]


def priority_handovers(base: dict, head: dict) -> list[tuple[str, str, int]]:
    """(group taking a priority, group that held it and still exists at another, the priority): the taker is written
    while the other still holds it when the taker comes first in the chain."""
    before, after = _rcgs(base), _rcgs(head)
    held = {_priority(r): name for name, r in before.items()}
    out = []
    for name, resource in sorted(after.items()):
        priority = _priority(resource)
        holder = held.get(priority)
        # a group no longer in the head is deleted after every write: it too holds the priority meanwhile
        if holder and holder != name and (holder not in after or _priority(after[holder]) > priority):
            out.append((name, holder, priority))
    return out
