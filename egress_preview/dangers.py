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
        "its rules are deleted first and AWS refuses to delete a group interfaces carry: the flows are dropped and the update "
        "stops half-way"),
    "kubernetes:core/v1:Service": (
        "Service",
        "its address changes, and the clients configured with the old one (node-level proxy settings, kubeconfigs, allowlists) "
        "lose it",
        "the clients of its address lose it"),
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
    kind: str  # "replace" | "delete"
    type: str
    name: str
    detail: str  # why it is replaced (the changed inputs), or what removed it
    consequence: str = ""  # what it does in production, when the stack's own resources change the type's usual story

    def line(self) -> str:
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


def dangers(base: dict, head: dict, replacements: dict[tuple[str, str], list[str]]) -> list[Danger]:
    """Deletions and replacements of firewall resources. ``replacements``: (type, name) -> the replacement reasons the
    comparison found for resources on both sides."""
    head_keys = {(r["type"], r["name"]) for r in head["resources"]}
    base_keys = {(r["type"], r["name"]) for r in base["resources"]}
    # A resource named after the cluster and present under the new cluster name is a rename: a replacement.
    successors = {(typ, _stable(name, head)): name for typ, name in head_keys - base_keys if typ in FIREWALL_KINDS}
    found = []
    for resource in base["resources"]:
        key = (resource["type"], resource["name"])
        if not _is_firewall(resource):
            continue
        if key not in head_keys:
            successor = successors.get((resource["type"], _stable(resource["name"], base)))
            detail = f"renamed to {successor}" if successor else _removal_reason(resource, head)
            found.append(Danger("replace" if successor else "delete", resource["type"], resource["name"], detail))
        elif replacements.get(key):
            own_policy = resource["type"] == RULE_GROUP and any(r["type"] == AWS_POLICY for r in head["resources"])
            found.append(Danger("replace", resource["type"], resource["name"], "; ".join(replacements[key]),
                                OWN_POLICY_REPLACEMENT if own_policy else ""))
    return sorted(found, key=lambda d: (d.type, d.name))


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


def markdown_lines(found: list[Danger], moves: list[RuleMove], allow: bool) -> list[str]:
    lines: list[str] = []
    if found:
        state = ("allowed for this change by `allowFirewallReplacement`: the resources are not protected" if allow else
                 "the real `pulumi up` refuses these (the resources are protected) and `egress diff` fails; for a planned migration "
                 "follow the README's *Migrations* and set `allowFirewallReplacement` for that change only")
        lines += ["", "#### :rotating_light: Dangers to production", "", f"{len(found)} firewall resource(s) would be replaced or deleted; {state}.", ""]
        lines += [f"- **{d.kind}** `{d.type}` **{d.name}**: {d.line()}" for d in found]
    if moves:
        lines += ["", "#### Security-group rules changing group", "",
                  f"{len(moves)} rule(s) leave one group for another. Safe only if every network interface of the role already carries "
                  "the new group (`awsSecurityGroupsAttached` says it does); the new rules are created before the old ones are deleted.", ""]
        lines += [f"- {m.line()}" for m in moves[:100]] + ([f"- ... and {len(moves) - 100} more"] if len(moves) > 100 else [])
    return lines


def summary(found: list[Danger]) -> str:
    return f"{len(found)} firewall resource(s) would be replaced or deleted; the first: {found[0].line()}"


def snapshot_flag(config: dict[str, Any]) -> bool:
    """allowFirewallReplacement from the config the program ran with (the CLI hands every value as a string)."""
    return str(config.get(ALLOW_SETTING, "false")).strip().lower() == "true"
