"""Where proxy settings and API allowlists live in the Kubernetes objects a stack deploys (typed or patches)."""
from __future__ import annotations

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


def env_data(resource: DeployedResource) -> dict[str, str]:
    """A ConfigMap's ``data`` or a Secret's ``stringData`` / ``data`` keys (values as given)."""
    merged: dict[str, str] = {}
    for key in ("data", "stringData"):
        value = resource.props.get(key)
        if isinstance(value, dict):
            merged.update({str(k): str(v) for k, v in value.items()})
    return merged


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
        data = env_data(resource)
        for key in PROXY_ENV_KEYS:
            if data.get(key):
                yield f"{'data' if resource.kind == 'ConfigMap' else 'stringData'}.{key}", data[key]


def no_proxy_lists(resource: DeployedResource) -> Iterator[tuple[str, list[str]]]:
    """(field path, entries) of every noProxy list: KKP Seed datacenters and NO_PROXY env (OpenShift's Proxy is
    judged by what the operator computes from it)."""
    if is_kkp(resource, "Seed"):
        for name, datacenter in sorted((spec(resource).get("datacenters") or {}).items()):
            node = (datacenter or {}).get("node") or {}
            if "noProxy" in node or node.get("httpProxy"):
                yield f"spec.datacenters.{name}.node.noProxy", [p.strip() for p in str(node.get("noProxy") or "").split(",") if p.strip()]
    elif resource.kind in ("ConfigMap", "Secret"):
        data = env_data(resource)
        if any(data.get(k) for k in PROXY_ENV_KEYS):
            for key in NO_PROXY_ENV_KEYS:
                if key in data:
                    yield f"{'data' if resource.kind == 'ConfigMap' else 'stringData'}.{key}", [p.strip() for p in data[key].split(",") if p.strip()]
