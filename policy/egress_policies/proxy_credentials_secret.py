"""proxy-credentials-secret: proxy credentials never sit in plain text, in the cluster or in Pulumi's state.

The engine hands packs secrets already unwrapped, so the policy judges where a credentialed URL is put: a ConfigMap,
a label or an annotation is plain text in the cluster (use a Secret); an object that must carry it in its spec (the
OpenShift Proxy, which echoes it in status; a KKP Seed) must mark those outputs secret, or the provider's read-back
lands in the state in plain text."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from egress.deployed import DeployedResource
from egress.gourl import GoURLError, parse as go_parse

from .objects import is_kkp, is_openshift_proxy, proxy_urls
from .support import resource_validator

NAME = "proxy-credentials-secret"
SECRET_OUTPUTS = {"Proxy": ("spec", "status"), "Seed": ("spec",)}


def has_credentials(url: str) -> bool:
    try:
        return go_parse(url).user is not None
    except GoURLError:
        return "@" in url.split("/", 3)[2] if url.count("/") >= 2 else False


def _annotations_and_labels(resource: DeployedResource) -> list[str]:
    metadata = resource.props.get("metadata") or {}
    found = []
    for key in ("annotations", "labels"):
        for name, value in sorted((metadata.get(key) or {}).items()):
            if "://" in str(value) and has_credentials(str(value)):
                found.append(f"metadata.{key}.{name}")
    return found


def violations(resource: DeployedResource) -> list[str]:
    out = [f"{field} holds proxy credentials in plain text (metadata is readable by anyone who can list the object)"
           for field in _annotations_and_labels(resource)]
    fields = [field for field, url in proxy_urls(resource) if has_credentials(url)]
    if not fields:
        return out
    if resource.kind == "ConfigMap":
        out.append(f"{', '.join(fields)} carry proxy credentials in a ConfigMap (plain text in the cluster and in the state): "
                   "use a Secret")
    elif is_openshift_proxy(resource) or is_kkp(resource, "Seed"):
        needed = SECRET_OUTPUTS[resource.kind]
        unmarked = [n for n in needed if n not in resource.additional_secret_outputs]
        if unmarked:
            out.append(f"{', '.join(fields)} carry proxy credentials but the outputs {', '.join(unmarked)} are not marked secret "
                       "(additionalSecretOutputs): the provider's read-back would store them in plain text")
    return out


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="Proxy URLs carrying credentials live only in Secrets or in objects whose outputs are marked secret; never in a "
                "ConfigMap, a label or an annotation.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    validate=resource_validator(violations),
    remediation_steps="Keep credentials in egress-matrix:proxyCredentials (pulumi config set --secret) and out of URLs; the "
                      "program adds them inside secret Outputs.",
)
