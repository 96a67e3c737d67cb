"""What a preview cannot know yet, and therefore cannot judge (reference/pulumi.md §1.4).

In a real ``pulumi preview`` the engine hands stack policies outputs in which what the provider computes is unknown:
read-only fields (ids, etags, ARNs) of every resource the update creates or replaces, and every input computed from
them in another resource (an IP Group id in a rule, a security group id in an egress rule). The targets' evaluators
judge only what they need (``NEEDED``); an unknown there that no other fact resolves leaves that resource unjudged,
and whoever judges says so as its own finding, never as "allowed" and never as "holds nothing".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..deployed import DeployedResource
from .aws.deployed import EGRESS_RULE_TYPE, POLICY_TYPE as AWS_POLICY_TYPE, RULE_GROUP_TYPE, SECURITY_GROUP_TYPE, misplaced_rules, referenced_rule_groups
from .azure.deployed import IP_GROUP_TYPE, RCG_TYPE, ip_group_keys, referenced_ip_groups, resolve_ip_group_references

CONFIG_MAP_TYPE = "kubernetes:core/v1:ConfigMap"

# Per judged type, the properties its target's artefacts are rebuilt from. What is not here (ids, ARNs, names, etags,
# a firewall policy's references) is joined on or falls back to what the program itself gives (aws/deployed.py).
NEEDED: dict[str, tuple[str, ...]] = {
    RCG_TYPE: ("ruleCollections", "priority"),
    IP_GROUP_TYPE: ("ipAddresses",),
    RULE_GROUP_TYPE: ("ruleGroup", "capacity", "type"),
    AWS_POLICY_TYPE: ("firewallPolicy.statefulDefaultActions", "firewallPolicy.statefulEngineOptions", "firewallPolicy.statelessDefaultActions",
                      "firewallPolicy.statelessFragmentDefaultActions", "firewallPolicy.statelessRuleGroupReferences"),
    SECURITY_GROUP_TYPE: ("tags",),
    EGRESS_RULE_TYPE: ("cidrIpv4", "cidrIpv6", "ipProtocol", "fromPort", "toPort"),
    CONFIG_MAP_TYPE: ("data",),
}


@dataclass(frozen=True)
class Unjudged:
    resource: DeployedResource
    paths: tuple[str, ...]
    waits_for: tuple[str, ...]  # logical names of the resources whose creation will tell
    reason: str = ""  # not a matter of time: what makes it unjudgeable as the stack's own
    hint: str = ""  # how to make it judgeable at preview
    whole_target: bool = False  # with a reason: the target's verdict cannot stand at all (not just without this resource)

    @property
    def pending(self) -> bool:
        """Judging the target without this resource would report what it carries as missing."""
        return not self.reason or self.whole_target

    def message(self) -> str:
        if self.reason:
            return f"cannot judge {self.resource.label()} as part of the stack: {self.reason}"
        until = f"{', '.join(self.waits_for)} {'is' if len(self.waits_for) == 1 else 'are'} created" if self.waits_for else "the update runs"
        shown = ", ".join(self.paths[:3]) + (f" and {len(self.paths) - 3} more" if len(self.paths) > 3 else "")
        return (f"cannot judge {self.resource.label()} until {until}: {shown} not known during this preview. It is judged at "
                f"`pulumi up` by the resource policies before it is written, and by this policy after"
                + (f". Fix: {self.hint}" if self.hint else ""))


def _names(urns: Iterable[str], by_urn: dict[str, DeployedResource]) -> tuple[str, ...]:
    return tuple(sorted({by_urn[u].name for u in urns if u in by_urn}))


def unjudged(resources: Iterable[DeployedResource]) -> list[Unjudged]:
    """The judged resources a preview cannot judge yet, in the order given."""
    resources = resolve_ip_group_references(list(resources))
    by_urn = {r.urn: r for r in resources}
    out: list[Unjudged] = []
    for resource in resources:
        paths = resource.unknown_under(*NEEDED.get(resource.type, ()))
        if paths:
            waits = [u for p in paths for u in resource.depends_through(p.split(".")[0].split("[")[0])]
            out.append(Unjudged(resource, tuple(paths), _names(waits, by_urn)))
    out += [Unjudged(rule, (), (), reason) for rule, reason in misplaced_rules(resources)]
    squid = [r for r in resources if r.type == CONFIG_MAP_TYPE and isinstance(r.props.get("data"), dict) and "squid.conf" in r.props["data"]]
    if len(squid) > 1:  # the proxy mounts one: which, the Deployment says, and that is not read here
        out += [Unjudged(r, (), (), f"{len(squid)} ConfigMaps carry a squid.conf ({', '.join(sorted(c.name for c in squid))}): the stack "
                         "deploys one, and which the proxy mounts is not judged", whole_target=True) for r in squid]
    for policy in (r for r in resources if r.type == AWS_POLICY_TYPE):
        _, foreign, open_ = referenced_rule_groups(policy, resources)
        out += [Unjudged(policy, (), (), f"it references rule group {arn}, which is not in this stack") for arn in foreign]
        if open_:
            paths = tuple(policy.unknown_under("firewallPolicy.statefulRuleGroupReferences")) or ("firewallPolicy.statefulRuleGroupReferences",)
            out.append(Unjudged(policy, paths, _names(policy.depends_through("firewallPolicy"), by_urn)))
    # IP Groups whose id cannot be told, while rules reference ids no known group has: which group a rule means is open.
    keys = ip_group_keys(resources)
    open_refs = referenced_ip_groups(resources) - {k for found in keys.values() for k in found}
    # Groups known by no id the rules could carry (none, or only the URN a resolved reference stands for).
    unpaired = tuple(sorted(by_urn[u].name for u, found in keys.items() if not [k for k in found if k != u.lower()]))
    if open_refs and unpaired:
        for group in (r for r in resources if r.type == RCG_TYPE and referenced_ip_groups([r]) & open_refs):
            out.append(Unjudged(group, ("ruleCollections[].rules[].sourceIpGroups",), unpaired,
                                hint="set egress-matrix:azureSubscriptionId, so the program names each IP Group by an id known before it exists"))
    return out


def target_types(target: str) -> tuple[str, ...]:
    """The judged types a target's artefacts are rebuilt from."""
    return {"azure": (RCG_TYPE, IP_GROUP_TYPE), "aws": (RULE_GROUP_TYPE, AWS_POLICY_TYPE, SECURITY_GROUP_TYPE, EGRESS_RULE_TYPE),
            "kubernetes": (CONFIG_MAP_TYPE,)}.get(target, ())


def judgeable(resources: Iterable[DeployedResource]) -> list[DeployedResource]:
    """The resources with every field their target needs known (the IP Group references resolved where they can be)."""
    resources = resolve_ip_group_references(list(resources))
    blocked = {u.resource.urn for u in unjudged(resources)}
    return [r for r in resources if r.urn not in blocked]
