"""Where proxy settings and API allowlists live in the Kubernetes objects a stack deploys (typed or patches)."""
from __future__ import annotations

import base64
import binascii
from typing import Any, Iterator

from egress.deployed import DeployedResource

PROXY_ENV_KEYS = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
NO_PROXY_ENV_KEYS = ("NO_PROXY", "no_proxy")


def api_version(resource: DeployedResource) -> str:
    return str(resource.props.get("apiVersion", ""))


def is_openshift_proxy(resource: DeployedResource) -> bool:
    return resource.kind == "Proxy" and api_version(resource).startswith("config.openshift.io/")


def is_kkp(resource: DeployedResource, kind: str) -> bool:
    return resource.kind == kind and api_version(resource).startswith("kubermatic.k8c.io/")


def spec(resource: DeployedResource) -> dict[str, Any]:
    value = resource.props.get("spec")
    return value if isinstance(value, dict) else {}


def env_fields(resource: DeployedResource) -> dict[str, tuple[str, str]]:
    """key -> (field, text) of a ConfigMap's ``data``, or a Secret's ``data`` decoded and ``stringData`` over it.

    A Secret reaches the pack as the provider's Check left it: ``stringData`` moved into ``data``, base64-encoded. The
    API server lays ``stringData`` over ``data``, so that one wins. A value that is not base64 of UTF-8 text is left
    out: it cannot be a URL or a PEM bundle, and an exception here would fail the engine's whole policy run."""
    fields: dict[str, tuple[str, str]] = {}
    data = resource.props.get("data")
    if isinstance(data, dict):
        for key, value in data.items():
            if resource.kind != "Secret":
                fields[str(key)] = ("data", str(value))
            elif (text := _decoded(value)) is not None:
                fields[str(key)] = ("data", text)
    string_data = resource.props.get("stringData")
    if isinstance(string_data, dict):
        fields.update({str(k): ("stringData", str(v)) for k, v in string_data.items()})
    return fields


def _decoded(value: Any) -> str | None:
    try:
        return base64.b64decode(str(value), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
        return None


def env_data(resource: DeployedResource) -> dict[str, str]:
    """A ConfigMap's ``data``, a Secret's ``data`` (decoded) and ``stringData``: key -> text (see ``env_fields``)."""
    return {key: text for key, (_, text) in env_fields(resource).items()}


def proxy_urls(resource: DeployedResource) -> Iterator[tuple[str, str]]:
    """(field path, URL) of every proxy URL the object sets: OpenShift's Proxy, a KKP Seed's datacenter node settings,
    and HTTP(S)_PROXY in a ConfigMap or Secret (kubeadm / containerd drop-ins)."""
    if is_openshift_proxy(resource):
        for key in ("httpProxy", "httpsProxy"):
            if spec(resource).get(key):
                yield f"spec.{key}", str(spec(resource)[key])
    elif is_kkp(resource, "Seed"):
        for name, datacenter in sorted((spec(resource).get("datacenters") or {}).items()):
            node = (datacenter or {}).get("node") or {}
            if node.get("httpProxy"):
                yield f"spec.datacenters.{name}.node.httpProxy", str(node["httpProxy"])
    elif resource.kind in ("ConfigMap", "Secret"):
        fields = env_fields(resource)
        for key in PROXY_ENV_KEYS:
            if key in fields and fields[key][1]:
                yield f"{fields[key][0]}.{key}", fields[key][1]


def no_proxy_lists(resource: DeployedResource) -> Iterator[tuple[str, list[str]]]:
    """(field path, entries) of every noProxy list: KKP Seed datacenters and NO_PROXY env (OpenShift's Proxy is
    judged by what the operator computes from it)."""
    if is_kkp(resource, "Seed"):
        for name, datacenter in sorted((spec(resource).get("datacenters") or {}).items()):
            node = (datacenter or {}).get("node") or {}
            if "noProxy" in node or node.get("httpProxy"):
                yield f"spec.datacenters.{name}.node.noProxy", [p.strip() for p in str(node.get("noProxy") or "").split(",") if p.strip()]
    elif resource.kind in ("ConfigMap", "Secret"):
        fields = env_fields(resource)
        if any(fields[k][1] for k in PROXY_ENV_KEYS if k in fields):
            for key in NO_PROXY_ENV_KEYS:
                if key in fields:
                    field, text = fields[key]
                    yield f"{field}.{key}", [p.strip() for p in text.split(",") if p.strip()]
