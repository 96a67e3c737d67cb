"""The AWS regions a stack may name: botocore's bundled endpoint data (AWS's own partitions file), not a list of ours."""
from __future__ import annotations

from functools import lru_cache

PARTITIONS = ("aws", "aws-cn", "aws-us-gov")  # the ARN partitions egress-matrix supports


@lru_cache(maxsize=1)
def known_regions() -> dict[str, str]:
    """region -> partition, for every region where Network Firewall is offered."""
    import botocore.session  # imported late: only stacks that name an AWS region need it

    session = botocore.session.get_session()
    return {region: partition for partition in PARTITIONS
            for region in session.get_available_regions("network-firewall", partition_name=partition)}
