"""OpenShift's Proxy ``status.noProxy``, computed as the cluster-network-operator does (DESIGN.md: byte for byte).

With neither ``httpProxy`` nor ``httpsProxy`` set there is no proxy and ``status.noProxy`` is empty. Otherwise
``spec.noProxy == "*"`` short-circuits to ``"*"``; else the operator builds a set from fixed entries, the cluster's
networks, the internal API host and platform entries, adds the user's ``spec.noProxy`` split on ',' (empty pieces
dropped, whitespace kept), sorts it by byte value and joins it with ','. The entries themselves are data:
``matrix/openshift-noproxy.yaml``.

Two ways in: a stack (``openshift_no_proxy``: a missing cluster fact is an error naming the setting) and the
``egress noproxy`` command (``merge_no_proxy`` on ``NoProxyInputs``: what the operator would write for exactly the
facts given, the way the installer's ``BuildNoProxySet`` also treats absent networks as empty).
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import ResolveError
from .models import Catalog, NoProxyRule
from .profile import PROJECT, Profile

AZURE_CLOUD_NAMES = {"azure-public": "AzurePublicCloud", "azure-china": "AzureChinaCloud", "azure-usgov": "AzureUSGovernmentCloud"}


@dataclass(frozen=True)
class NoProxyInputs:
    """The facts the operator reads: Infrastructure (platform, region, cloud name, ARM endpoint, internal API host),
    Network status (service and cluster networks), install-config (machine networks)."""

    platform: str | None = None
    aws_region: str = ""
    azure_cloud_name: str = ""
    azure_arm_endpoint: str = ""
    api_internal_host: str = ""
    machine_networks: tuple[str, ...] = ()
    service_networks: tuple[str, ...] = ()
    cluster_networks: tuple[str, ...] = ()
    hypershift: bool = False


_NETWORKS = {"machineCidrs": "machine_networks", "serviceCidrs": "service_networks", "podCidrs": "cluster_networks"}


def azure_cloud_name(profile: Profile) -> str:
    """platformStatus.azure.cloudName: the stack's azureCloudName, else the AKS cloud's name, else empty (as the operator sees it)."""
    return profile.azure_cloud_name or AZURE_CLOUD_NAMES.get(profile.cloud or "", "")


def inputs_from_profile(profile: Profile) -> NoProxyInputs:
    """The stack's facts; the ones the operator always has (service and cluster networks, the internal API host)
    are required, and so is every value a platform entry needs."""
    missing = [key for key, value in (("serviceCidrs", profile.service_cidrs), ("podCidrs", profile.pod_cidrs),
                                      ("clusterName", profile.cluster_name), ("baseDomain", profile.base_domain)) if not value]
    if profile.openshift_platform == "AWS" and not profile.aws_region:
        missing.append("awsRegion")
    if profile.openshift_platform == "Azure" and azure_cloud_name(profile) == "AzureStackCloud" and not profile.azure_arm_endpoint:
        missing.append("azureArmEndpoint")
    if missing:
        raise ResolveError(f"OpenShift's status.noProxy needs {', '.join(f'{PROJECT}:{m}' for m in missing)}. Fix: set "
                           f"{'it' if len(missing) == 1 else 'them'} in the stack")
    return NoProxyInputs(platform=profile.openshift_platform, aws_region=profile.aws_region or "", azure_cloud_name=azure_cloud_name(profile),
                         azure_arm_endpoint=profile.azure_arm_endpoint or "", api_internal_host=f"api-int.{profile.cluster_name}.{profile.base_domain}",
                         machine_networks=profile.machine_cidrs, service_networks=profile.service_cidrs, cluster_networks=profile.pod_cidrs,
                         hypershift=profile.hypershift)


def _applies(rule: NoProxyRule, facts: NoProxyInputs) -> bool:
    when = rule.when
    return all((
        when.platform is None or facts.platform in when.platform,
        when.aws_region is None or facts.aws_region == when.aws_region,
        when.not_aws_region is None or facts.aws_region != when.not_aws_region,
        when.not_azure_cloud is None or facts.azure_cloud_name != when.not_azure_cloud,
        when.azure_cloud is None or facts.azure_cloud_name == when.azure_cloud,
        when.hypershift is None or facts.hypershift == when.hypershift,
    ))


def _values(rule: NoProxyRule, facts: NoProxyInputs) -> list[str]:
    if rule.from_ is not None:
        return [v for v in getattr(facts, _NETWORKS[rule.from_]) if v != "0.0.0.0/0"]
    text = rule.value or ""
    if "{cluster_name}.{base_domain}" in text:  # the host of infrastructure status.apiServerInternalURL
        return [facts.api_internal_host]
    return [text.replace("{aws_region}", facts.aws_region).replace("{azure_arm_endpoint}", facts.azure_arm_endpoint)]


def merge_no_proxy(catalog: Catalog, facts: NoProxyInputs, http_proxy: str = "", https_proxy: str = "", spec_no_proxy: str = "") -> str:
    """``status.noProxy`` as the operator writes it for these facts and this Proxy spec."""
    if not http_proxy and not https_proxy:
        return ""
    if spec_no_proxy == "*":
        return "*"
    entries: set[str] = set()
    for rule in catalog.noproxy_rules:
        if _applies(rule, facts):
            entries.update(_values(rule, facts))
    entries.update(piece for piece in spec_no_proxy.split(",") if piece)
    return ",".join(sorted(entries, key=lambda s: s.encode()))


def openshift_no_proxy(catalog: Catalog, profile: Profile, spec_no_proxy: str | None = None, proxied: bool = True) -> str:
    """``status.noProxy`` for the stack's cluster with a proxy set (``proxied``) and ``spec.noProxy`` as given
    (default: the stack's ``noProxy`` list joined with ',')."""
    user = ",".join(profile.no_proxy) if spec_no_proxy is None else spec_no_proxy
    return merge_no_proxy(catalog, inputs_from_profile(profile), "http://proxy" if proxied else "", "", user)
