"""A stack's private container registries, expanded to the hosts a pull really touches (egress-matrix:containerRegistries).

Each registry the stack lists becomes own entries (platform and catalog ``registries``), one per host the type's data in
``matrix/registry-kinds.yaml`` gives for it: cited from the vendor's documentation, and approved by the stack's team
(owner, reference, optional expiry). Ids derive from the registry itself (``registries/acr-contosoacr-data-westeurope``),
never from list positions, and the output does not depend on the order of registries, regions or redirect hosts.
"""
from __future__ import annotations

import re

from .addresses import parse_destination
from .errors import ResolveError
from .models import Approval, Entry
from .placeholders import substitute
from .registry_kinds import HostConditions, RegistryKinds, check_registry_citations, load_registry_kinds
from .registry_spec import ContainerRegistry, check_registry_list, split_address

__all__ = ["ContainerRegistry", "RegistryKinds", "check_registry_citations", "check_registry_list", "load_registry_kinds",
           "registry_entries"]

SETTING = "egress-matrix:containerRegistries"


def registry_entries(kinds: RegistryKinds, registries: tuple[ContainerRegistry, ...], cloud: str | None) -> tuple[Entry, ...]:
    """The own entries of the stack's registries, sorted by id. ``cloud`` is the stack's Azure cloud (for an ACR that
    does not name its own)."""
    entries: dict[str, Entry] = {}
    for registry in registries:
        for entry in _registry_entries(kinds, registry, cloud):
            if entry.id in entries:
                raise ResolveError(f"{SETTING}: {registry.label}: gives entry id '{entry.id}' twice (another registry gives it too). "
                                   "Fix: list each registry once")
            entries[entry.id] = entry
    return tuple(entries[key] for key in sorted(entries))


def _registry_entries(kinds: RegistryKinds, registry: ContainerRegistry, stack_cloud: str | None) -> list[Entry]:
    kind = kinds.kinds[registry.type]
    scalars, each = _values(registry)
    cloud = registry.cloud or stack_cloud or "azure-public"
    approval = Approval(owner=registry.owner, reference=registry.reference, expires=registry.expires)
    registry_id, label = _slug(substitute(kind.id, scalars)), substitute(kind.label, scalars)
    entries, matched = [], set()
    for host in kind.hosts:
        if not _applies(host.when, registry, cloud):
            continue
        matched |= {flag for flag in ("data_endpoints", "regional_endpoints") if getattr(host.when, flag)}
        for item in (each.get(host.each, []) if host.each else [{}]):
            values = {**scalars, **item}
            destination = substitute(host.destination, values)
            entries.append(Entry(
                id=f"registries/{registry_id}-{_slug(substitute(host.id, values))}", platform="registries", catalog="registries",
                level="required", role=registry.role, destination=destination, kind=parse_destination(destination, None),
                protocol=host.protocol, ports=tuple(int(substitute(str(port), values)) for port in host.ports),
                purpose=f"{label}: {substitute(host.purpose, values)}", citation=host.citation, approval=approval,
                broad=substitute(host.broad, values) if host.broad else None, note=host.note))
    for flag, key in (("data_endpoints", "dataEndpoints"), ("regional_endpoints", "regionalEndpoints")):
        if getattr(registry, flag) and flag not in matched:
            raise ResolveError(f"{SETTING}: {registry.label}: field '{key}' = true: the cited documents give no {key} host for {cloud}. "
                               f"Fix: set {key}: false, or list the hosts as stack entries with your own approval")
    if not entries:
        raise ResolveError(f"{SETTING}: {registry.label}: matrix/registry-kinds.yaml gives no host for it in {cloud}. "
                           "Fix: list its hosts as type generic with your own approval")
    return entries


def _values(registry: ContainerRegistry) -> tuple[dict[str, str], dict[str, list[dict[str, str]]]]:
    """The placeholders a registry fills (egress/registry_kinds.py SCALARS and EACH); lists sorted, so order is irrelevant."""
    if registry.type == "acr":
        return {"registry_name": registry.name or ""}, {"region": [{"region": region} for region in sorted(registry.regions)]}
    if registry.type == "ecr":
        return {"account": registry.account or "", "region": registry.region or ""}, {}
    if registry.type == "gar":
        return {"location": registry.location or ""}, {}
    if registry.type == "generic":
        host, port = split_address(registry.host or "", "host")
        redirects = []
        for address in sorted(registry.redirect_hosts):
            redirect_host, redirect_port = split_address(address, "redirectHosts")
            redirects.append({"redirect_address": address, "redirect_host": redirect_host, "redirect_port": str(redirect_port)})
        return {"address": registry.host or "", "host": host, "port": str(port)}, {"redirect": redirects}
    return {}, {}


def _applies(when: HostConditions, registry: ContainerRegistry, cloud: str) -> bool:
    if when.clouds is not None and cloud not in when.clouds:
        return False
    return all(getattr(when, flag) is None or getattr(when, flag) == getattr(registry, flag) for flag in ("data_endpoints", "regional_endpoints"))


def _slug(text: str) -> str:
    """A stable id part: lower case, every run of other characters one '-' ('registry.example.com:5000' -> 'registry-example-com-5000')."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
