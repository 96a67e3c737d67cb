"""OpenShift's Proxy ``status.noProxy``, computed as the cluster-network-operator does (DESIGN.md: byte for byte).

The operator builds a set from fixed entries, the cluster's networks, the internal API host and platform
entries, adds the user's ``spec.noProxy`` split on ',' (empty pieces dropped, whitespace kept), sorts it by
byte value and joins it with ','. ``spec.noProxy == "*"`` short-circuits to ``"*"``. The entries themselves
are data: ``matrix/openshift-noproxy.yaml``.
"""
from __future__ import annotations

from .errors import ResolveError
from .models import Catalog, NoProxyRule
from .placeholders import PLACEHOLDERS, names_in, substitute
from .profile import PROJECT, Profile

AZURE_CLOUD_NAMES = {"azure-public": "AzurePublicCloud", "azure-china": "AzureChinaCloud", "azure-usgov": "AzureUSGovernmentCloud"}
_FROM = {"machineCidrs": "machine_cidrs", "serviceCidrs": "service_cidrs", "podCidrs": "pod_cidrs"}


def azure_cloud_name(profile: Profile) -> str:
    """platformStatus.azure.cloudName: the stack's azureCloudName, else the AKS cloud's name, else empty (as the operator sees it)."""
    return profile.azure_cloud_name or AZURE_CLOUD_NAMES.get(profile.cloud or "", "")


def _applies(rule: NoProxyRule, profile: Profile) -> bool:
    when = rule.when
    cloud_name = azure_cloud_name(profile)
    return all((
        when.platform is None or profile.openshift_platform in when.platform,
        when.aws_region is None or profile.aws_region == when.aws_region,
        when.not_aws_region is None or profile.aws_region != when.not_aws_region,
        when.not_azure_cloud is None or cloud_name != when.not_azure_cloud,
        when.azure_cloud is None or cloud_name == when.azure_cloud,
        when.hypershift is None or profile.hypershift == when.hypershift,
    ))


def _values(rule: NoProxyRule, profile: Profile, catalog: Catalog) -> list[str]:
    if rule.from_ is not None:
        values = getattr(profile, _FROM[rule.from_])
        if not values:
            raise ResolveError(f"no-proxy rule '{rule.id}' needs {PROJECT}:{rule.from_}. Fix: set it in the stack")
        return [v for v in values if v != "0.0.0.0/0"]
    text = rule.value or ""
    filled: dict[str, str] = {}
    for name in names_in(text):
        values = PLACEHOLDERS[name].values(profile, catalog)
        if not values:
            raise ResolveError(f"no-proxy rule '{rule.id}' ({text}) needs {{{name}}}. Fix: set {PLACEHOLDERS[name].setting} in the stack")
        filled[name] = values[0]
    return [substitute(text, filled)]


def openshift_no_proxy(catalog: Catalog, profile: Profile, spec_no_proxy: str | None = None) -> str:
    """``status.noProxy`` for a cluster whose Proxy has an http(s) proxy set and ``spec.noProxy`` as given
    (default: the stack's ``noProxy`` list joined with ',')."""
    user = ",".join(profile.no_proxy) if spec_no_proxy is None else spec_no_proxy
    if user == "*":
        return "*"
    entries: set[str] = set()
    for rule in catalog.noproxy_rules:
        if _applies(rule, profile):
            entries.update(_values(rule, profile, catalog))
    entries.update(piece for piece in user.split(",") if piece)
    return ",".join(sorted(entries, key=lambda s: s.encode()))
