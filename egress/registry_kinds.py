"""The hosts a pull from each type of private container registry touches (``matrix/registry-kinds.yaml``), validated.

The file is data with citations, like ``matrix/expansions.yaml``: per registry type, host templates with placeholders
filled from the registry a stack lists (egress/registries.py). This module knows only which placeholders, conditions
and repetitions each type offers; which hosts exist, and why, is the file's.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Optional

from pydantic import Field

from .addresses import AddressError, parse_destination, parse_port
from .catalog.checks import _validate, _where
from .errors import CatalogError
from .models import CloudVariant, Citation, Protocol, Strict
from .placeholders import names_in, substitute
from .reasons import Reason

SCHEMA_VERSION = 1
FILE_KIND = "registry-kinds"
RegistryType = Literal["acr", "ecr", "gar", "ghcr", "generic"]
REGISTRY_TYPES: tuple[str, ...] = ("acr", "ecr", "gar", "ghcr", "generic")

# What each type fills in: placeholders that hold once per registry, and per repetition (`each`) the placeholders
# that hold once per item (an ACR's regions, a generic registry's redirect hosts).
SCALARS: dict[str, frozenset[str]] = {
    "acr": frozenset({"registry_name"}),
    "ecr": frozenset({"account", "region"}),
    "gar": frozenset({"location"}),
    "ghcr": frozenset(),
    "generic": frozenset({"address", "host", "port"}),
}
EACH: dict[str, dict[str, frozenset[str]]] = {
    "acr": {"region": frozenset({"region"})},
    "generic": {"redirect": frozenset({"redirect_address", "redirect_host", "redirect_port"})},
}
# The conditions a type's hosts may carry (only an ACR has an Azure cloud and endpoint options).
CONDITIONS: dict[str, frozenset[str]] = {"acr": frozenset({"clouds", "data_endpoints", "regional_endpoints"})}
# Values the templates are checked with at load time (the destinations they give must be valid).
SAMPLES = {"registry_name": "contosoacr", "region": "westeurope", "account": "123456789012", "location": "europe-west3",
           "address": "registry.example.com:5000", "host": "registry.example.com", "port": "5000",
           "redirect_address": "blobs.example.com", "redirect_host": "blobs.example.com", "redirect_port": "443"}
ECR_SAMPLE_REGION = "eu-central-1"
DEFAULT_PORTS = {"http": 80, "https": 443}


class HostConditions(Strict):
    """Which registries a host applies to; unset fields do not constrain."""

    clouds: Optional[tuple[CloudVariant, ...]] = None  # the registry's Azure cloud is one of these
    data_endpoints: Optional[bool] = None  # the registry has dedicated data endpoints (ACR)
    regional_endpoints: Optional[bool] = None  # the registry has regional (geo) endpoints enabled (ACR)

    def set_fields(self) -> set[str]:
        return {name for name in type(self).model_fields if getattr(self, name) is not None}


class HostTemplate(Strict):
    """One host a pull touches, as a template."""

    id: str = Field(min_length=1)  # the host's part of the entry id, e.g. 'login' or 'data-{region}'
    destination: str = Field(min_length=1)
    protocol: Protocol = "https"
    ports: tuple[int | str, ...] = ()  # default: the protocol's port
    each: Optional[Literal["region", "redirect"]] = None  # one host per region / per redirect host of the registry
    when: HostConditions = HostConditions()
    purpose: str = Field(min_length=1)
    broad: Optional[Reason] = None  # why a host broader than the registry is needed
    note: Optional[str] = None
    citation: Citation


class RegistryKind(Strict):
    title: str = Field(min_length=1)
    id: str = Field(min_length=1)  # template of the registry's part of its entry ids
    label: str = Field(min_length=1)  # template of the registry's name in purposes
    note: Optional[str] = None
    citation: Citation  # the document behind the note (how a pull of this type works)
    hosts: tuple[HostTemplate, ...] = Field(min_length=1)


class RegistryKinds(Strict):
    """The validated ``matrix/registry-kinds.yaml``."""

    kinds: dict[str, RegistryKind]

    def citations(self) -> tuple[Citation, ...]:
        return tuple(citation for kind in self.kinds.values() for citation in (kind.citation, *(host.citation for host in kind.hosts)))


def load_registry_kinds(path: Path, document: Any) -> RegistryKinds:
    """Validate the document of ``path`` (already read, e.g. by egress.catalog.read_yaml); CatalogError on bad data."""
    if not isinstance(document, dict):
        raise CatalogError(path, "", "(file)", type(document).__name__, "a matrix file is a mapping",
                           f"start the file with 'schema: {SCHEMA_VERSION}' and 'kind: {FILE_KIND}'")
    if document.get("schema") != SCHEMA_VERSION:
        raise CatalogError(path, "", "schema", document.get("schema"), "unsupported schema version", f"write 'schema: {SCHEMA_VERSION}'")
    if document.get("kind") != FILE_KIND:
        raise CatalogError(path, "", "kind", document.get("kind"), "not a registry-kinds file", f"write 'kind: {FILE_KIND}'")
    for key in document:
        if key not in ("schema", "kind", "kinds"):
            raise CatalogError(path, "", str(key), document[key], f"unknown top-level field for kind '{FILE_KIND}'",
                               "remove it or use one of: kind, kinds, schema")
    raw_kinds = document.get("kinds")
    if not isinstance(raw_kinds, dict):
        raise CatalogError(path, "", "kinds", raw_kinds, "kinds is a mapping of registry type to its hosts",
                           f"write 'kinds:' with one entry per type: {', '.join(REGISTRY_TYPES)}")
    kinds: dict[str, RegistryKind] = {}
    for name, raw in raw_kinds.items():
        where = _where(raw, f"kind '{name}'")
        if name not in REGISTRY_TYPES:
            raise CatalogError(path, where, "kinds", name, "not a registry type egress-matrix knows",
                               f"use one of {', '.join(REGISTRY_TYPES)} (a new type also needs its fields in egress/registries.py)")
        kind = _validate(RegistryKind, raw, path, where)
        kinds[name] = _check_kind(name, kind, raw, path, where)
    missing = [name for name in REGISTRY_TYPES if name not in kinds]
    if missing:
        raise CatalogError(path, "", "kinds", sorted(kinds), f"no hosts for registry type{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
                           "add each type a stack may list (egress/registries.py accepts it)")
    return RegistryKinds(kinds={name: kinds[name] for name in REGISTRY_TYPES})


def check_registry_citations(kinds: RegistryKinds, sources: Mapping[str, object] | Iterable[str], path: Path) -> None:
    """Every citation names a source of ``matrix/sources.yaml``."""
    known = set(sources)
    for name, kind in kinds.kinds.items():
        for where, citation in ((f"kind '{name}'", kind.citation), *((f"kind '{name}', host '{h.id}'", h.citation) for h in kind.hosts)):
            if citation.source not in known:
                raise CatalogError(path, where, "citation.source", citation.source, "unknown source",
                                   f"add it to matrix/sources.yaml or use one of: {', '.join(sorted(known))}")


def sample_values(kind: str) -> dict[str, str]:
    return {**SAMPLES, "region": ECR_SAMPLE_REGION} if kind == "ecr" else dict(SAMPLES)


def _check_kind(name: str, kind: RegistryKind, raw: Any, path: Path, where: str) -> RegistryKind:
    scalars, repetitions = SCALARS[name], EACH.get(name, {})
    for field, template in (("id", kind.id), ("label", kind.label)):
        _check_placeholders(template, scalars, path, where, field)
    hosts = []
    raw_hosts = raw.get("hosts") if isinstance(raw, dict) else None
    for index, host in enumerate(kind.hosts):
        raw_host = raw_hosts[index] if isinstance(raw_hosts, list) and index < len(raw_hosts) else None
        here = _where(raw_host, f"{where}, hosts[{index}] '{host.id}'")
        if host.each is not None and host.each not in repetitions:
            raise CatalogError(path, here, "each", host.each, f"type {name} has no '{host.each}' list",
                               f"use one of: {', '.join(repetitions) or '(none: drop each)'}")
        allowed = scalars | (repetitions[host.each] if host.each else frozenset())
        for field in ("id", "destination", "purpose", "broad", "note"):
            _check_placeholders(getattr(host, field) or "", allowed, path, here, field)
        if host.each and not set(names_in(host.id)) & repetitions[host.each]:
            raise CatalogError(path, here, "id", host.id, f"one host per {host.each} needs the {host.each} in its id",
                               f"write e.g. '{host.id}-{{{sorted(repetitions[host.each])[0]}}}'")
        extra = host.when.set_fields() - CONDITIONS.get(name, frozenset())
        if extra:
            raise CatalogError(path, here, f"when.{sorted(extra)[0]}", getattr(host.when, sorted(extra)[0]), f"type {name} has no such condition",
                               f"use only: {', '.join(sorted(CONDITIONS.get(name, ()))) or '(none: drop when)'}")
        hosts.append(_check_host(name, host, allowed, path, here))
    for i, first in enumerate(hosts):
        for second in hosts[i + 1:]:
            if first.id == second.id and not _exclusive(first.when, second.when):
                raise CatalogError(path, where, "hosts.id", second.id, "two hosts with this id can apply to the same registry",
                                   "give each host its own id, or conditions (when) that exclude each other")
    return kind.model_copy(update={"hosts": tuple(hosts)})


def _check_host(name: str, host: HostTemplate, allowed: frozenset[str], path: Path, where: str) -> HostTemplate:
    samples = sample_values(name)
    destination = substitute(host.destination, samples)
    try:
        kind = parse_destination(destination, None)
    except AddressError as exc:
        raise CatalogError(path, where, "destination", host.destination, exc.problem, exc.fix) from None
    if kind not in ("fqdn", "wildcard", "ip"):
        raise CatalogError(path, where, "destination", host.destination, f"a registry host is a host name or IP, not a {kind}",
                           "write the host only (no scheme, path or port: ports go in ports)")
    if kind == "wildcard" and not host.broad:
        raise CatalogError(path, where, "broad", None, "a wildcard host is broader than the registry",
                           "say in broad why it is needed and how to narrow it")
    ports = host.ports or ((DEFAULT_PORTS[host.protocol],) if host.protocol in DEFAULT_PORTS else ())
    if not ports:
        raise CatalogError(path, where, "ports", [], f"protocol '{host.protocol}' has no default port", "list the ports")
    for index, item in enumerate(ports):
        if isinstance(item, str) and names_in(item):
            if item != f"{{{names_in(item)[0]}}}" or names_in(item)[0] not in allowed & {"port", "redirect_port"}:
                raise CatalogError(path, where, f"ports[{index}]", item, "not a port placeholder of this type",
                                   "use a port number or the type's port placeholder ({port}, {redirect_port})")
            continue
        try:
            parse_port(item)
        except AddressError as exc:
            raise CatalogError(path, where, f"ports[{index}]", item, exc.problem, exc.fix) from None
    return host.model_copy(update={"ports": tuple(ports)})


def _exclusive(first: HostConditions, second: HostConditions) -> bool:
    """Whether no registry can meet both conditions."""
    if first.clouds is not None and second.clouds is not None and not set(first.clouds) & set(second.clouds):
        return True
    return any(getattr(first, flag) is not None and getattr(second, flag) is not None and getattr(first, flag) != getattr(second, flag)
               for flag in ("data_endpoints", "regional_endpoints"))


def _check_placeholders(text: str, allowed: frozenset[str], path: Path, where: str, field: str) -> None:
    for name in names_in(text):
        if name not in allowed:
            raise CatalogError(path, where, field, text, f"placeholder '{{{name}}}' is not filled here",
                               f"use one of: {', '.join('{' + p + '}' for p in sorted(allowed)) or '(none)'}")
    rest = text
    for name in names_in(text):
        rest = rest.replace(f"{{{name}}}", "")
    if "{" in rest or "}" in rest:
        raise CatalogError(path, where, field, text, "unbalanced or malformed placeholder", "write placeholders as {name}")
