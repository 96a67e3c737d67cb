"""Who may reach the API server (seed 002; reference/kkp-ibm.md §1-2).

- kkp: the user cluster's ``kubermatic.k8c.io/v1`` Cluster gets ``spec.apiServerAllowedIPRanges.cidrBlocks`` (a patch:
  KKP's controller owns the ``front-loadbalancer`` Service and would revert a direct edit). What KKP's reconciler
  then writes to the Service is computed exactly (``kkp_front_loadbalancer``) and exported.
- generic: a LoadBalancer Service in front of the API server pods with ``spec.loadBalancerSourceRanges``.
Both refuse a list that covers more public space than maxPublicShare (judged collapsed: 0.0.0.0/1 + 128.0.0.0/1 is
the internet) unless the stack says so (apiServerAllowAll), and warn (or fail, ``apiServerAllowlistMissing: error``)
when the nodes' egress, the seed's nodes or the seed's pods are not on the list: since Kubernetes 1.25 kube-proxy
filters in-cluster clients of the load balancer too, so they would lose the API.
"""
from __future__ import annotations

import ipaddress
from typing import Iterable, Literal, Optional

from ...breadth import describe_share, networks_of, public_share
from ...errors import EgressError
from ...models import Strict
from ...profile import Profile

SOURCE_RANGES_ANNOTATION = "service.beta.kubernetes.io/load-balancer-source-ranges"
AWS_FRONT_LB_ANNOTATIONS = {  # pkg/resources/nodeportproxy: added when the user cluster runs on AWS
    "service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
    "service.beta.kubernetes.io/aws-load-balancer-connection-idle-timeout": "3600",
    "service.beta.kubernetes.io/aws-load-balancer-cross-zone-load-balancing-enabled": "true",
}
KKP_FORBIDDEN = "APIServerAllowedIPRanges: Forbidden: Access control for API server is supported only for LoadBalancer expose strategy"
CLOUD_CAVEATS = {
    "aws": "AWS: KKP makes the front load balancer an NLB; in the cloud provider's legacy mode the ranges become rules on the "
           "worker nodes' security group for the NodePorts, so any broader rule there defeats them (a classic ELB ignores KKP's list).",
    "azure": "Azure: the NSG allows all VNet traffic by default, and cloud-provider-azure >= 1.27.17 / 1.28.9 / 1.29.4 / 1.30.0 "
             "refuses a Service carrying both the field and the source-ranges annotation, which KKP writes (cloud-provider-azure #6492).",
    "openstack": "OpenStack: floating IPs of replaced nodes change; keep nodeEgressCidrs current (KKP issue #14781).",
}


class ApiAllowlistCompileError(EgressError):
    """The stack's API-server allowlist cannot be applied as configured."""


def kkp_front_loadbalancer(cluster_ranges: Optional[Iterable[str]], seed_default_ranges: Iterable[str], seed_source_ranges: Iterable[str],
                           user_cluster_cloud: str = "", seed_lb_annotations: Optional[dict] = None) -> tuple[list[str], dict[str, str]]:
    """(spec.loadBalancerSourceRanges, annotations) of KKP's front-loadbalancer, as FrontLoadBalancerServiceReconciler
    writes them: the seed's sourceRanges always; the cluster's list and the seed's defaults only when the cluster field
    is present (even empty); a set (exact strings), sorted by byte order; the annotation mirrors it or is deleted."""
    ranges = set(seed_source_ranges)
    if cluster_ranges is not None:
        ranges |= set(cluster_ranges)
        ranges |= set(seed_default_ranges)
    listed = sorted(ranges, key=lambda s: s.encode())
    annotations = dict(seed_lb_annotations or {})
    if listed:
        annotations[SOURCE_RANGES_ANNOTATION] = ",".join(listed)
    else:
        annotations.pop(SOURCE_RANGES_ANNOTATION, None)
    if user_cluster_cloud == "aws":
        annotations.update(AWS_FRONT_LB_ANNOTATIONS)
    return listed, annotations


class ApiAllowlistPlan(Strict):
    mode: Literal["kkp", "generic"]
    cidrs: tuple[str, ...]  # what the stack writes (the Cluster's cidrBlocks, or the Service's ranges)
    effective: tuple[str, ...]  # what the load balancer will really carry
    warnings: tuple[str, ...]
    kkp_cluster_id: Optional[str] = None
    namespace: str = ""
    selector: tuple[tuple[str, str], ...] = ()
    port: int = 6443


def _networks(values: Iterable[str]) -> list:
    return [ipaddress.ip_network(v, strict=False) for v in values]


def _covered(needed: Iterable[str], allowed: Iterable[str]) -> list[str]:
    """The needed CIDRs not inside any allowed one."""
    nets = _networks(allowed)
    return [n for n in needed if not any(ipaddress.ip_network(n).version == a.version and ipaddress.ip_network(n).subnet_of(a) for a in nets)]


def too_open(ranges: Iterable[str], profile: Profile) -> bool:
    """Do the ranges, collapsed, cover more public space than the stack allows (0.0.0.0/1 + 128.0.0.0/1 is /0)?"""
    return public_share(networks_of(ranges)) > profile.max_public_share


def compile_api_allowlist(profile: Profile) -> Optional[ApiAllowlistPlan]:
    mode = profile.api_server_allowlist
    if mode is None:
        return None
    cidrs = tuple(profile.api_server_allowed_cidrs)
    if not cidrs:
        raise ApiAllowlistCompileError("egress-matrix:apiServerAllowlist is set but egress-matrix:apiServerAllowedCidrs is empty, which every "
                                       "cloud treats as allow-all. Fix: list the client CIDRs (IPv4 or IPv6)")
    if too_open(cidrs, profile) and not profile.api_server_allow_all:
        raise ApiAllowlistCompileError(f"egress-matrix:apiServerAllowedCidrs = {list(cidrs)} covers {describe_share(networks_of(cidrs))} "
                                       f"(more than maxPublicShare {profile.max_public_share}%): the API server is open to the internet. Fix: "
                                       "list the client CIDRs, or set egress-matrix:apiServerAllowAll: true if that is intended")
    if mode == "kkp":
        if profile.kkp_expose_strategy != "LoadBalancer":
            raise ApiAllowlistCompileError(
                f"egress-matrix:kkpExposeStrategy = '{profile.kkp_expose_strategy}': KKP refuses the allowlist ({KKP_FORBIDDEN}). "
                f"With {profile.kkp_expose_strategy} every user cluster on the seed shares one nodeport-proxy load balancer, so only the seed-wide "
                "nodeportProxy.envoy.loadBalancerService.sourceRanges apply, to all clusters. Fix: use the LoadBalancer expose strategy for this "
                "cluster, or set the seed's sourceRanges and leave apiServerAllowlist unset")
        if not profile.kkp_cluster_id:
            raise ApiAllowlistCompileError("egress-matrix:apiServerAllowlist kkp needs egress-matrix:kkpClusterId (the user cluster's id). Fix: set it")
        bad = [c for c in profile.kkp_seed_nodeport_proxy_source_ranges if ipaddress.ip_network(c).version != 4]
        if bad:
            raise ApiAllowlistCompileError(f"egress-matrix:kkpSeedNodeportProxySourceRanges = {bad[0]!r}: the Seed's sourceRanges take IPv4 CIDRs "
                                           "only (their CRD pattern). Fix: list IPv4 CIDRs there")
        effective, _ = kkp_front_loadbalancer(cidrs, profile.kkp_seed_default_api_server_ranges, profile.kkp_seed_nodeport_proxy_source_ranges,
                                              "aws" if profile.kkp_seed_cloud == "aws" else "")
    else:
        effective = sorted(set(cidrs), key=lambda s: s.encode())
    if too_open(effective, profile) and not profile.api_server_allow_all:
        raise ApiAllowlistCompileError(f"the load balancer would carry {list(effective)}, with the Seed's ranges (kkpSeedDefaultApiServerAllowedIpRanges / "
                                       f"kkpSeedNodeportProxySourceRanges), which cover {describe_share(networks_of(effective))} (more than "
                                       f"maxPublicShare {profile.max_public_share}%): the API server is open to the internet. Fix: narrow the "
                                       "Seed's ranges, or set egress-matrix:apiServerAllowAll: true if that is intended")
    needed = {"nodeEgressCidrs (the nodes' egress)": profile.node_egress_cidrs, "seedSources (the seed's nodes)": profile.seed_sources if mode == "kkp" else (),
              "kkpSeedPodCidrs (the seed's pods, filtered since Kubernetes 1.25)": profile.kkp_seed_pod_cidrs if mode == "kkp" else (),
              "podCidrs (the cluster's pods, filtered since Kubernetes 1.25)": profile.pod_cidrs if mode == "generic" else ()}
    warnings = []
    if not profile.node_egress_cidrs:
        warnings.append("egress-matrix:nodeEgressCidrs is not set: the allowlist cannot be checked for the nodes' own access to the API server")
    for label, values in needed.items():
        missing = _covered(values, effective)
        if missing:
            warnings.append(f"{', '.join(missing)} from {label} cannot reach the API server through the allowlist; they would lose the API")
    if profile.api_server_allowlist_missing == "error" and any("lose the API" in w for w in warnings):
        raise ApiAllowlistCompileError(f"{next(w for w in warnings if 'lose the API' in w)}. Fix: add them to egress-matrix:apiServerAllowedCidrs "
                                       "(or set egress-matrix:apiServerAllowlistMissing: warn)")
    if mode == "kkp" and profile.kkp_seed_cloud in CLOUD_CAVEATS:
        warnings.append(CLOUD_CAVEATS[profile.kkp_seed_cloud])
    selector = []
    for pair in profile.api_server_selector:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ApiAllowlistCompileError(f"egress-matrix:apiServerSelector item {pair!r} is not label=value. Fix: write e.g. component=kube-apiserver")
        selector.append((key, value))
    return ApiAllowlistPlan(mode=mode, cidrs=cidrs, effective=tuple(effective), warnings=tuple(warnings), kkp_cluster_id=profile.kkp_cluster_id,
                            namespace=profile.api_server_namespace, selector=tuple(selector), port=profile.api_server_port)


def kkp_cluster_patch(plan: ApiAllowlistPlan) -> dict:
    return {"apiVersion": "kubermatic.k8c.io/v1", "kind": "Cluster", "metadata": {"name": plan.kkp_cluster_id},
            "spec": {"apiServerAllowedIPRanges": {"cidrBlocks": list(plan.cidrs)}}}


def generic_service(plan: ApiAllowlistPlan) -> dict:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "apiserver-allowlisted", "namespace": plan.namespace,
                         "annotations": {"egress-matrix/requirement": "seed 002: API server reachable only from the allowed CIDRs"}},
            "spec": {"type": "LoadBalancer", "selector": dict(plan.selector), "loadBalancerSourceRanges": list(plan.cidrs),
                     "ports": [{"name": "https", "port": plan.port, "targetPort": plan.port, "protocol": "TCP"}]}}
