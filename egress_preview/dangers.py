"""What a change would break in a real deployment, read from two previews (``egress diff``): the deletions and
replacements of firewall resources, and the security-group rules that change group.

A policy pack sees only the new state, so it cannot tell a replacement from a creation; the diff sees both sides. The
program registers these resources protected (the real engine then refuses the change); this names the danger in the
pull request, with its consequence and the way to do it safely (README, "Migrations"), and ``egress diff`` exits
non-zero unless the head stack sets ``allowFirewallReplacement``. Pure: two snapshots in, findings out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from egress.deployed import PROTECTED_TYPES

from .diff_azure import IP_GROUP, references
from .diff_moves import RCG, Moved, priority_handovers, rcg_gaps, sid_moves

# The resources protected by default, and what deleting or replacing each does to the traffic it guards.
FIREWALL_KINDS: dict[str, tuple[str, str, str]] = {
    # type: (what it is, consequence of a replacement, consequence of a deletion)
    "azure-native:network:FirewallPolicy": (
        "Azure Firewall Policy",
        "Pulumi creates the new policy, moves the rule collection groups to it, then deletes the old one; a firewall this stack "
        "does not manage is still associated with the old policy, which is emptied before its delete fails: all egress denied. "
        "Associate the firewall with the new policy first",
        "its rule collection groups are deleted first: the firewall associated with it denies all egress"),
    "azure-native:network:FirewallPolicyRuleCollectionGroup": (
        "rule collection group",
        "the new group is written at the same priority before the old one is deleted",
        "the egress its rules allowed is denied"),
    "aws:networkfirewall/ruleGroup:RuleGroup": (
        "Network Firewall rule group",
        "the new group is created and the old one deleted: a firewall policy this stack does not manage (awsFirewallPolicyArn) "
        "still references the old group, so its delete fails and the update stops half-way",
        "the flows its rules passed are dropped"),
    "aws:networkfirewall/firewallPolicy:FirewallPolicy": (
        "Network Firewall policy",
        "the firewall still uses the old policy: the new one enforces nothing until the firewall is switched to it",
        "a firewall using it cannot keep it: AWS refuses the delete and the update stops half-way"),
    "aws:ec2/securityGroup:SecurityGroup": (
        "security group",
        "the new group is attached to no network interface: every flow its rules allowed is dropped until the nodes carry it",
        "AWS refuses to delete a group network interfaces still carry, so the update stops half-way (its rules are registered "
        "deleted_with it, so they are not deleted first); once nothing carries it, its flows are gone"),
    "kubernetes:core/v1:Service": (
        "Service",
        "its address changes, and the clients configured with the old one (node-level proxy settings, kubeconfigs, allowlists) "
        "lose it",
        "the clients of its address lose it"),
    # Server-side-apply patches of objects the platform owns: deleting one gives up its fields, which the API server may then
    # unset (pulumi-kubernetes#2107).
    "kubernetes:kubermatic.k8c.io/v1:ClusterPatch": (
        "KKP Cluster patch (API-server allowlist)",
        "the old patch is deleted, giving up spec.apiServerAllowedIPRanges, before the new one is applied: the API server may be open "
        "meanwhile",
        "spec.apiServerAllowedIPRanges is given up and may be unset: the API server opens to every client"),
    "kubernetes:config.openshift.io/v1:ProxyPatch": (
        "OpenShift cluster Proxy patch",
        "the old patch is deleted, giving up the Proxy's fields, before the new one is applied: the operator rolls the nodes without a proxy",
        "the Proxy's httpProxy, httpsProxy, noProxy and trustedCA are given up: the operator rolls every node without them"),
    "kubernetes:kubermatic.k8c.io/v1:SeedPatch": (
        "KKP Seed patch (node proxy settings)",
        "the old patch is deleted, giving up the datacenter's node proxy settings, before the new one is applied",
        "the datacenter's node.httpProxy and node.noProxy are given up: new nodes start without the proxy"),
}
assert set(FIREWALL_KINDS) == set(PROTECTED_TYPES)  # what the diff names is what the program protects
# Not protected (a new IP Group is created and referenced before the old one goes), but named when the policy's rules
# reference it: its name is fixed, so a replacement or deletion meets those references.
REFERENCED_KINDS: dict[str, tuple[str, str, str]] = {
    IP_GROUP: (
        "IP Group",
        "the policy's rules reference it: Azure refuses to delete it while they do (IpGroupsHasFirewallPolicyReferences), so the "
        "update stops half-way, and a new one of the same name and resource group is the same Azure resource, deleted under the "
        "rules. Create the new one side by side under a new name (a new clusterName), move the rules to it, then remove the old",
        "Azure refuses to delete an IP Group a policy's rules reference (IpGroupsHasFirewallPolicyReferences): the update stops "
        "half-way; remove the rules naming it in an earlier update"),
}
KINDS = {**FIREWALL_KINDS, **REFERENCED_KINDS}
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SECURITY_GROUP_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
ALLOW_SETTING = "egress-matrix:allowFirewallReplacement"


# A rule group replaced under the policy this stack creates: Pulumi repoints that policy before deleting the old group.
OWN_POLICY_REPLACEMENT = ("the new group is created and the policy this stack creates is repointed to it before the old one is deleted "
                          "(create-before-delete): no gap, but the group is protected, so the change needs allowFirewallReplacement")
AWS_POLICY = "aws:networkfirewall/firewallPolicy:FirewallPolicy"
RULE_GROUP = "aws:networkfirewall/ruleGroup:RuleGroup"


@dataclass(frozen=True)
class Danger:
    # "replace" | "delete" | "move" (rules into a security group or rule group created in the same change, or into an Azure
    # group written later than the one they leave) | "priority" (an Azure group takes a priority another leaves)
    kind: str
    type: str
    name: str
    detail: str  # why it is replaced (the changed inputs), or what removed it
    consequence: str = ""  # what it does in production, when the stack's own resources change the type's usual story
    # Not registered any more (deleted, or renamed to a new logical name): the engine judges protect from the state, so only
    # an earlier update that unprotected it (allowFirewallReplacement already in the base) lets it go.
    unregistered: bool = False
    base_protected: bool = False  # the base registered it protected (False on the first update of this release)

    def line(self) -> str:
        if self.kind == "move":
            return f"moves rules into the {KINDS[self.type][0]} {self.name} ({self.detail}): {self.consequence}"
        if self.kind == "priority":
            return f"the {KINDS[self.type][0]} {self.name} takes priority {self.detail}: {self.consequence}"
        what, on_replace, on_delete = KINDS[self.type]
        verb = "replaces" if self.kind == "replace" else "deletes"
        return f"{verb} the {what} {self.name} ({self.detail}): {self.consequence or (on_replace if self.kind == 'replace' else on_delete)}"


@dataclass(frozen=True)
class RuleMove:
    role: str
    rule: str
    old_group: str
    new_group: str
    new_role: str = ""  # the role or source group of the new group (another than ``role`` when the rule changes role)

    def line(self) -> str:
        role = self.role if self.new_role in ("", self.role) else f"{self.role} -> {self.new_role}"
        return f"{role} rule {self.rule}: {self.old_group} -> {self.new_group}"


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
    # A group that only renames an old one is named above as its replacement.
    new_groups = {name for typ, name in head_keys - base_keys if typ == SECURITY_GROUP} - renamed_to
    into_new: dict[str, list[RuleMove]] = {}
    for move in rule_moves(base, head):
        if move.new_group in new_groups:
            into_new.setdefault(move.new_group, []).append(move)
    for group, moves in into_new.items():
        found.append(Danger("move", SECURITY_GROUP, group, f"{len(moves)} rule(s) from {', '.join(sorted({m.old_group for m in moves}))}",
                            "it is created in this change, so no network interface carries it yet: the flows of these rules are dropped "
                            "until it is attached. Create it first (a role's: awsSecurityGroupCounts; a source group's: keep the old entry "
                            "beside the group's in this update), attach it to the workloads' network interfaces, then move the rules "
                            "(awsSecurityGroupsAttached; remove the old entry) in a later update"))
    found += _order_dangers(base, head, base_keys)
    return sorted(found, key=lambda d: (d.type, d.name))


def _merged(moves: list[Moved]) -> dict[str, list[Moved]]:
    out: dict[str, list[Moved]] = {}
    for move in moves:
        out.setdefault(move.new, []).append(move)
    return out


def _order_dangers(base: dict, head: dict, base_keys: set) -> list[Danger]:
    """Rules moving where the write order leaves a gap (diff_moves.py)."""
    found = []
    created_policy = any(r["type"] == AWS_POLICY for r in head["resources"])
    for group, moves in _merged([m for m in sid_moves(base, head) if (RULE_GROUP, m.new) not in base_keys]).items():
        count = sum(len(m.rules) for m in moves)
        why = ("the old rule group is rewritten without them while this one is created, and only then is the policy this stack creates "
               "updated to reference it" if created_policy else
               "the policy named in awsFirewallPolicyArn does not reference it (its owner adds it only after this update)")
        found.append(Danger("move", RULE_GROUP, group, f"{count} rule(s) from {', '.join(sorted({m.old for m in moves}))}: "
                            + ", ".join(r for m in moves for r in m.rules[:5]) + (" ..." if count > 5 else ""),
                            f"it is created in this change: {why}, so their flows are dropped meanwhile. Keep every rule in the rule group "
                            "it is in: keep the source groups' rules within one rule group (split them across stacks), or keep the entry "
                            "where it was in this update and remove it in a later one"))
    for group, moves in _merged(rcg_gaps(base, head)).items():
        count = sum(len(m.rules) for m in moves)
        found.append(Danger("move", RCG, group, f"{count} flow(s) from {', '.join(sorted({m.old for m in moves}))}, written before it: "
                            + "; ".join(r for m in moves for r in m.rules[:3]) + (" ..." if count > 3 else ""),
                            "the groups of a policy are written one at a time in priority order (3-5 minutes each), so the removal lands "
                            "first and these destinations are denied until this group is written. Land it in two updates: add the entry "
                            "to its new place first (keep the old one), then remove the old one in a later update"))
    for taker, holder, priority in priority_handovers(base, head):
        found.append(Danger("priority", RCG, taker, f"{priority}, which {holder} holds until it is written later in the same update",
                            "a policy's group priorities are unique, so the write is refused (or both groups briefly share it) and the "
                            "update stops half-way. Keep every existing group's priority: pin the new catalog's band (its file's "
                            "'azure_band: <20-646>', an unused one) so no group moves"))
    return found


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


def rule_moves(base: dict, head: dict) -> list[RuleMove]:
    """Security-group rules that leave one group for another: the same protocol, ports and CIDR (the rule's name without
    its group's), in the same role's groups or another's (an entry given a source group's ``role`` leaves the role's group
    for the source group's). A group that gains a rule pairs with one that lost it, of its own role first."""
    def placement(snapshot: dict) -> dict[str, dict[str, str]]:
        groups = {r["urn"]: r for r in snapshot["resources"] if r["type"] == SECURITY_GROUP}
        out: dict[str, dict[str, str]] = {}
        for rule in snapshot["resources"]:
            group = groups.get(rule.get("parent") or "")
            if rule["type"] != SECURITY_GROUP_RULE or group is None:
                continue
            role = str((group["props"].get("tags") or {}).get("egress-matrix:role", ""))
            out.setdefault(rule["name"].removeprefix(group["name"] + "-"), {})[group["name"]] = role
        return out

    before, after = placement(base), placement(head)
    moves = []
    for rule in sorted(set(before) & set(after)):
        lost = {g: r for g, r in before[rule].items() if g not in after[rule]}
        gained = {g: r for g, r in after[rule].items() if g not in before[rule]}
        for group, role in sorted(gained.items()):
            if not lost:
                break
            old = next((g for g, r in sorted(lost.items()) if r == role), min(lost))
            moves.append(RuleMove(lost[old], rule, old, group, new_role=role))
    return moves


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
