"""The dangers of rules changing resource where the write order opens a gap (``egress diff``; pure), with the way to
land each safely. What moved is found in diff_moves.py; these block whatever allowFirewallReplacement says, as each has
a safe path in two updates.
"""
from __future__ import annotations

from .danger import AWS_POLICY, RULE_GROUP, SECURITY_GROUP, Danger
from .diff_moves import RCG, Moved, priority_handovers, rcg_gaps, rule_moves, sid_moves

SECURITY_GROUP_ADVICE = ("it is created in this change, so no network interface carries it yet: the flows of these rules are dropped until it "
                         "is attached. Create it first (a role's: awsSecurityGroupCounts; a source group's: keep the old entry beside the "
                         "group's in this update), attach it to the workloads' network interfaces, then move the rules "
                         "(awsSecurityGroupsAttached; remove the old entry) in a later update")
RULE_GROUP_ADVICE = ("so their flows are dropped meanwhile. Keep every rule in the rule group it is in: keep the source groups' rules within "
                     "one rule group (split them across stacks), or keep the entry where it was in this update and remove it in a later one")
RCG_ADVICE = ("the groups of a policy are written one at a time in priority order (3-5 minutes each), so the removal lands first and these "
              "destinations are denied until this group is written. Land it in two updates: add the entry to its new place first (keep "
              "the old one), then remove the old one in a later update")
UNIQUE = "a policy's group priorities are unique, so the write is refused (or both groups briefly share it) and the update stops half-way"
BAND = "its file's 'azure_band: <20-646>'"


def move_dangers(base: dict, head: dict, renamed_to: set[str]) -> list[Danger]:
    """Rules moving into a security group or a Network Firewall rule group created in this change, Azure flows moving
    into a group written later, and Azure groups taking a priority another holds meanwhile. ``renamed_to``: the new
    names of renamed resources (named as replacements, not as moves)."""
    base_keys = {(r["type"], r["name"]) for r in base["resources"]}
    head_keys = {(r["type"], r["name"]) for r in head["resources"]}
    new_groups = {name for typ, name in head_keys - base_keys if typ == SECURITY_GROUP} - renamed_to
    found = []
    into_new: dict[str, list] = {}
    for move in rule_moves(base, head):
        if move.new_group in new_groups:
            into_new.setdefault(move.new_group, []).append(move)
    for group, moves in into_new.items():
        found.append(Danger("move", SECURITY_GROUP, group, f"{len(moves)} rule(s) from {', '.join(sorted({m.old_group for m in moves}))}",
                            SECURITY_GROUP_ADVICE))
    created_policy = any(r["type"] == AWS_POLICY for r in head["resources"])
    why = ("the old rule group is rewritten without them while this one is created, and only then is the policy this stack creates "
           "updated to reference it" if created_policy else
           "the policy named in awsFirewallPolicyArn does not reference it (its owner adds it only after this update)")
    for group, moves in _merged([m for m in sid_moves(base, head) if (RULE_GROUP, m.new) not in base_keys]).items():
        count = sum(len(m.rules) for m in moves)
        found.append(Danger("move", RULE_GROUP, group, f"{count} rule(s) from {', '.join(sorted({m.old for m in moves}))}: "
                            + ", ".join(r for m in moves for r in m.rules[:5]) + (" ..." if count > 5 else ""),
                            f"it is created in this change: {why}, {RULE_GROUP_ADVICE}"))
    for group, moves in _merged(rcg_gaps(base, head)).items():
        count = sum(len(m.rules) for m in moves)
        found.append(Danger("move", RCG, group, f"{count} flow(s) from {', '.join(sorted({m.old for m in moves}))}, written before it: "
                            + "; ".join(r for m in moves for r in m.rules[:3]) + (" ..." if count > 3 else ""), RCG_ADVICE))
    found += _priority_dangers(base, head)
    return found


def _merged(moves: list[Moved]) -> dict[str, list[Moved]]:
    out: dict[str, list[Moved]] = {}
    for move in moves:
        out.setdefault(move.new, []).append(move)
    return out


def _priority_dangers(base: dict, head: dict) -> list[Danger]:
    """A group taking a priority another holds meanwhile, with the safe path of its case: the holder deleted at the end
    of the update (a renamed catalog), the taker new (a new catalog sorting earlier), or both there before (a swap)."""
    before = {r["name"] for r in base["resources"] if r["type"] == RCG}
    after = {r["name"] for r in head["resources"] if r["type"] == RCG}
    found = []
    for taker, holder, priority in priority_handovers(base, head):
        if holder not in after:
            found.append(Danger("priority", RCG, taker, f"{priority}, which {holder} holds until it is deleted at the end of the update",
                                f"{UNIQUE}. Give {taker}'s catalog an unused band ({BAND}) in this update, so it does not take the "
                                f"priority of the group it replaces; {holder} is deleted at the end"))
        elif taker not in before or after - before:
            found.append(Danger("priority", RCG, taker, f"{priority}, which {holder} holds until it is written later in the same update",
                                f"{UNIQUE}. Keep every existing group's priority: pin the new catalog's band ({BAND}, an unused one) so "
                                "no group moves"))
        else:
            found.append(Danger("priority", RCG, taker, f"{priority}, which {holder} holds until it is written later in the same update",
                                f"{UNIQUE}. No group is new here: move one of them to an unused band first ({BAND}), and the other "
                                "to the priority it left in a later update"))
    return found
