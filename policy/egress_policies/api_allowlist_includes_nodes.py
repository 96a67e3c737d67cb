"""api-allowlist-includes-nodes: the nodes (and, on KKP, the seed's nodes and pods; elsewhere the pods) can still
reach the API server through the allowlist. Since Kubernetes 1.25 kube-proxy filters in-cluster clients of the load
balancer too, so a missing range cuts the cluster off its own API."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from egress.deployed import DeployedResource

from .api_allowlist_not_open import allowlist_ranges
from .objects import is_kkp
from .support import covered, resource_validator, stack_context

NAME = "api-allowlist-includes-nodes"


def violations(resource: DeployedResource) -> list[str]:
    found = allowlist_ranges(resource)
    if found is None:
        return []
    what, ranges = found
    profile = stack_context().profile
    kkp = is_kkp(resource, "Cluster")
    needed = {"nodeEgressCidrs (the nodes' egress)": profile.node_egress_cidrs,
              "seedSources (the seed's nodes)": profile.seed_sources if kkp else (),
              "kkpSeedPodCidrs (the seed's pods)": profile.kkp_seed_pod_cidrs if kkp else (),
              "podCidrs (the cluster's pods)": () if kkp else profile.pod_cidrs}
    out = []
    for label, cidrs in needed.items():
        missing = [c for c in cidrs if not covered(c, ranges)]
        if missing:
            out.append(f"{', '.join(missing)} from {label} not in {what}: they would lose the API server")
    return out


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="The API server allowlist includes the nodes' egress CIDRs (and the seed's nodes and pods on KKP, the pods elsewhere).",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    validate=resource_validator(violations),
    remediation_steps="Add the missing CIDRs to egress-matrix:apiServerAllowedCidrs.",
)
