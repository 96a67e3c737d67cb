"""trusted-ca-valid: the trusted-CA bundle the cluster proxy relies on parses as the operator parses it (PEM blocks,
X.509 DER) and holds no certificate that is expired, not yet valid, or about to expire."""
from __future__ import annotations

import datetime

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationPolicy, Severity

from egress.deployed import DeployedResource
from egress.targets.kubernetes.openshift_checks import TRUSTED_CA_KEY, ProxyValidationError, validate_trust_bundle

from .objects import env_data
from .support import resource_validator

NAME = "trusted-ca-valid"
TRUSTED_CA_NAMESPACE = "openshift-config"


def violations(resource: DeployedResource, expiry_days: int = 30, now: datetime.datetime | None = None) -> list[str]:
    metadata = resource.props.get("metadata") or {}
    if resource.kind != "ConfigMap" or metadata.get("namespace") != TRUSTED_CA_NAMESPACE or TRUSTED_CA_KEY not in env_data(resource):
        return []
    name = str(metadata.get("name", resource.name))
    try:
        certificates = validate_trust_bundle(name, env_data(resource))
    except ProxyValidationError as exc:
        return [str(exc)]
    now = now or datetime.datetime.now(datetime.timezone.utc)
    out = []
    for number, cert in enumerate(certificates, 1):
        subject = cert.subject.rfc4514_string() or "(empty subject)"
        after, before = cert.not_valid_after_utc, cert.not_valid_before_utc
        if after < now:
            out.append(f"certificate {number} ({subject}) expired on {after:%Y-%m-%d}")
        elif before > now:
            out.append(f"certificate {number} ({subject}) is not valid before {before:%Y-%m-%d}")
        elif after < now + datetime.timedelta(days=expiry_days):
            out.append(f"certificate {number} ({subject}) expires on {after:%Y-%m-%d}, within {expiry_days} days")
    return out


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="The proxy's trusted-CA bundle (openshift-config ConfigMap, key ca-bundle.crt) parses as the network operator "
                "parses it, and no certificate in it is expired, not yet valid, or about to expire.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    validate=resource_validator(violations, ("expiryWarningDays", 30)),
    config_schema=PolicyConfigSchema(properties={"expiryWarningDays": {
        "type": "integer", "minimum": 0, "default": 30, "description": "Report certificates that expire within this many days."}}),
    remediation_steps="Put the proxy's current CA certificates (PEM) in egress-matrix:proxyTrustedCa.",
)
