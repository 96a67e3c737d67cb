"""egress-not-open: what is deployed never opens more than the stack's breadth limits, judged by coverage (collapsed
addresses, port spans, public suffixes), never by spelling: 0.0.0.0/1 + 128.0.0.0/1 on any port is the internet. The
flows of matrix entries that say why they are broad (``broad``) are accepted; ``allowBroadEgress`` accepts all."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationPolicy

from egress.deployed import DeployedResource
from egress.flows import judge
from egress.targets import TARGETS
from egress.targets.allows import target_allows
from egress.targets.guard import accepted_flows, limits_of, no_proxy_findings

from .objects import is_openshift_proxy, no_proxy_lists, spec
from egress.targets.aws.deployed import POLICY_TYPE as AWS_POLICY_TYPE, default_action_findings
from egress.targets.unknowns import judgeable

from .support import JUDGED_TYPES, blocked, stack_context, stack_validator, unjudged_of

NAME = "egress-not-open"
PROXY_TYPES = ("kubernetes:core/v1:Secret", "kubernetes:config.openshift.io/v1:ProxyPatch", "kubernetes:config.openshift.io/v1:Proxy",
               "kubernetes:kubermatic.k8c.io/v1:SeedPatch", "kubernetes:kubermatic.k8c.io/v1:Seed")


def _no_proxy(resource: DeployedResource) -> list[tuple[str, list[str]]]:
    lists = list(no_proxy_lists(resource))
    if is_openshift_proxy(resource) and spec(resource).get("noProxy"):
        lists.append(("spec.noProxy", [p.strip() for p in str(spec(resource)["noProxy"]).split(",") if p.strip()]))
    return lists


def findings(resources: list[DeployedResource]) -> list[tuple[str, str | None]]:
    context = stack_context()
    profile = context.profile
    if profile.allow_broad_egress:
        return []
    limits = limits_of(profile)
    accepted = accepted_flows(context.catalog, context.requirements)
    out: list[tuple[str, str | None]] = []
    for name in profile.targets:
        allows = target_allows(name, TARGETS[name].deployed(judgeable(resources)), profile)
        out += [(f"{name}: {finding}", None) for finding in judge(allows, limits, accepted)]
        out += blocked(name, unjudged_of(name, resources))
    out += [(finding, policy.urn) for policy in resources if policy.type == AWS_POLICY_TYPE for finding in default_action_findings(policy)]
    for resource in resources:
        for field, entries in _no_proxy(resource):
            out += [(f"{field}: {finding}", resource.urn) for finding in no_proxy_findings((("entry", e) for e in entries), limits)]
    return out


POLICY = StackValidationPolicy(
    name=NAME,
    description="Nothing deployed is broader than the stack's limits, judged by coverage: destinations on a port covering more than "
                "maxPublicShare of public IPv4/IPv6 (0.0.0.0/1 + 128.0.0.0/1 counts as the internet), a destination on more than "
                "maxPortSpan ports, a name under a public suffix, rule sources that are the internet, or a noProxy that sends a public "
                "suffix or the internet around the proxy; unless a matrix entry says why it is broad (broad) or the stack sets allowBroadEgress.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    validate=stack_validator(findings, (*JUDGED_TYPES, *PROXY_TYPES)),
    remediation_steps="Narrow the rule to the matrix's destinations and ports. Where a vendor row really is this wide, give its matrix "
                      "entry broad: '<reason>'; to accept broad egress for a whole stack, set egress-matrix:allowBroadEgress: '<reason>'.",
)
