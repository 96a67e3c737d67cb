"""Deployed Kubernetes objects back into the artefact the evaluator judges: the egress proxy's squid.conf, read from
the ConfigMap the proxy mounts."""
from __future__ import annotations

from typing import Iterable

from ...deployed import DeployedResource
from .evaluate import SQUID_CONF


def squid_configs(resources: Iterable[DeployedResource]) -> list[tuple[DeployedResource, str]]:
    """Every ConfigMap carrying a ``squid.conf``."""
    return [(r, str(r.props["data"]["squid.conf"])) for r in resources
            if r.kind == "ConfigMap" and isinstance(r.props.get("data"), dict) and "squid.conf" in r.props["data"]]


def artefacts(resources: Iterable[DeployedResource]) -> dict[str, str]:
    configs = squid_configs(resources)
    return {SQUID_CONF: configs[0][1]} if configs else {}
