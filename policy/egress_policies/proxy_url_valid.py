"""proxy-url-valid: every proxy URL the cluster is given passes the OpenShift cluster-network-operator's own
validation (scheme http/https, host, port; for OpenShift the whole Proxy spec, in the operator's order), so the
operator does not go Degraded and nodes do not fail to pull."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from egress.deployed import DeployedResource
from egress.targets.kubernetes.openshift_checks import ProxyValidationError, degraded_message, validate_proxy_spec

from .objects import is_openshift_proxy, proxy_urls, spec
from .support import redact, resource_validator

NAME = "proxy-url-valid"


def violations(resource: DeployedResource) -> list[str]:
    try:
        if is_openshift_proxy(resource):
            s = spec(resource)
            validate_proxy_spec(str(s.get("httpProxy") or ""), str(s.get("httpsProxy") or ""), str(s.get("noProxy") or ""),
                                [str(e) for e in s.get("readinessEndpoints") or []])
            return []
    except ProxyValidationError as exc:
        return [redact(f"spec: {degraded_message(str(exc))}")]
    out = []
    for field, url in proxy_urls(resource):
        try:
            validate_proxy_spec(http_proxy=url) if not field.endswith(("HTTPS_PROXY", "https_proxy")) else validate_proxy_spec(https_proxy=url)
        except ProxyValidationError as exc:
            out.append(redact(f"{field}: {exc}"))
    return out


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="Proxy URLs (OpenShift Proxy, KKP Seed node settings, HTTP(S)_PROXY env) pass the OpenShift network "
                "operator's validation.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    validate=resource_validator(violations),
    remediation_steps="Write the proxy as http://host:port or https://host:port in egress-matrix:httpProxy / httpsProxy "
                      "(credentials go in egress-matrix:proxyCredentials).",
)
