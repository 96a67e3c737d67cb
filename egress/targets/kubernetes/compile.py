"""Compile a stack into the Kubernetes plan: the egress proxy, the cluster proxy settings, the API-server allowlist (pure)."""
from __future__ import annotations

from typing import Iterable, Optional

from ...errors import EgressError
from ...models import Catalog, Requirement, Strict
from ...probe.job import ProbeJobPlan, compile_probe_jobs
from ...profile import Profile
from .api_allowlist import ApiAllowlistPlan, compile_api_allowlist
from .cluster_proxy import ClusterProxyPlan, compile_cluster_proxy
from .egress_proxy import EgressProxyPlan, compile_egress_proxy
from .squid import proxied_option, squid_left_out


class KubernetesPlan(Strict):
    egress_proxy: Optional[EgressProxyPlan] = None
    cluster_proxy: Optional[ClusterProxyPlan] = None
    api_allowlist: Optional[ApiAllowlistPlan] = None
    probe: tuple[ProbeJobPlan, ...] = ()  # the egress probe Jobs (probeJob), one per role


def enforced(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement]) -> list[Requirement]:
    """What the egress proxy enforces: the HTTP/HTTPS-to-a-name requirements of egressProxyRoles and of every source group,
    but for the recommended/optional ones it cannot match (left out, with a note in the render)."""
    if not profile.egress_proxy:
        return []
    roles = set(profile.enforced(profile.egress_proxy_roles))
    return [r for r in requirements if r.role in roles and proxied_option(r)[0] is not None and squid_left_out(r) is None]


def compile_kubernetes(catalog: Catalog, profile: Profile, requirements: Iterable[Requirement], source: str = "") -> KubernetesPlan:
    try:
        proxy = compile_egress_proxy(catalog, profile, requirements) if profile.egress_proxy else None
        probe = profile.probe_job
        if not (proxy or profile.cluster_proxy or profile.api_server_allowlist or probe):
            raise EgressError("target 'kubernetes' has nothing to do. Fix: set egress-matrix:egressProxy, clusterProxy, apiServerAllowlist or probeJob")
        return KubernetesPlan(egress_proxy=proxy, probe=compile_probe_jobs(catalog, profile, requirements) if probe else (),
                              cluster_proxy=compile_cluster_proxy(catalog, profile, proxy.url if proxy else None, profile.has_secret("proxyCredentials"),
                                                                  requirements),
                              api_allowlist=compile_api_allowlist(profile))
    except EgressError as exc:
        raise type(exc)(f"{source}: {exc}" if source else str(exc)) from None


def check_deploy_settings(profile: Profile) -> None:
    """Deploying needs nothing beyond what compiling checks (the Kubernetes provider reads the kubeconfig)."""
