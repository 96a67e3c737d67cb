"""proxy-credentials-secret: proxy credentials never sit in plain text, in the cluster or in Pulumi's state.

The engine hands packs secrets already unwrapped, so the policy judges where a credentialed URL is put. It reads every
string of every Kubernetes object (a URL with credentials can land anywhere: a readiness endpoint, an env value, a
label), judged by egress/redact.py as the CLI's own checks are. Only two places may hold one: a Secret, and the proxy
URLs an object must carry in its spec (the OpenShift Proxy, which echoes them in status; a KKP Seed's node proxy),
provided the object marks those outputs secret, or the provider's read-back lands in the state in plain text."""
from __future__ import annotations

from typing import Any, Iterator

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from egress.deployed import DeployedResource
from egress.redact import has_credentials

from .objects import is_kkp, is_openshift_proxy
from .support import resource_validator

NAME = "proxy-credentials-secret"
SECRET_OUTPUTS = {"Proxy": ("spec", "status"), "Seed": ("spec",)}
_PROXY_URL_FIELDS = ("spec.httpProxy", "spec.httpsProxy", "status.httpProxy", "status.httpsProxy")


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, text) of every string under ``value``: dotted keys, list items as ``[i]``."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for number, item in enumerate(value):
            yield from _strings(item, f"{path}[{number}]")


def credential_fields(resource: DeployedResource) -> list[str]:
    """The field paths of ``resource`` whose text carries a URL or host with credentials, sorted."""
    return sorted(path for path, text in _strings(resource.props, "") if "@" in text and has_credentials(text))


def _proxy_url_field(resource: DeployedResource, path: str) -> bool:
    """A field that must carry the proxy URL, credentials included (they are added there, inside secret Outputs)."""
    if is_openshift_proxy(resource):
        return path in _PROXY_URL_FIELDS
    if is_kkp(resource, "Seed"):
        parts = path.split(".")
        return len(parts) == 5 and parts[:2] == ["spec", "datacenters"] and parts[3:] == ["node", "httpProxy"]
    return False


def violations(resource: DeployedResource) -> list[str]:
    fields = credential_fields(resource)
    if not fields or resource.kind == "Secret":
        return []
    out = [f"{field} holds proxy credentials in plain text (metadata is readable by anyone who can list the object)"
           for field in fields if field.startswith(("metadata.annotations.", "metadata.labels."))]
    fields = [f for f in fields if not f.startswith(("metadata.annotations.", "metadata.labels."))]
    if resource.kind == "ConfigMap":
        if fields:
            out.append(f"{', '.join(fields)} carry proxy credentials in a ConfigMap (plain text in the cluster and in the state): use a Secret")
        return out
    proxy_urls = [f for f in fields if _proxy_url_field(resource, f)]
    elsewhere = [f for f in fields if f not in proxy_urls]
    if elsewhere:
        out.append(f"{', '.join(elsewhere)} carry credentials in plain text: only a Secret, or the proxy URL fields of the OpenShift Proxy "
                   "and a KKP Seed inside secret outputs, may hold them (a readiness endpoint or an env value never)")
    if proxy_urls:
        needed = SECRET_OUTPUTS[resource.kind]
        unmarked = [n for n in needed if n not in resource.additional_secret_outputs]
        if unmarked:
            out.append(f"{', '.join(proxy_urls)} carry proxy credentials but the outputs {', '.join(unmarked)} are not marked secret "
                       "(additionalSecretOutputs): the provider's read-back would store them in plain text")
    return out


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="Proxy URLs carrying credentials live only in Secrets or in the proxy URL fields of objects whose outputs are marked "
                "secret; never in a ConfigMap, a label, an annotation, a readiness endpoint or any other field.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    validate=resource_validator(violations),
    remediation_steps="Keep credentials in egress-matrix:proxyCredentials (pulumi config set --secret) and out of URLs; the "
                      "program adds them inside secret Outputs.",
)
