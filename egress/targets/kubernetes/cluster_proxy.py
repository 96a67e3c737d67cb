"""The proxy settings a cluster's own components use, as each distribution takes them (reference/openshift-proxy.md §6).

- openshift: the ``config.openshift.io/v1`` Proxy ``cluster`` (a patch: the object always exists) and the trusted CA
  ConfigMap ``openshift-config/user-ca-bundle`` (a patch of its ``ca-bundle.crt``: the installer creates it when installed
  with additionalTrustBundle); the ``status.noProxy`` the operator will write is computed (noproxy.py).
- kkp: the Seed datacenter's ``node.httpProxy`` / ``node.noProxy`` (one proxy for HTTP and HTTPS), with the noProxy
  KKP's docs tell admins to assemble, computed from the stack (tests/data/kkp_node_proxy.yaml).
- aks: the managed cluster's ``httpProxyConfig`` (array noProxy, base64 trustedCa), exported for the cluster's owner.
- kubeadm: the environment for containerd and kubelet, upper and lower case, in a ConfigMap (a Secret when the URLs
  carry credentials).
The plan holds URLs without credentials; ``with_credentials`` adds them where the secret value is known (inside a
Pulumi Output, so they stay secret end to end).
"""
from __future__ import annotations

import base64
from typing import Iterable, Literal, Optional
from urllib.parse import quote

from ...addresses import AddressError
from ...errors import EgressError
from ...gonet import parse_request_uri
from ...models import Catalog, Requirement, Strict
from ...no_proxy_match import netmask_entry
from ...noproxy import openshift_no_proxy
from ...pem import NOT_A_CERTIFICATE_FIX, check_certificates_only
from ...profile import Profile
from ...redact import has_credentials, redact_message, redact_value
from .proxy_bypass import check_direct_paths
from .openshift_checks import ProxyValidationError, TRUSTED_CA_KEY, degraded_message, installer_proxy_ip_errors, validate_proxy_spec, validate_trust_bundle

KKP_NO_PROXY_BASE = ("127.0.0.1", "localhost", ".local", ".local.", "kubernetes", ".default", ".svc")  # KKP docs, httpproxy
KUBEADM_NO_PROXY_BASE = ("localhost", "127.0.0.1", "kubernetes", "kubernetes.default", ".svc", ".svc.cluster.local")  # CAREN defaults
USER_CA_BUNDLE = "user-ca-bundle"


class ClusterProxyCompileError(EgressError):
    """The stack's cluster proxy settings would be refused by the distribution."""


class KkpNodeProxy(Strict):
    seed: str
    datacenter: str
    http_proxy: str
    no_proxy: str


class ClusterProxyPlan(Strict):
    kinds: tuple[Literal["openshift", "kkp", "aks", "kubeadm"], ...]
    http_proxy: str  # without credentials
    https_proxy: str
    credentials: bool  # egress-matrix:proxyCredentials is set: added at deploy, as a secret
    no_proxy: tuple[str, ...]  # the stack's own entries (OpenShift spec.noProxy, AKS noProxy)
    openshift_status_no_proxy: Optional[str] = None
    readiness_endpoints: tuple[str, ...] = ()
    trusted_ca: Optional[str] = None
    kkp: Optional[KkpNodeProxy] = None
    kubeadm_no_proxy: Optional[str] = None


def with_credentials(url: str, credentials: Optional[str]) -> str:
    """``url`` with ``user:password`` (percent-encoded, so any character is safe) after its scheme."""
    if not credentials or not url:
        return url
    user, _, password = credentials.partition(":")
    scheme, sep, rest = url.partition("://")
    if not sep:  # compile refuses such URLs; never fail inside a secret Output with the URL in a traceback
        raise ClusterProxyCompileError(f"proxy URL '{url}' is not scheme://host:port. Fix: write e.g. http://proxy.example.com:3128")
    return f"{scheme}://{quote(user, safe='')}:{quote(password, safe='')}@{rest}"


def _fail(setting: str, value: object, problem: str, fix: str) -> ClusterProxyCompileError:
    """The error for ``value``, shown redacted (and the problem with it: a parser's message quotes the value)."""
    return ClusterProxyCompileError(f"egress-matrix:{setting} = {redact_value(value, setting)!r}: {redact_message(problem, value)}. Fix: {fix}")


def _check_url(setting: str, url: str, profile: Profile) -> None:
    try:
        parsed = parse_request_uri(url)
    except ValueError as exc:
        raise _fail(setting, url, str(exc), "write e.g. http://proxy.example.com:3128") from None
    if parsed.user is not None or has_credentials(url):
        raise _fail(setting, url, "the URL carries credentials, which would be stored in plain text",
                    "remove them from the URL and run: pulumi config set --secret egress-matrix:proxyCredentials 'user:password'")
    if parsed.opaque or not parsed.host:  # 'http:proxy:3128' passes the operator's check, but no client reads a host from it
        raise _fail(setting, url, "not a proxy URL: it has no '//' and host after the scheme", "write it as scheme://host:port, e.g. http://proxy.example.com:3128")
    errors = installer_proxy_ip_errors(setting, url, profile.pod_cidrs, profile.service_cidrs)
    if errors and not (profile.egress_proxy and profile.egress_proxy_cluster_ip and parsed.hostname() == profile.egress_proxy_cluster_ip):
        raise _fail(setting, url, errors[0], "use an address outside the pod and service networks, or a host name")


def _kkp_no_proxy(profile: Profile) -> str:
    nodes = profile.machine_cidrs or profile.node_sources
    parts = [*KKP_NO_PROXY_BASE, profile.node_local_dns_ip, *profile.pod_cidrs, *profile.service_cidrs, *nodes,
             *([profile.kkp_domain] if profile.kkp_domain else []), *profile.no_proxy]
    return ",".join(dict.fromkeys(parts))


def compile_cluster_proxy(catalog: Catalog, profile: Profile, proxy_url: Optional[str], credentials: bool,
                          requirements: Iterable[Requirement] = ()) -> Optional[ClusterProxyPlan]:
    """``proxy_url``: the egress proxy's address when the stack deploys it (the default for httpProxy); ``requirements``:
    the stack's, whose must-be-direct destinations the applied noProxy has to cover (proxy_bypass.py)."""
    kinds = profile.cluster_proxy
    if not kinds:
        return None
    http_proxy = profile.http_proxy or proxy_url or ""
    https_proxy = profile.https_proxy or http_proxy
    if not http_proxy and not https_proxy:
        raise _fail("httpProxy", None, f"clusterProxy {list(kinds)} needs a proxy URL",
                    "set egress-matrix:httpProxy, or deploy the egress proxy (egressProxy: true) with egressProxyClusterIp")
    for setting, url in (("httpProxy", http_proxy), ("httpsProxy", https_proxy)):
        if url:
            _check_url(setting, url, profile)
    for number, endpoint in enumerate(profile.proxy_readiness_endpoints):
        if has_credentials(endpoint):
            raise _fail("proxyReadinessEndpoints", list(profile.proxy_readiness_endpoints), f"item {number} carries credentials, which the Proxy "
                        "object would hold in plain text", "remove them: the operator fetches readiness endpoints through the proxy without credentials")
    no_proxy = ",".join(profile.no_proxy)
    if "openshift" in kinds:  # the network operator's check; KKP, AKS and kubeadm hand noProxy to Go clients (host:port is fine there)
        try:
            validate_proxy_spec(http_proxy, https_proxy, no_proxy, profile.proxy_readiness_endpoints)
        except ProxyValidationError as exc:
            raise _fail("httpProxy / httpsProxy / noProxy / proxyReadinessEndpoints", [http_proxy, https_proxy, no_proxy],
                        f"OpenShift's network operator would refuse the Proxy ({degraded_message(str(exc)).rstrip('.')})",
                        "correct the value the operator names") from None
    for entry in profile.no_proxy:
        if (cidr := netmask_entry(entry)) is not None:
            raise _fail("noProxy", entry, "Go's NO_PROXY matching reads a CIDR as address/prefix-length only and takes this netmask form for "
                        "a host name, which matches nothing, so those addresses would go through the proxy", f"write it as {cidr}")
    if profile.proxy_trusted_ca is not None:
        try:
            check_certificates_only(profile.proxy_trusted_ca)
        except AddressError as exc:
            raise _fail("proxyTrustedCa", "(PEM)", exc.problem, exc.fix) from None
        try:
            validate_trust_bundle(USER_CA_BUNDLE, {TRUSTED_CA_KEY: profile.proxy_trusted_ca})
        except ProxyValidationError as exc:
            malformed = "malformed certificate" in str(exc)  # a body that is no certificate: perhaps a key's, so the rotate advice
            raise _fail("proxyTrustedCa", "(PEM)", str(exc), NOT_A_CERTIFICATE_FIX if malformed else
                        "give the CA bundle as PEM 'CERTIFICATE' blocks (public certificates only)") from None
    plan = dict(kinds=kinds, http_proxy=http_proxy, https_proxy=https_proxy, credentials=credentials, no_proxy=profile.no_proxy,
                readiness_endpoints=profile.proxy_readiness_endpoints, trusted_ca=profile.proxy_trusted_ca)
    if "openshift" in kinds:
        plan["openshift_status_no_proxy"] = openshift_no_proxy(catalog, profile)
    if "kkp" in kinds:
        unset = [f"egress-matrix:{key}" for key, value in (("kkpSeed", profile.kkp_seed), ("kkpDatacenter", profile.kkp_datacenter)) if not value]
        if unset:
            raise ClusterProxyCompileError(f"{' and '.join(unset)} not set: clusterProxy kkp sets a Seed datacenter's node proxy. Fix: name "
                                           "the Seed (kkpSeed) and its datacenter (kkpDatacenter)")
        if https_proxy != http_proxy:
            raise _fail("httpsProxy", https_proxy, "KKP nodes take one proxy for HTTP and HTTPS (datacenter node.httpProxy)",
                        "leave httpsProxy unset, or equal to httpProxy")
        plan["kkp"] = KkpNodeProxy(seed=profile.kkp_seed, datacenter=profile.kkp_datacenter, http_proxy=http_proxy, no_proxy=_kkp_no_proxy(profile))
    if "aks" in kinds:
        if credentials:
            raise _fail("proxyCredentials", "(secret)", "AKS's HTTP proxy does not support user/password authentication",
                        "use a proxy that authenticates AKS's nodes another way, or leave aks out of clusterProxy")
        wildcards = [e for e in profile.no_proxy if "*" in e]
        if wildcards:
            raise _fail("noProxy", wildcards[0], "AKS does not support '*' wildcards in noProxy", "write '.example.com' for a domain's subdomains")
    if "kubeadm" in kinds:
        nodes = profile.machine_cidrs or profile.node_sources
        plan["kubeadm_no_proxy"] = ",".join(dict.fromkeys([*KUBEADM_NO_PROXY_BASE, *profile.pod_cidrs, *profile.service_cidrs, *nodes, *profile.no_proxy]))
    compiled = ClusterProxyPlan(**plan)
    check_direct_paths(catalog, compiled, requirements, profile)
    return compiled


# -- the objects, with the credentials where known ------------------------------------------------------------------------

def openshift_proxy(plan: ClusterProxyPlan, credentials: Optional[str] = None) -> dict:
    spec: dict = {"httpProxy": with_credentials(plan.http_proxy, credentials), "httpsProxy": with_credentials(plan.https_proxy, credentials)}
    if plan.no_proxy:
        spec["noProxy"] = ",".join(plan.no_proxy)
    if plan.readiness_endpoints:
        spec["readinessEndpoints"] = list(plan.readiness_endpoints)
    if plan.trusted_ca is not None:
        spec["trustedCA"] = {"name": USER_CA_BUNDLE}
    return {"apiVersion": "config.openshift.io/v1", "kind": "Proxy", "metadata": {"name": "cluster"}, "spec": spec}


def openshift_trusted_ca(plan: ClusterProxyPlan) -> Optional[dict]:
    if plan.trusted_ca is None:
        return None
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": USER_CA_BUNDLE, "namespace": "openshift-config"},
            "data": {TRUSTED_CA_KEY: plan.trusted_ca}}


def kkp_seed_patch(plan: ClusterProxyPlan, credentials: Optional[str] = None) -> Optional[dict]:
    if plan.kkp is None:
        return None
    node = {"httpProxy": with_credentials(plan.kkp.http_proxy, credentials), "noProxy": plan.kkp.no_proxy}
    return {"apiVersion": "kubermatic.k8c.io/v1", "kind": "Seed", "metadata": {"name": plan.kkp.seed, "namespace": "kubermatic"},
            "spec": {"datacenters": {plan.kkp.datacenter: {"node": node}}}}


def aks_http_proxy_config(plan: ClusterProxyPlan) -> Optional[dict]:
    """ManagedClusterHTTPProxyConfig as the AKS API takes it (no credentials: AKS has no proxy authentication)."""
    if "aks" not in plan.kinds:
        return None
    config: dict = {"httpProxy": plan.http_proxy, "httpsProxy": plan.https_proxy, "noProxy": list(plan.no_proxy)}
    if plan.trusted_ca is not None:
        config["trustedCa"] = base64.b64encode(plan.trusted_ca.encode()).decode()
    return config


def kubeadm_proxy_env(plan: ClusterProxyPlan, credentials: Optional[str] = None) -> Optional[dict]:
    """HTTP_PROXY / HTTPS_PROXY / NO_PROXY, upper and lower case, for containerd's and kubelet's systemd drop-ins."""
    if plan.kubeadm_no_proxy is None:
        return None
    http, https = with_credentials(plan.http_proxy, credentials), with_credentials(plan.https_proxy, credentials)
    data = {"HTTP_PROXY": http, "HTTPS_PROXY": https, "NO_PROXY": plan.kubeadm_no_proxy,
            "http_proxy": http, "https_proxy": https, "no_proxy": plan.kubeadm_no_proxy}
    kind = "Secret" if plan.credentials else "ConfigMap"
    body = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "egress-proxy-env", "namespace": "kube-system"}}
    body["stringData" if kind == "Secret" else "data"] = data
    if kind == "Secret":
        body["type"] = "Opaque"
    return body
