"""A stack's own catalogs, added to the vendor matrix: its entries, its registries, and the catalogs it lists.

The catalogs a stack lists (``egress-matrix:catalogs``) are files or folders in the vendor matrix's own schema (platform
and sources files), or catalogs an installed package ships (an entry point in group ``egress_matrix.catalogs``). Each
is validated like the vendor matrix, with an approval (owner, reference, optional expiry) in place of a citation, and
its entry ids are namespaced by the catalog (``payments/stripe-api``) so none can shadow a vendor entry. An entry past
its expiry stops resolving; one that expires within ``EXPIRY_WARNING_DAYS`` is reported ahead of the date.
"""
from __future__ import annotations

import datetime
import importlib.metadata
import importlib.resources
import os
import types
from pathlib import Path
from typing import Any, Optional

from ..errors import CatalogError, ProfileError, ResolveError
from ..gcpause import paused_gc
from ..models import DEFAULT_PORTS, ROLES, Catalog, Entry
from ..own_settings import parse_catalog_ref
from ..profile import PROJECT, Profile
from ..registries import registry_entries
from .vendor import Collector
from .yaml_lines import read_yaml

ENTRY_POINT_GROUP = "egress_matrix.catalogs"
EXPIRY_WARNING_DAYS = 30
# The stack's own catalogs come first, always in this order, so a listed catalog's Azure band never moves when the stack
# gains its first entry or registry.
STACK_CATALOGS = ("stack", "registries")


def today() -> datetime.date:
    """The date expiries are judged on: EGRESS_TODAY (YYYY-MM-DD) when set (tests, a reproducible CI run), else today."""
    text = os.environ.get("EGRESS_TODAY")
    if text:
        try:
            return datetime.date.fromisoformat(text)
        except ValueError:
            raise ProfileError("EGRESS_TODAY", "", "EGRESS_TODAY", text, "not a date", "write YYYY-MM-DD or unset it") from None
    return datetime.date.today()


def stack_catalog(vendor: Catalog, profile: Profile, root: Path, stack_file: str | Path = "stack", stack: str = "",
                  on: Optional[datetime.date] = None) -> Catalog:
    """The vendor catalog plus the stack's own catalogs, with expired own entries left out (``Catalog.expired``)."""
    with paused_gc():
        collector = Collector(base=vendor)
        collector.own.extend(STACK_CATALOGS)
        _add_stack_entries(collector, profile, stack_file, stack)
        for ref in profile.catalogs:
            for path in _catalog_files(ref, root, stack_file, stack):
                collector.add(path, read_yaml(path))
        catalog = _with_registries(collector.finish(), profile, stack_file, stack)
        prefix = f"{root.resolve()}/"  # where an entry is written, as a path in the project (the reader's view)
        catalog = catalog.model_copy(update={"origins": {key: value.removeprefix(prefix) for key, value in catalog.origins.items()}})
        _check_sources(catalog, vendor, profile, stack_file, stack)
        return _without_retired(_without_expired(catalog, on or today()), profile, on or today())


def _add_stack_entries(collector: Collector, profile: Profile, stack_file: str | Path, stack: str) -> None:
    for index, item in enumerate(profile.entries):
        field = f"config.{PROJECT}:entries[{index}]"
        raw: dict[str, Any] = {
            "id": item.id, "destination": item.destination, "protocol": item.protocol, "role": item.role, "level": item.level,
            "purpose": item.purpose, "approval": {"owner": item.owner, "reference": item.reference, "expires": item.expires},
            "when": item.when, "alternatives": item.alternatives,
        }
        raw["ports"] = item.ports or ((DEFAULT_PORTS[item.protocol],) if item.protocol in DEFAULT_PORTS else ())
        raw.update({key: value for key, value in (("feature", item.feature), ("broad", item.broad), ("note", item.note)) if value is not None})
        try:
            collector.add_entry(raw, Path(str(stack_file)), f"stack '{stack}', entries[{index}] '{item.id}'", "stack")
        except CatalogError as exc:
            raise ProfileError(exc.file, exc.where, f"{field}.{exc.field}", exc.value, exc.problem, exc.fix) from None


def _with_registries(catalog: Catalog, profile: Profile, stack_file: str | Path, stack: str) -> Catalog:
    """The entries of the stack's private registries (egress/registries.py), as the own catalog 'registries'."""
    if not profile.container_registries:
        return catalog
    if catalog.registry_kinds is None:
        raise ProfileError(stack_file, f"stack '{stack}'", f"config.{PROJECT}:containerRegistries", "(set)",
                           "the matrix has no registry-kinds file, so no registry can be expanded", "restore matrix/registry-kinds.yaml")
    try:
        entries = registry_entries(catalog.registry_kinds, profile.container_registries, profile.cloud)
    except ResolveError as exc:
        raise ResolveError(f"{stack_file}: stack '{stack}': {exc}") from None
    origins = {entry.id: f"{stack_file}: stack '{stack}', containerRegistries" for entry in entries}
    return catalog.model_copy(update={
        "entries": tuple(sorted((*catalog.entries, *entries), key=lambda e: e.id)),
        "platforms": dict(sorted({**catalog.platforms, "registries": "private container registries"}.items())),
        "origins": {**catalog.origins, **origins},
    })


def _catalog_files(text: str, root: Path, stack_file: str | Path, stack: str) -> list[Path]:
    ref = parse_catalog_ref(text)

    def fail(problem: str, fix: str) -> ProfileError:
        return ProfileError(stack_file, f"stack '{stack}'", f"config.{PROJECT}:catalogs", text, problem, fix)

    if ref.kind == "package":
        path = _package_catalog(ref.value, fail)
    else:
        path = root / ref.value
        if not path.exists():
            raise fail(f"no such file or folder under the project root {root}", "create it, or correct the path (relative to the folder of Pulumi.yaml)")
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("*.yaml") if p.is_file())
    if not files:
        raise fail(f"{path} holds no .yaml catalog files", "add platform files (schema: 1, kind: platform) to it, or remove the entry")
    return files


def _package_catalog(name: str, fail) -> Path:
    found = [ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not found:
        known = sorted({ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)})
        raise fail(f"no installed package provides catalog '{name}' (entry point group {ENTRY_POINT_GROUP})",
                   f"install the package into the project's virtualenv and the policy pack's (policy/venv), or use one of: "
                   f"{', '.join(known) or '(none installed)'}")
    entry_point = found[0]
    try:
        value = entry_point.load()
        if callable(value):
            value = value()
        if isinstance(value, types.ModuleType):
            value = importlib.resources.files(value)
        path = Path(str(value))
    except Exception as exc:  # a third-party package's import: any failure is its defect, reported as one clear error
        raise fail(f"entry point {entry_point.value} of package {entry_point.dist.name if entry_point.dist else '?'} fails to load: "
                   f"{type(exc).__name__}: {exc}", "fix or reinstall the package") from None
    if not path.exists():
        raise fail(f"entry point {entry_point.value} names {path}, which does not exist",
                   "the entry point must name a catalog file or folder (a path, a callable returning one, or a package holding the files)")
    return path


def _check_sources(catalog: Catalog, vendor: Catalog, profile: Profile, stack_file: str | Path, stack: str) -> None:
    """Every own entry's role is a role or one of the stack's source groups."""
    vendor_ids = {e.id for e in vendor.entries}
    for entry in catalog.entries:
        if entry.id in vendor_ids or entry.role in ROLES or entry.role in profile.source_groups:
            continue
        groups = ", ".join(sorted(profile.source_groups)) or "(none)"
        written = catalog.origins.get(entry.id, "")
        if written and entry.catalog not in STACK_CATALOGS:  # an entry of a listed catalog: name its file and line
            file, _, where = written.partition(": ")
            raise ProfileError(file, where, "role", entry.role,
                               f"neither a role nor a source group of stack '{stack}' (groups: {groups}), which lists this catalog",
                               f"add it to egress-matrix:sourceGroups in {stack_file} with its CIDRs (e.g. {entry.role}: [10.0.0.0/24]), "
                               f"or use a role: {', '.join(ROLES)}")
        raise ProfileError(stack_file, f"stack '{stack}'", f"entry {entry.id} role", entry.role,
                           f"neither a role nor a source group of this stack (groups: {groups})",
                           f"add it to egress-matrix:sourceGroups with its CIDRs (e.g. {entry.role}: [10.0.0.0/24]), or use a role: {', '.join(ROLES)}")


def _without_expired(catalog: Catalog, on: datetime.date) -> Catalog:
    expired = tuple(e.id for e in catalog.entries if e.approval and e.approval.expires and e.approval.expires <= on)
    if not expired:
        return catalog
    return catalog.model_copy(update={"entries": tuple(e for e in catalog.entries if e.id not in expired), "expired": expired})


def _without_retired(catalog: Catalog, profile: Profile, on: datetime.date) -> Catalog:
    """Vendor rows stop resolving on the date the vendor retires them; a feature left with no row for the stack is named,
    and the stack's rows that retired or retire within EXPIRY_WARNING_DAYS are listed for the commands to warn about."""
    from ..resolve import applies  # the resolver builds on the catalog; imported here, where a stack is at hand

    retired = tuple(e.id for e in catalog.entries if e.retires and e.retires.date <= on)
    soon = on + datetime.timedelta(days=EXPIRY_WARNING_DAYS)
    retirements = tuple((e.id, e.retires.date) for e in catalog.entries
                        if e.retires and e.retires.date <= soon and applies(e.model_copy(update={"retires": None}), profile))
    if not retired:
        return catalog.model_copy(update={"retirements": retirements}) if retirements else catalog
    gone = set(retired)

    def rows(feature: str) -> list[Entry]:  # the feature's rows for this stack's platforms and cloud
        return [e for e in catalog.entries if e.feature == feature and e.platform in profile.platforms
                and (e.variant is None or e.variant == profile.cloud)]
    features = tuple(f for f in profile.features if rows(f) and all(e.id in gone for e in rows(f)))
    return catalog.model_copy(update={"entries": tuple(e for e in catalog.entries if e.id not in gone), "retired": retired,
                                      "retired_features": features, "retirements": retirements})


def expiry_notices(catalog: Catalog, on: Optional[datetime.date] = None) -> list[str]:
    """Warnings for own entries that expired (no longer resolved) or expire within EXPIRY_WARNING_DAYS."""
    on = on or today()
    notices = [f"own entry {entry_id} has expired and is no longer allowed: renew its approval (a new 'expires') or remove it"
               for entry_id in catalog.expired]
    notices += [f"feature {feature}: the vendor has retired every row it brings for this stack, so it allows nothing any more: "
                f"remove it from egress-matrix:features" for feature in catalog.retired_features]
    for entry_id, date in catalog.retirements:
        if date <= on:
            notices.append(f"vendor row {entry_id} retired on {date.isoformat()} and is no longer allowed (docs/MATRIX.md, Retired rows)")
        else:
            notices.append(f"vendor row {entry_id} retires on {date.isoformat()} ({(date - on).days} days): from then on it is no longer "
                           "allowed (what it allows goes in the next update)")
    for entry in catalog.entries:
        expires = entry.approval.expires if entry.approval else None
        if expires and (expires - on).days <= EXPIRY_WARNING_DAYS:
            notices.append(f"own entry {entry.id} expires on {expires.isoformat()} ({(expires - on).days} days; "
                           f"{entry.approval.describe()}): after that it is no longer allowed; renew the approval or remove it")
    return notices
