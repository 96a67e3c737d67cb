"""Where a role's machines run (the stack setting ``runsOn``), for the rows that depend on it.

Some hosts depend on where the client runs, not on what the cluster manages: Ubuntu on EC2 installs from
``<region>.ec2.archive.ubuntu.com``, registry.k8s.io serves AWS clients from an S3 copy in their region. A KKP seed
on AWS that manages vSphere clusters has its seed on AWS and its user-cluster nodes on vSphere, so this is per role
(or source group). Entries say ``when: {runs_on: [aws]}`` and use ``{runs_on_region}``; pure, no Pulumi.
"""
from __future__ import annotations

import re
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, model_validator

from .addresses import AddressError

Cloud = Literal["aws", "azure", "gcp", "ibmcloud", "alibabacloud", "openstack", "vsphere", "nutanix", "kubevirt", "baremetal", "other"]

# Region spellings per cloud: AWS 'eu-west-1' (and checked against botocore's list), Azure locations 'westeurope'
# (as the az CLI writes them), GCP 'europe-west1'. Elsewhere a region is the operator's own label.
_REGION = {
    "azure": (r"^[a-z0-9]+$", "an Azure location as the az CLI writes it, e.g. westeurope"),
    "gcp": (r"^[a-z]+-[a-z]+[0-9]+$", "a GCP region, e.g. europe-west1"),
}
_REGIONAL = {"aws": "eu-west-1", "azure": "westeurope", "gcp": "europe-west1"}  # clouds whose machines always have a region
_LABEL = (r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$", "a lower-case label, e.g. dc-frankfurt")


class Place(BaseModel):
    """Where one role's machines run: a cloud (or infrastructure) and, where rows need it, its region."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cloud: Cloud
    region: Optional[str] = None

    @model_validator(mode="before")
    @classmethod
    def _azure_display_name(cls, data: object) -> object:
        """An Azure region as the portal shows it ('West Europe') is the location az writes ('westeurope'), as for the
        stack's own location (egress/spellings.py)."""
        if isinstance(data, dict) and data.get("cloud") == "azure" and isinstance(data.get("region"), str):
            from .spellings import azure_location

            return {**data, "region": azure_location(data["region"])}
        return data

    @model_validator(mode="after")
    def _region_spelling(self) -> "Place":
        if self.region is None:
            if self.cloud in _REGIONAL:  # a row keyed on the region would be silently left out (pulls redirected there fail)
                raise AddressError(f"a machine on {self.cloud} runs in a region, and rows depend on it",
                                   f"add region, e.g. {{cloud: {self.cloud}, region: {_REGIONAL[self.cloud]}}}")
            return self
        if self.cloud == "aws":
            from .aws_regions import known_regions  # botocore: imported only when a stack names an AWS region

            regions = known_regions()
            if self.region not in regions:
                raise AddressError(f"'{self.region}' is not an AWS region (botocore's endpoint data)",
                                   f"use one of: {', '.join(sorted(regions))}")
            return self
        pattern, spelling = _REGION.get(self.cloud, _LABEL)
        if not re.fullmatch(pattern, self.region):
            raise AddressError(f"'{self.region}' is not a region of {self.cloud}", f"write {spelling}")
        return self


def as_places(value: object) -> object:
    """``nodes: {cloud: aws, region: eu-west-1}`` is short for a list of one: a role's machines may run in several places
    (a KKP seed's user clusters on AWS and on vSphere)."""
    if isinstance(value, dict):
        return {name: [place] if isinstance(place, dict) else place for name, place in value.items()}
    return value


def matching(places: tuple[Place, ...], clouds: Optional[tuple[str, ...]], regions: Optional[tuple[str, ...]]) -> tuple[Place, ...]:
    """The places of a role that a row's ``runs_on`` / ``runs_on_regions`` conditions select (unset: every place)."""
    return tuple(p for p in places if (clouds is None or p.cloud in clouds) and (regions is None or p.region in regions))


def check_places(places: dict[str, tuple[Place, ...]], sources: tuple[str, ...]) -> None:
    """Every key of runsOn is a role or a source group of the stack."""
    for name, where in places.items():
        if not where:
            raise AddressError(f"'{name}' has no place", "give at least one {cloud: ..., region: ...}, or leave the role out")
        if len(set(where)) != len(where):
            raise AddressError(f"'{name}' lists a place twice", "list each place once")
        if name not in sources:
            raise AddressError(f"'{name}' is neither a role nor a source group of the stack",
                               f"use a role or a group egress-matrix:sourceGroups names: {', '.join(sources)}")
