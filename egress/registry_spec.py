"""One item of egress-matrix:containerRegistries: a private container registry the stack pulls from, checked strictly.

Each type has its own fields (an ACR's name and regions, an ECR's account and region, ...); a field of another type,
a missing one or a malformed value is refused with one message that says what to write ("type acr needs name").
The hosts each type expands to are data (matrix/registry-kinds.yaml, egress/registries.py).
"""
from __future__ import annotations

import datetime
import re
from typing import Any, Optional

from pydantic import ConfigDict, Field, field_validator, model_validator

from .addresses import AddressError, parse_fqdn, parse_ip
from .own_settings import parse_expiry
from .models import CLOUD_VARIANTS, ROLES, SLUG, CloudVariant, Strict
from .registry_kinds import REGISTRY_TYPES, RegistryType

COMMON = ("type", "owner", "reference", "expires", "role")
# The fields of each type (stack spelling), the ones it needs, and how to write each needed one.
FIELDS: dict[str, tuple[str, ...]] = {
    "acr": ("name", "regions", "dataEndpoints", "regionalEndpoints", "cloud"),
    "ecr": ("account", "region"),
    "gar": ("location",),
    "ghcr": (),
    "generic": ("host", "redirectHosts"),
}
NEEDS: dict[str, tuple[str, ...]] = {"acr": ("name", "regions"), "ecr": ("account", "region"), "gar": ("location",), "ghcr": (),
                                     "generic": ("host",)}
HOW = {
    "name": "name: <registry name> (5-50 lower-case letters and digits, the part before .azurecr.io)",
    "regions": "regions: [<home region>, <each geo-replica's region>], e.g. [westeurope, northeurope]",
    "account": "account: \"<12-digit AWS account id>\" (quoted, so YAML keeps it text)",
    "region": "region: <AWS region of the registry>, e.g. eu-central-1",
    "location": "location: <repository location>, e.g. europe-west3 (the part before -docker.pkg.dev)",
    "host": "host: <registry host[:port]>, e.g. registry.example.com:5000",
    "owner": "owner: <the team that approved the registry>",
    "reference": "reference: <ticket id or URL of the approval>",
}
_ACR_NAME = re.compile(r"[a-z0-9]{5,50}")
_AZURE_REGION = re.compile(r"[a-z][a-z0-9]*")
_ECR_ACCOUNT = re.compile(r"[0-9]{12}")
_AWS_REGION = re.compile(r"[a-z]{2}(-gov)?-[a-z]+-[0-9]+")
_GAR_LOCATION = re.compile(r"[a-z]+(-[a-z]+[0-9]+)?")
TEXT_FIELDS = ("owner", "reference", "role", "name", "account", "region", "location", "host", "cloud")
LIST_FIELDS = ("regions", "redirectHosts")
FLAG_FIELDS = ("dataEndpoints", "regionalEndpoints")
_TYPE_NAMES = {"int": "a number", "float": "a number", "bool": "true/false", "list": "a list", "dict": "a mapping"}


class ContainerRegistry(Strict):
    """One item of egress-matrix:containerRegistries."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    type: RegistryType
    owner: str
    reference: str
    expires: Optional[datetime.date] = None
    role: str = "nodes"  # a role or a source group of the stack
    name: Optional[str] = None
    regions: tuple[str, ...] = ()
    data_endpoints: bool = Field(False, alias="dataEndpoints")
    regional_endpoints: bool = Field(False, alias="regionalEndpoints")
    cloud: Optional[CloudVariant] = None  # the ACR's Azure cloud (default: the stack's cloud, else azure-public)
    account: Optional[str] = None
    region: Optional[str] = None
    location: Optional[str] = None
    host: Optional[str] = None
    redirect_hosts: tuple[str, ...] = Field((), alias="redirectHosts")

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, raw: Any) -> Any:
        """One clear message for a wrong shape, a field of another type, or a missing field ('type acr needs name')."""
        if not isinstance(raw, dict):
            raise AddressError(f"a registry is a mapping, not {type(raw).__name__}", "write {type: acr, name: ..., regions: [...], owner: ..., reference: ...}")
        kind = raw.get("type")
        if kind is None:
            raise AddressError("a registry needs a type", f"add type: one of {', '.join(REGISTRY_TYPES)}")
        if kind not in REGISTRY_TYPES:
            raise AddressError(f"'{kind}' is not a registry type", f"use one of {', '.join(REGISTRY_TYPES)} (any other registry: type generic with its host)")
        allowed = COMMON + FIELDS[kind]
        for key in raw:
            if key not in allowed:
                raise AddressError(f"field '{key}' is not a field of type {kind}", f"remove it; type {kind} takes: {', '.join(sorted(allowed))}")
        for key in (*NEEDS[kind], "owner", "reference"):
            if raw.get(key) in (None, "", [], ()):
                raise AddressError(f"type {kind} needs {key}", f"add {HOW[key]}")
        for key, value in raw.items():
            _check_shape(key, value)
        return raw

    @field_validator("role")
    @classmethod
    def _role(cls, value: str) -> str:
        if not re.fullmatch(SLUG.strip("^$"), value):
            raise AddressError(f"role '{value}' is not a role or group name",
                               f"use a role ({', '.join(ROLES)}) or a source group of the stack (lower-case letters, digits and inner '-')")
        return value

    @field_validator("owner", "reference")
    @classmethod
    def _text(cls, value: str, info: Any) -> str:
        if not value.strip():
            raise AddressError(f"{info.field_name} is blank", f"add {HOW[info.field_name]}")
        return value

    @field_validator("expires", mode="before")
    @classmethod
    def _iso_date(cls, value: Any) -> Any:
        return parse_expiry(value, "expires ")

    @field_validator("name")
    @classmethod
    def _acr_name(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not _ACR_NAME.fullmatch(value):
            if _ACR_NAME.fullmatch(value.lower()):
                raise AddressError(f"name '{value}' has upper-case letters", f"write '{value.lower()}' (the login server is lower case)")
            raise AddressError(f"name '{value}' is not an ACR name", "use 5-50 letters and digits, e.g. contosoacr (the part before .azurecr.io)")
        return value

    @field_validator("regions")
    @classmethod
    def _azure_regions(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            if not _AZURE_REGION.fullmatch(value):
                raise AddressError(f"region '{value}' is not an Azure location name", "write it as the Azure CLI does, e.g. westeurope or northeurope")
            if values.count(value) > 1:
                raise AddressError(f"region '{value}' is listed twice", "list each region of the registry once")
        return values

    @field_validator("account")
    @classmethod
    def _ecr_account(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not _ECR_ACCOUNT.fullmatch(value):
            raise AddressError(f"account '{value}' is not an AWS account id", "write the 12 digits, quoted: account: \"123456789012\"")
        return value

    @field_validator("region")
    @classmethod
    def _aws_region(cls, value: Optional[str]) -> Optional[str]:
        if value is not None:
            if not _AWS_REGION.fullmatch(value):
                raise AddressError(f"region '{value}' is not an AWS region", "write e.g. eu-central-1")
            if value.startswith("cn-"):
                raise AddressError(f"region '{value}' is an AWS China region, whose ECR hosts (amazonaws.com.cn) no cited document gives",
                                   "list its hosts as type generic (host and redirectHosts) with your own approval")
        return value

    @field_validator("location")
    @classmethod
    def _gar_location(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not _GAR_LOCATION.fullmatch(value):
            raise AddressError(f"location '{value}' is not an Artifact Registry location", "write a region such as europe-west3 or a multi-region: us, europe, asia")
        return value

    @field_validator("host")
    @classmethod
    def _registry_host(cls, value: Optional[str]) -> Optional[str]:
        if value is not None:
            split_address(value, "host")
        return value

    @field_validator("redirect_hosts")
    @classmethod
    def _redirects(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            split_address(value, "redirectHosts")
            if values.count(value) > 1:
                raise AddressError(f"redirect host '{value}' is listed twice", "list each redirect host once")
        return values

    @model_validator(mode="after")
    def _redirect_not_registry(self) -> "ContainerRegistry":
        if self.host is not None and self.host in self.redirect_hosts:
            raise AddressError(f"redirect host '{self.host}' is the registry's own host", "remove it from redirectHosts")
        return self

    @property
    def label(self) -> str:
        """How messages name the registry."""
        return {"acr": f"acr {self.name}", "ecr": f"ecr {self.account} {self.region}", "gar": f"gar {self.location}", "ghcr": "ghcr",
                "generic": f"generic {self.host}"}[self.type]


def _check_shape(key: str, value: Any) -> None:
    """Each field's YAML type, with the fix (an unquoted account id is a number; a single region is not a list)."""
    if key in TEXT_FIELDS and value is not None and not isinstance(value, str):
        raise AddressError(f"{key} {value!r} is {_TYPE_NAMES.get(type(value).__name__, 'not text')}, not text",
                           f"quote it: {key}: \"{value}\"" if isinstance(value, int) and not isinstance(value, bool) else f"write {key} as one text value")
    if key == "cloud" and value is not None and value not in CLOUD_VARIANTS:
        raise AddressError(f"cloud '{value}' is not an Azure cloud", f"use one of {', '.join(CLOUD_VARIANTS)}")
    if key in LIST_FIELDS and not (isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value)):
        raise AddressError(f"{key} {value!r} is not a list of text", f"write a list, e.g. {key}: [{'westeurope' if key == 'regions' else 'blobs.example.com'}]")
    if key in FLAG_FIELDS and not isinstance(value, bool):
        raise AddressError(f"{key} {value!r} is not true or false", f"write {key}: true or {key}: false")


def split_address(value: str, field: str) -> tuple[str, int]:
    """``host[:port]`` -> (host, port); the host a DNS name or an IP, the port 443 unless given."""
    if "://" in value or "/" in value:
        raise AddressError(f"{field} '{value}' is not host[:port]", "write the host only, e.g. registry.example.com:5000 (no scheme or path)")
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = value, "443"
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise AddressError(f"{field} '{value}' has no valid port", "write host:port with a port 1-65535, or the host alone for 443")
    try:
        parse_ip(host)
    except AddressError:
        try:
            parse_fqdn(host)
        except AddressError as exc:
            raise AddressError(f"{field} '{value}': {exc.problem}", exc.fix) from None
    return host, int(port)


def check_registry_list(registries: tuple[ContainerRegistry, ...]) -> tuple[ContainerRegistry, ...]:
    """No registry listed twice (the same ids would come out of both)."""
    seen: dict[str, int] = {}
    for index, registry in enumerate(registries):
        key = _identity(registry)
        if key in seen:
            raise AddressError(f"items {seen[key]} and {index} are the same registry ({registry.label})",
                               "list each registry once (give an ACR all its regions in one item)")
        seen[key] = index
    return registries


def _identity(registry: ContainerRegistry) -> str:
    if registry.type == "generic":
        return f"generic {split_address(registry.host or '', 'host')}"
    return {"acr": f"acr {registry.name}", "ecr": f"ecr {registry.account} {registry.region}", "gar": f"gar {registry.location}",
            "ghcr": "ghcr"}[registry.type]
