"""api-allowlist-not-open: the API server's allowlist never lets the internet in (KKP Cluster, the generic LoadBalancer
Service), counting the ranges KKP adds from the Seed, judged by coverage: the ranges collapsed may not cover more than
maxPublicShare of public IPv4 or IPv6 (0.0.0.0/1 + 128.0.0.0/1, or ::/1 + 8000::/1, is the internet)."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from egress.breadth import describe_share, networks_of
from egress.deployed import DeployedResource
from egress.targets.kubernetes.api_allowlist import kkp_front_loadbalancer, too_open

from .objects import is_kkp, spec
from .support import resource_validator, stack_context

NAME = "api-allowlist-not-open"
ALLOWLIST_ANNOTATION = "egress-matrix/requirement"


def allowlist_ranges(resource: DeployedResource) -> tuple[str, list[str]] | None:
    """(what, the ranges the load balancer will carry) for an API allowlist object, else None."""
    if is_kkp(resource, "Cluster") and "apiServerAllowedIPRanges" in spec(resource):
        written = list((spec(resource)["apiServerAllowedIPRanges"] or {}).get("cidrBlocks") or [])
        profile = stack_context().profile
        effective, _ = kkp_front_loadbalancer(written, profile.kkp_seed_default_api_server_ranges, profile.kkp_seed_nodeport_proxy_source_ranges)
        return "the KKP front load balancer (cidrBlocks plus the Seed's ranges)", effective
    metadata = resource.props.get("metadata") or {}
    if resource.kind == "Service" and ALLOWLIST_ANNOTATION in (metadata.get("annotations") or {}) and spec(resource).get("type") == "LoadBalancer":
        return "spec.loadBalancerSourceRanges", list(spec(resource).get("loadBalancerSourceRanges") or [])
    return None


def violations(resource: DeployedResource) -> list[str]:
    found = allowlist_ranges(resource)
    if found is None:
        return []
    what, ranges = found
    if not ranges:
        return [f"{what} is empty: every cloud treats an empty list as allow-all"]
    profile = stack_context().profile
    if too_open(ranges, profile) and not profile.api_server_allow_all:
        return [f"{what} ({', '.join(ranges)}) covers {describe_share(networks_of(ranges))}, more than maxPublicShare "
                f"{profile.max_public_share}%: the API server is open to the internet (egress-matrix:apiServerAllowAll is not set)"]
    return []


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="The API server allowlist is never empty and never covers more than maxPublicShare of public IPv4 or IPv6, judged on the "
                "collapsed ranges (0.0.0.0/0, ::/0 and their halves are the internet), unless the stack sets apiServerAllowAll.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    validate=resource_validator(violations),
    remediation_steps="List the client CIDRs in egress-matrix:apiServerAllowedCidrs and narrow the Seed's "
                      "defaultAPIServerAllowedIPRanges / nodeportProxy sourceRanges.",
)
