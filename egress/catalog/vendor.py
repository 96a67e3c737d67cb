"""The vendor matrix (``matrix/*.yaml``): every file validated, collected into one Catalog.

Every file starts with ``schema: 1`` and a ``kind``:

- ``platform``         one platform's entries (``platform``, ``title``, ``features``, ``defaults``, ``entries``)
- ``sources``          the documents entries cite
- ``expansions``       the further hosts a registry pull or a download really touches
- ``azure-locations``  Azure locations per cloud, with the service-tag region name where it differs
- ``openshift-noproxy`` the cluster-network-operator's automatic noProxy entries

Errors name the file, the entry (with its line), the field and the value, and say how to fix it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from ..addresses import classify, parse_url
from ..citations import URL_FIX, public_url_problem
from ..errors import CatalogError
from ..gcpause import paused_gc
from ..models import DEFAULT_PORTS, ROLES, AllowlistExport, AzureLocation, Catalog, Citation, Entry, FeatureNeeds, HostExpansion, NoProxyRule, Source
from ..placeholders import PLACEHOLDERS, names_in, with_samples
from ..redact import credentials_path, entry_credentials_problem, shown_with_credentials
from ..suggest import did_you_mean
from .checks import _validate, _where, _with_default_ports, check_destination, check_ports
from .yaml_lines import read_yaml

SCHEMA_VERSION = 1
FILE_KINDS = ("platform", "sources", "expansions", "azure-locations", "openshift-noproxy", "registry-kinds")
OWN_KINDS = ("platform", "sources")  # what an own catalog's files may be
# Own catalogs the stack itself makes: its entries (egress-matrix:entries) and its registries (containerRegistries).
RESERVED_CATALOGS = {"stack": "own entries (egress-matrix:entries)", "registries": "container registries (egress-matrix:containerRegistries)"}
AZURE_VENDOR_BANDS = 20  # bands 0-19 are the vendor platforms' (their files say which); own catalogs follow
MAX_AZURE_BAND = 646  # azurePriorityBase (at least 400) + 100 x band stays within Azure's 65,000


def _header(document: Any, path: Path) -> str:
    if not isinstance(document, dict):
        raise CatalogError(path, "", "(file)", type(document).__name__, "a matrix file is a mapping",
                           "start the file with 'schema: 1' and 'kind: ...'")
    if document.get("schema") != SCHEMA_VERSION:
        raise CatalogError(path, "", "schema", document.get("schema"), "unsupported schema version",
                           f"write 'schema: {SCHEMA_VERSION}'")
    kind = document.get("kind")
    if kind not in FILE_KINDS:
        raise CatalogError(path, "", "kind", kind, "unknown file kind", f"use one of {', '.join(FILE_KINDS)}")
    return kind


class Collector:
    """Collects validated files into one Catalog. ``base``: the vendor catalog an own catalog is added to (own mode:
    only platform and sources files; entry ids namespaced by the catalog; an approval in place of a citation; nothing
    of the base may be redefined)."""

    def __init__(self, base: Optional[Catalog] = None) -> None:
        self.base = base
        self.sources: dict[str, Source] = dict(base.sources) if base else {}
        self.features: dict[str, tuple[str, Path]] = {n: (d, Path("matrix")) for n, d in base.features.items()} if base else {}
        self.feature_needs: dict[str, tuple[FeatureNeeds, Path, str]] = {n: (f, Path("matrix"), f"feature '{n}'") for n, f in base.feature_needs.items()} if base else {}
        self.platforms: dict[str, tuple[str, Path]] = {n: (t, Path("matrix")) for n, t in base.platforms.items()} if base else {}
        self.azure_bands: dict[str, tuple[int, Path]] = {}
        self.own: list[str] = []
        self.registry_kinds: Optional[tuple[Any, Path]] = None  # (egress.registry_kinds.RegistryKinds, its file)
        self.origins: dict[str, str] = {}  # own entry id -> where it was written (for errors and explain)
        self.entries: list[tuple[Entry, Path, str]] = []
        self.expansions: list[tuple[HostExpansion, Path, str]] = []
        self.azure_locations: dict[str, tuple[AzureLocation, ...]] = {}
        self.azure_citations: list[tuple[Citation, Path, str]] = []
        self.entry_files: dict[str, tuple[Path, str]] = {e.id: (Path("matrix"), "") for e in base.entries} if base else {}
        self.noproxy: dict[str, list[tuple[NoProxyRule, Path, str]]] = {"rules": [], "removed": []}
        self.exports: list[tuple[AllowlistExport, Path, str]] = []

    def add(self, path: Path, document: dict[str, Any]) -> None:
        kind = _header(document, path)
        if self.base is not None and kind not in OWN_KINDS:
            raise CatalogError(path, "", "kind", kind, "not a kind an own catalog may hold", f"use one of {', '.join(OWN_KINDS)}")
        allowed = {
            "platform": {"schema", "kind", "platform", "title", "features", "defaults", "entries", "azure_band"} | ({"exports"} if self.base is None else set()),
            "sources": {"schema", "kind", "sources"},
            "expansions": {"schema", "kind", "expansions"},
            "azure-locations": {"schema", "kind", "citations", "locations"},
            "openshift-noproxy": {"schema", "kind", "rules", "removed"},
            "registry-kinds": {"schema", "kind", "kinds"},
        }[kind]
        for key in document:
            if key not in allowed:
                raise CatalogError(path, "", str(key), document[key], f"unknown top-level field for kind '{kind}'",
                                   f"remove it or use one of: {', '.join(sorted(allowed))}")
        getattr(self, "_add_" + kind.replace("-", "_"))(path, document)

    def _add_sources(self, path: Path, document: dict[str, Any]) -> None:
        for source_id, raw in (document.get("sources") or {}).items():
            where = _where(raw, f"source '{source_id}'")
            if source_id in self.sources:
                vendor = self.base is not None and source_id in self.base.sources
                raise CatalogError(path, where, "sources", source_id, "a source of the vendor matrix has this id" if vendor else "duplicate source id",
                                   "give the source an id of its own (e.g. prefixed with your catalog's name)" if vendor else "give each source one id")
            # outputs cite the address: a missing or private one would leave readers with a name they cannot open
            problem = public_url_problem(raw.get("url")) if isinstance(raw, dict) else None
            if problem:
                raise CatalogError(path, where, "url", raw.get("url"), problem, URL_FIX)
            self.sources[source_id] = _validate(Source, raw, path, where)

    def _add_platform(self, path: Path, document: dict[str, Any]) -> None:
        platform = document.get("platform")
        if not isinstance(platform, str) or not platform:
            raise CatalogError(path, "", "platform", platform, "missing platform name", "write 'platform: <name>'")
        if platform in self.platforms:
            vendor = self.base is not None and platform in self.base.platforms
            raise CatalogError(path, "", "platform", platform,
                               "the name of a vendor platform: an own catalog may not shadow it" if vendor else f"platform already defined in {self.platforms[platform][1]}",
                               "name the catalog after its owner, e.g. 'payments'" if vendor else "keep one file per platform")
        if self.base is not None and platform in RESERVED_CATALOGS:
            raise CatalogError(path, "", "platform", platform, f"'{platform}' is reserved for the stack's {RESERVED_CATALOGS[platform]}",
                               "name the catalog after its owner, e.g. 'payments'")
        if path.stem != platform:
            raise CatalogError(path, "", "platform", platform, f"file name '{path.name}' does not match the platform",
                               f"rename the file to '{platform}.yaml'")
        self.platforms[platform] = (str(document.get("title") or platform), path)
        if self.base is not None:
            self.own.append(platform)
        if "azure_band" in document:
            self._azure_band(path, platform, document["azure_band"])
        for name, description in (document.get("features") or {}).items():
            if name in self.features:
                raise CatalogError(path, "", f"features.{name}", name, f"feature already declared in {self.features[name][1]}",
                                   "declare each feature once")
            self.features[name] = (self._feature(path, name, description), path)
        for index, raw in enumerate(document.get("exports") or []):
            where = _where(raw, f"exports[{index}] '{raw.get('id') if isinstance(raw, dict) else ''}'")
            export = _validate(AllowlistExport, {**raw, "platform": platform} if isinstance(raw, dict) else raw, path, where)
            if (export.values_from is None) == (not export.values):
                raise CatalogError(path, where, "values", list(export.values), "an export needs exactly one of 'values_from' and 'values'",
                                   "write values_from: <stack setting>, or values: [the addresses the document lists]")
            for i, value in enumerate(export.values):
                check_destination(value, None, path, where, f"values[{i}]")
                if classify(value) not in ("ip", "cidr"):
                    raise CatalogError(path, where, f"values[{i}]", value, "not an IP address or CIDR", "list addresses, e.g. 192.0.2.0/24")
            check_ports(export.ports, path, where, "ports")
            if export.id in {e.id for e, _, _ in self.exports}:
                raise CatalogError(path, where, "id", export.id, "duplicate export id", "give every export a unique id")
            self.exports.append((export, path, where))
        defaults = dict(document.get("defaults") or {})
        entries = document.get("entries")
        if not isinstance(entries, list) or not entries:
            raise CatalogError(path, "", "entries", entries, "a platform needs a list of entries", "add 'entries:'")
        for index, raw in enumerate(entries):
            if not isinstance(raw, dict):
                raise CatalogError(path, f"entries[{index}]", "(entry)", raw, "an entry is a mapping", "write 'id: ...' and the other fields")
            label = f"entry '{raw.get('id')}'" if raw.get("id") else f"entries[{index}]"
            self.add_entry(_with_default_ports({**defaults, **raw}), path, _where(raw, label), platform)

    def add_entry(self, raw: dict[str, Any], path: Path, where: str, platform: str) -> None:
        """Validate one entry of ``platform`` (a vendor platform, an own catalog, or the stack's own 'stack' catalog)."""
        if platform not in self.platforms:
            self.platforms[platform] = (platform, path)
        entry = self._entry({**raw, "platform": platform}, path, where, platform)
        if entry.id in self.entry_files:
            other, other_where = self.entry_files[entry.id]
            raise CatalogError(path, where, "id", entry.id, f"duplicate id (also in {other}{', ' + other_where if other_where else ''})",
                               "give every entry a unique id")
        self.entry_files[entry.id] = (path, where)
        self.entries.append((self._check_entry(entry, path, where), path, where))
        if self.base is not None:
            self.origins[entry.id] = f"{path}: {where}"

    def _entry(self, merged: dict[str, Any], path: Path, where: str, platform: str) -> Entry:
        """Validate one entry: a vendor entry cites a document; an own entry is approved and namespaced by its catalog."""
        secret = credentials_path({k: v for k, v in merged.items() if k != "platform"})
        if secret:  # before any check quotes a field: a token or password in a destination or a reference URL (never shown)
            value = merged
            for part in secret.replace("[", ".[").split("."):
                value = value[int(part[1:-1])] if part.startswith("[") else value[part]
            raise CatalogError(path, where, secret, shown_with_credentials(value), *entry_credentials_problem("the field"))
        for forbidden in ("catalog",) + (("approval",) if self.base is None else ()):
            if forbidden in merged:
                fix = ("the vendor matrix cites documents: own entries go in a catalog the stack lists (egress-matrix:catalogs)"
                       if forbidden == "approval" else "remove it: the catalog is the file's platform")
                raise CatalogError(path, where, forbidden, merged[forbidden], "not a field of this file's entries", fix)
        if self.base is None:
            if isinstance(merged.get("id"), str) and "/" in merged["id"]:
                raise CatalogError(path, where, "id", merged["id"], "a vendor entry's id has no '/' (own entries' ids are namespaced with one)",
                                   "use lower-case letters, digits and inner '-'")
            entry = _validate(Entry, merged, path, where)
            if entry.citation is None:
                raise CatalogError(path, where, "citation", None, "required field is missing", "add 'citation: {source: <id>, section: <heading>}'")
            if entry.role not in ROLES:
                raise CatalogError(path, where, "role", entry.role, "not an allowed value",
                                   f"{did_you_mean(entry.role, ROLES)} (source groups belong to a stack's own entries)")
            return entry
        raw_id = merged.get("id")
        if isinstance(raw_id, str) and "/" in raw_id:
            raise CatalogError(path, where, "id", raw_id, "an own entry's id is namespaced by its catalog already",
                               f"write the id without '/': it becomes {platform}/<id>")
        entry = _validate(Entry, {**merged, "id": f"{platform}/{raw_id}" if isinstance(raw_id, str) else raw_id, "catalog": platform}, path, where)
        if entry.approval is None:
            raise CatalogError(path, where, "approval", None, "an own entry needs an approval (it has no vendor document behind it)",
                               "add 'approval: {owner: <team>, reference: <ticket or URL>}' (and 'expires: YYYY-MM-DD' if it is temporary)")
        return entry

    def _feature(self, path: Path, name: str, spec: Any) -> str:
        """A feature's title: ``name: title``, or ``name: {title: ..., needs: [features it brings along], citation: ...}``."""
        if not isinstance(spec, dict):
            return str(spec)
        where = _where(spec, f"feature '{name}'")
        unknown = sorted(set(spec) - {"title", "needs", "citation"})
        if unknown:
            raise CatalogError(path, where, str(unknown[0]), spec[unknown[0]], "unknown field of a feature", "use title, needs and citation")
        title = spec.get("title")
        if not isinstance(title, str) or not title.strip():
            raise CatalogError(path, where, "title", title, "a feature written as a mapping needs its title", "write 'title: <what it is>'")
        needs = spec.get("needs")
        if "needs" in spec or "citation" in spec:
            if not isinstance(needs, list) or not needs or not all(isinstance(n, str) and n for n in needs) or len(set(needs)) != len(needs):
                raise CatalogError(path, where, "needs", needs, "not a list of feature names, each once",
                                   "write 'needs: [<feature>, ...]' (the features this one cannot run without)")
            feature_needs = _validate(FeatureNeeds, {"needs": needs, "citation": spec.get("citation")}, path, where)
            if feature_needs.citation is None and self.base is None:
                raise CatalogError(path, where, "citation", None, "the vendor matrix cites where a feature is said to need another",
                                   "add 'citation: {source: <id>, section: <heading>}'")
            self.feature_needs[name] = (feature_needs, path, where)
        return title

    def _check_feature_needs(self) -> None:
        """Every feature a feature needs is declared, and no feature needs itself, however indirectly."""
        vendor = set(self.base.features) if self.base is not None else set()
        for name, (spec, path, where) in sorted(self.feature_needs.items()):
            for need in spec.needs:
                if name not in vendor and need in vendor:
                    # a vendor feature turned on (or off, through not_features) where no reviewer of the stack looks
                    raise CatalogError(path, where, "needs", need, "an own catalog's feature may need only own features, not the vendor "
                                       "feature", f"turn '{need}' on in the stack's egress-matrix:features, where a reviewer sees it")
                if need not in self.features:
                    raise CatalogError(path, where, "needs", need, "unknown feature",
                                       did_you_mean(need, self.features, listing="declare it under 'features:' of a platform file, or use one of"))
        needs = {n: spec.needs for n, (spec, _, _) in self.feature_needs.items()}
        for name, (_, path, where) in sorted(self.feature_needs.items()):
            cycle = _needs_cycle([name], needs)
            if cycle:
                raise CatalogError(path, where, "needs", " -> ".join(cycle), "features need each other in a cycle",
                                   "drop one of these needs: a feature brings along what it needs, so none can need itself")

    def _azure_band(self, path: Path, platform: str, band: Any) -> None:
        """A vendor platform's band (0-19), or an own catalog's pinned band (20 and up), so that no other catalog or file
        moves its priority."""
        low, high = (0, AZURE_VENDOR_BANDS - 1) if self.base is None else (AZURE_VENDOR_BANDS, MAX_AZURE_BAND)
        if not isinstance(band, int) or isinstance(band, bool) or not low <= band <= high:
            what = "a vendor band" if self.base is None else "an own catalog's band"
            raise CatalogError(path, "", "azure_band", band, f"not {what}", f"use a whole number {low}-{high}")
        for other, (used, other_path) in self.azure_bands.items():
            if used == band:
                raise CatalogError(path, "", "azure_band", band, f"band {band} is platform {other}'s ({other_path})", "give each platform its own band")
        self.azure_bands[platform] = (band, path)

    def _check_entry(self, entry: Entry, path: Path, where: str) -> Entry:
        kind = check_destination(entry.destination, entry.kind, path, where, "destination")
        if kind == "url":
            scheme = parse_url(with_samples(entry.destination)).scheme
            if scheme and scheme != entry.protocol:
                raise CatalogError(path, where, "protocol", entry.protocol, f"the URL says {scheme}",
                                   f"set protocol: {scheme}")
        if not entry.ports:
            raise CatalogError(path, where, "ports", [], f"protocol '{entry.protocol}' has no default port", "list the ports")
        check_ports(entry.ports, path, where, "ports")
        for index, alternative in enumerate(entry.alternatives):
            field = f"alternatives[{index}]"
            check_destination(alternative.destination, alternative.kind, path, where, field + ".destination")
            if alternative.ports is not None:
                check_ports(alternative.ports, path, where, field + ".ports")
        if entry.documented_as and not entry.differs_because:
            raise CatalogError(path, where, "differs_because", None, "documented_as needs the reason the matrix differs",
                               "say in differs_because why the matrix does not write what the document says")
        written = {entry.destination, *(alt.destination for alt in entry.alternatives)}
        for index, documented in enumerate(entry.documented_as):
            field = f"documented_as[{index}]"
            if documented.destination in written and (documented.protocol or entry.protocol) == entry.protocol:
                raise CatalogError(path, where, field + ".destination", documented.destination, "the matrix already says this",
                                   "list only what the document says differently, or drop documented_as")
            if documented.ports is not None:
                check_ports(documented.ports, path, where, field + ".ports")
        for index, image in enumerate(entry.images):
            host = image.split("/", 1)[0]
            if "/" not in image or host != with_samples(entry.destination):
                raise CatalogError(path, where, f"images[{index}]", image, f"an image must live on the entry's registry '{entry.destination}'",
                                   "move the image to the entry for its registry")
        return entry.model_copy(update={"kind": kind}) if entry.kind is None else entry

    def _add_expansions(self, path: Path, document: dict[str, Any]) -> None:
        seen: set[str] = set()
        for index, raw in enumerate(document.get("expansions") or []):
            where = _where(raw, f"expansion '{raw.get('host') if isinstance(raw, dict) else index}'")
            expansion = _validate(HostExpansion, raw, path, where)
            if expansion.host in seen:
                raise CatalogError(path, where, "host", expansion.host, "duplicate host", "merge the two expansions")
            seen.add(expansion.host)
            check_destination(expansion.host, "fqdn", path, where, "host")
            implied = []
            for i, host in enumerate(expansion.implies):
                host = host.model_copy(update={"ports": host.ports or (DEFAULT_PORTS.get(host.protocol),)})
                kind = check_destination(host.destination, host.kind, path, where, f"implies[{i}].destination")
                check_ports(host.ports, path, where, f"implies[{i}].ports")
                implied.append(host.model_copy(update={"kind": kind}))
            self.expansions.append((expansion.model_copy(update={"implies": tuple(implied)}), path, where))

    def _add_registry_kinds(self, path: Path, document: dict[str, Any]) -> None:
        from ..registry_kinds import load_registry_kinds  # it builds on these checks: imported here, not at the top
        if self.registry_kinds is not None:
            raise CatalogError(path, "", "kind", "registry-kinds", f"registry kinds already defined in {self.registry_kinds[1]}",
                               "keep one registry-kinds file")
        self.registry_kinds = (load_registry_kinds(path, document), path)

    def _add_openshift_noproxy(self, path: Path, document: dict[str, Any]) -> None:
        seen: set[str] = set()
        for section in ("rules", "removed"):
            for index, raw in enumerate(document.get(section) or []):
                where = _where(raw, f"{section}[{index}] '{raw.get('id') if isinstance(raw, dict) else ''}'")
                rule = _validate(NoProxyRule, raw, path, where)
                if rule.id in seen:
                    raise CatalogError(path, where, "id", rule.id, "duplicate id", "give every rule a unique id")
                seen.add(rule.id)
                if (rule.value is None) == (rule.from_ is None):
                    raise CatalogError(path, where, "value", rule.value, "a rule needs exactly one of 'value' and 'from'",
                                       "write either value: <entry> or from: machineCidrs|serviceCidrs|podCidrs")
                for name in names_in(rule.value or ""):
                    if name not in PLACEHOLDERS:
                        raise CatalogError(path, where, "value", rule.value, f"unknown placeholder '{{{name}}}'",
                                           f"use one of {', '.join('{' + p + '}' for p in sorted(PLACEHOLDERS))}")
                self.noproxy[section].append((rule, path, where))

    def _add_azure_locations(self, path: Path, document: dict[str, Any]) -> None:
        for index, raw in enumerate(document.get("citations") or []):
            self.azure_citations.append((_validate(Citation, raw, path, _where(raw, f"citations[{index}]")), path, f"citations[{index}]"))
        for cloud, raw_list in (document.get("locations") or {}).items():
            locations = []
            for index, raw in enumerate(raw_list or []):
                locations.append(_validate(AzureLocation, raw, path, _where(raw, f"locations.{cloud}[{index}]")))
            names = [loc.name for loc in locations]
            if len(names) != len(set(names)):
                duplicate = next(n for n in names if names.count(n) > 1)
                raise CatalogError(path, f"locations.{cloud}", "name", duplicate, "duplicate location", "list each location once")
            self.azure_locations[cloud] = tuple(sorted(locations, key=lambda loc: loc.name))

    def finish(self) -> Catalog:
        citations = [(e.citation, p, w) for e, p, w in self.entries if e.citation]
        citations += [(e.retires.citation, p, w) for e, p, w in self.entries if e.retires]
        citations += [(e.direct.citation, p, w) for e, p, w in self.entries if e.direct]
        citations += [(e.no_tls_inspection.citation, p, w) for e, p, w in self.entries if e.no_tls_inspection]
        citations += [(x.citation, p, w) for x, p, w in self.expansions]
        citations += [(h.citation, p, w) for x, p, w in self.expansions for h in x.implies]
        citations += self.azure_citations
        citations += [(spec.citation, p, w) for spec, p, w in self.feature_needs.values() if spec.citation]
        citations += [(r.citation, p, w) for section in self.noproxy.values() for r, p, w in section]
        citations += [(e.citation, p, w) for e, p, w in self.exports]
        for citation, path, where in citations:
            if citation.source not in self.sources:
                home = "a sources file of the catalog" if self.base is not None else "matrix/sources.yaml"
                raise CatalogError(path, where, "citation.source", citation.source, "unknown source",
                                   did_you_mean(citation.source, self.sources, listing=f"add it to {home} or use one of"))
        for entry, path, where in self.entries:
            for feature in (entry.feature, *entry.when.features, *entry.when.not_features):
                if feature is not None and feature not in self.features:
                    raise CatalogError(path, where, "feature", feature, "unknown feature",
                                       did_you_mean(feature, self.features, listing="declare it under 'features:' of a platform file, or use one of"))
        self._check_feature_needs()
        feature_needs = {name: spec for name, (spec, _, _) in sorted(self.feature_needs.items())}
        if self.base is not None:
            return self.base.model_copy(update={
                "sources": dict(sorted(self.sources.items())),
                "features": {name: desc for name, (desc, _) in sorted(self.features.items())},
                "feature_needs": feature_needs,
                "platforms": {name: title for name, (title, _) in sorted(self.platforms.items())},
                "entries": tuple(sorted((*self.base.entries, *(e for e, _, _ in self.entries)), key=lambda e: e.id)),
                "own": (*self.base.own, *self.own),
                "azure_bands": dict(sorted({**self.base.azure_bands, **{n: b for n, (b, _) in self.azure_bands.items()}}.items())),
                "origins": {**self.base.origins, **self.origins},
            })
        if self.registry_kinds is not None:
            from ..registry_kinds import check_registry_citations

            check_registry_citations(self.registry_kinds[0], self.sources, self.registry_kinds[1])
        return Catalog(
            registry_kinds=self.registry_kinds[0] if self.registry_kinds else None,
            azure_bands={name: band for name, (band, _) in sorted(self.azure_bands.items())},
            sources=dict(sorted(self.sources.items())),
            features={name: desc for name, (desc, _) in sorted(self.features.items())},
            feature_needs=feature_needs,
            platforms={name: title for name, (title, _) in sorted(self.platforms.items())},
            entries=tuple(sorted((e for e, _, _ in self.entries), key=lambda e: e.id)),
            expansions=tuple(sorted((x for x, _, _ in self.expansions), key=lambda x: x.host)),
            azure_locations=dict(sorted(self.azure_locations.items())),
            azure_locations_citation=tuple(c for c, _, _ in self.azure_citations),
            exports=tuple(sorted((e for e, _, _ in self.exports), key=lambda e: e.id)),
            noproxy_rules=tuple(r for r, _, _ in self.noproxy["rules"]),
            noproxy_removed=tuple(r for r, _, _ in self.noproxy["removed"]),
        )


def _needs_cycle(trail: list[str], needs: dict[str, tuple[str, ...]]) -> list[str]:
    """A path of needs from ``trail[0]`` back to it (``[a, b, a]``), or [] when there is none."""
    for need in needs.get(trail[-1], ()):
        if need == trail[0]:
            return [*trail, need]
        if need not in trail:
            found = _needs_cycle([*trail, need], needs)
            if found:
                return found
    return []


def load_catalog(matrix_dir: Path) -> Catalog:
    """Load every ``*.yaml`` under ``matrix_dir`` (sorted by name) into one validated Catalog."""
    if not matrix_dir.is_dir():
        raise CatalogError(matrix_dir, "", "(directory)", str(matrix_dir), "matrix directory not found",
                           "run inside an egress-matrix project or pass --project")
    collector = Collector()
    files = sorted(matrix_dir.glob("*.yaml"))
    if not files:
        raise CatalogError(matrix_dir, "", "(directory)", str(matrix_dir), "no matrix files", "add matrix/<platform>.yaml files")
    with paused_gc():
        for path in files:
            collector.add(path, read_yaml(path))
        return collector.finish()
