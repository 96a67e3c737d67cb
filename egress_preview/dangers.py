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
    kind: str  # "replace" | "delete" | "move" (security-group rules into a group created in the same change)
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
            return f"moves rules into the security group {self.name} ({self.detail}): {self.consequence}"
        what, on_replace, on_delete = FIREWALL_KINDS[self.type]
        verb = "replaces" if self.kind == "replace" else "deletes"
        return f"{verb} the {what} {self.name} ({self.detail}): {self.consequence or (on_replace if self.kind == 'replace' else on_delete)}"


@dataclass(frozen=True)
class RuleMove:
    role: str
    rule: str
    old_group: str
    new_group: str

    def line(self) -> str:
        return f"{self.role} rule {self.rule}: {self.old_group} -> {self.new_group}"


def _is_firewall(resource: dict) -> bool:
    return resource["type"] in FIREWALL_KINDS


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
        if not _is_firewall(resource):
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
                            "until it is attached. Create it first (awsSecurityGroupCounts), attach it, then raise awsSecurityGroupsAttached"))
    return sorted(found, key=lambda d: (d.type, d.name))


def blocking(found: list[Danger], base: dict, head: dict) -> list[Danger]:
    """The dangers this change may not carry: a replacement needs allowFirewallReplacement in the head (the engine allows
    unprotecting and replacing in one update); a resource no longer registered needs it in the base too (its protect is
    read from the state, so an earlier update must have unprotected it); rules moving into a new group, never."""
    def allowed_one(danger: Danger) -> bool:
        if danger.kind == "move":
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
    """Security-group rules that leave one group for another (the same role, protocol, ports and CIDR)."""
    def placement(snapshot: dict) -> dict[tuple[str, str], str]:
        groups = {r["urn"]: r for r in snapshot["resources"] if r["type"] == SECURITY_GROUP}
        out = {}
        for rule in snapshot["resources"]:
            group = groups.get(rule.get("parent") or "")
            if rule["type"] != SECURITY_GROUP_RULE or group is None:
                continue
            role = str((group["props"].get("tags") or {}).get("egress-matrix:role", ""))
            out[(role, rule["name"].removeprefix(group["name"] + "-"))] = group["name"]
        return out

    before, after = placement(base), placement(head)
    return [RuleMove(role, rule, before[(role, rule)], after[(role, rule)])
            for role, rule in sorted(set(before) & set(after)) if before[(role, rule)] != after[(role, rule)]]


def allowed(head: dict) -> bool:
    """The head stack plans a migration (allowFirewallReplacement)."""
    return bool(head.get("allowFirewallReplacement"))


def markdown_lines(found: list[Danger], moves: list[RuleMove], blocked: list[Danger], base: dict, head: dict) -> list[str]:
    lines: list[str] = []
    if found:
        unprotected = [d for d in found if not d.base_protected and d.kind != "move"]
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
