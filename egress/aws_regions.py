"""The AWS regions a stack may name: botocore's bundled endpoint data (AWS's own partitions file), not a list of ours."""
from __future__ import annotations

from functools import lru_cache

PARTITIONS = ("aws", "aws-cn", "aws-us-gov")  # the ARN partitions egress-matrix supports


@lru_cache(maxsize=1)
def known_regions() -> dict[str, str]:
    """region -> partition, for every region where Network Firewall is offered."""
    bundled = _bundled_endpoints()
    if bundled is not None:
        return _regions(bundled)
    import botocore.session  # imported late: only stacks that name an AWS region need it

    session = botocore.session.get_session()
    return {region: partition for partition in PARTITIONS
            for region in session.get_available_regions("network-firewall", partition_name=partition)}


def _bundled_endpoints() -> dict | None:
    """botocore's own endpoints.json, read without botocore.session (about 100 ms of imports and a service model on each
    start); None where a session could see other data (AWS_DATA_PATH, ~/.aws/models) or botocore keeps it elsewhere."""
    import importlib.util
    import json
    import os
    from pathlib import Path

    spec = importlib.util.find_spec("botocore")
    if os.environ.get("AWS_DATA_PATH") or (Path.home() / ".aws" / "models").exists() or not spec or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "endpoints.json"
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def _regions(endpoints: dict) -> dict[str, str]:
    """What session.get_available_regions('network-firewall', partition) gives for each partition: the service's endpoint
    names that are regions of that partition (botocore.regions.EndpointResolver.get_available_endpoints)."""
    out: dict[str, str] = {}
    for name in PARTITIONS:
        for partition in endpoints["partitions"]:
            if partition["partition"] == name:
                service = partition["services"].get("network-firewall", {})
                out.update((region, name) for region in service.get("endpoints", {}) if region in partition["regions"])
    return out
