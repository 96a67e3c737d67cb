"""noproxy-includes-cluster-internals: in-cluster traffic never goes to the proxy. Whatever a node or pod reads its
noProxy from must cover localhost, the Service and pod networks, the nodes' network and the cluster's own names;
for OpenShift, what the operator will compute (status.noProxy) from the deployed spec is judged."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from egress.deployed import DeployedResource
from egress.noproxy import openshift_no_proxy

from .objects import is_openshift_proxy, no_proxy_lists, spec
from .support import covered, resource_validator, stack_context

NAME = "noproxy-includes-cluster-internals"
NAMES = ("localhost", "127.0.0.1", ".svc")


def _covers(entries: list[str], needed: str) -> bool:
    if needed.startswith("."):
        return needed in entries or needed.lstrip(".") in entries
    return needed in entries or covered(needed, [e for e in entries if "/" in e or e.replace(".", "").isdigit()])


def internals() -> dict[str, tuple[str, ...]]:
    profile = stack_context().profile
    return {"the loopback and Service names": NAMES, "serviceCidrs": profile.service_cidrs, "podCidrs": profile.pod_cidrs,
            "machineCidrs / nodeSources (the nodes)": profile.machine_cidrs or profile.node_sources}


def violations(resource: DeployedResource) -> list[str]:
    lists = list(no_proxy_lists(resource))
    if is_openshift_proxy(resource) and (spec(resource).get("httpProxy") or spec(resource).get("httpsProxy")):
        context = stack_context()
        status = openshift_no_proxy(context.catalog, context.profile, spec_no_proxy=str(spec(resource).get("noProxy") or ""))
        lists.append(("status.noProxy (as the operator computes it from spec.noProxy)", status.split(",")))
    out = []
    for field, entries in lists:
        for label, needed in internals().items():
            missing = [n for n in needed if not _covers(entries, n)]
            if missing:
                out.append(f"{field} lacks {', '.join(missing)} ({label}): that traffic would be sent to the proxy")
    return out


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="Every noProxy the cluster reads (KKP Seed node settings, NO_PROXY env, OpenShift's computed status.noProxy) "
                "covers localhost, .svc, the Service, pod and node networks.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    validate=resource_validator(violations),
    remediation_steps="Set egress-matrix:serviceCidrs, podCidrs and machineCidrs (or nodeSources) to the cluster's networks; "
                      "the program puts them in noProxy.",
)
