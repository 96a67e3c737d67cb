"""trusted-ca-valid: the trusted-CA bundle the cluster proxy relies on holds certificates only, parses as the operator
parses it (PEM blocks, X.509 DER) and holds no certificate that is expired, not yet valid, or about to expire; and no
ConfigMap carries a private key (a CA's key pasted with its certificate: the operator would skip it, and a ConfigMap
is plain text in the cluster and in Pulumi's state). Findings name the block, never its content."""
from __future__ import annotations

import datetime

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationPolicy, Severity

from egress.deployed import DeployedResource
from egress.pem import foreign_blocks
from egress.targets.kubernetes.openshift_checks import TRUSTED_CA_KEY, ProxyValidationError, validate_trust_bundle

from .objects import env_data
from .support import resource_validator

NAME = "trusted-ca-valid"
TRUSTED_CA_NAMESPACE = "openshift-config"


def _foreign(resource: DeployedResource, trusted_ca: bool) -> list[str]:
    """Private key material in any ConfigMap value; in the trusted-CA bundle, any block that is not a certificate."""
    out = []
    for key, text in sorted(env_data(resource).items()):
        found = [f for f in foreign_blocks(text) if f.private or (trusted_ca and key == TRUSTED_CA_KEY)]
        if any(f.private for f in found):
            out.append(f"data.{key}: {next(f for f in found if f.private).describe()}: a ConfigMap is plain text in the cluster and in "
                       "Pulumi's state; remove it and rotate that key (treat it as exposed)")
        elif found:
            out.append(f"data.{key}: {found[0].describe()}: the bundle is to hold the CA's certificates only")
    return out


def violations(resource: DeployedResource, expiry_days: int = 30, now: datetime.datetime | None = None) -> list[str]:
    metadata = resource.props.get("metadata") or {}
    if resource.kind != "ConfigMap":
        return []
    trusted_ca = metadata.get("namespace") == TRUSTED_CA_NAMESPACE and TRUSTED_CA_KEY in env_data(resource)
    foreign = _foreign(resource, trusted_ca)
    if foreign or not trusted_ca:
        return foreign
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
    description="The proxy's trusted-CA bundle (openshift-config ConfigMap, key ca-bundle.crt) holds certificates only, parses as the "
                "network operator parses it, and no certificate in it is expired, not yet valid, or about to expire; no ConfigMap "
                "carries a private key.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    validate=resource_validator(violations, ("expiryWarningDays", 30)),
    config_schema=PolicyConfigSchema(properties={"expiryWarningDays": {
        "type": "integer", "minimum": 0, "default": 30, "description": "Report certificates that expire within this many days."}}),
    remediation_steps="Put the proxy's current CA certificates (PEM, CERTIFICATE blocks only) in egress-matrix:proxyTrustedCa; rotate "
                      "any private key that was ever in a stack file or a ConfigMap.",
)
