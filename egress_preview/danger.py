"""What ``egress diff`` names as a danger to production: the resource kinds it guards (those the program protects, and
IP Groups a policy's rules reference), what replacing or deleting each does to the traffic, and one finding (``Danger``).
Shared by dangers.py (protected resources replaced or deleted) and dangers_moves.py (rules whose write order opens a gap).
"""
from __future__ import annotations

from dataclasses import dataclass

from egress.deployed import PROTECTED_TYPES

from .diff_azure import IP_GROUP

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
