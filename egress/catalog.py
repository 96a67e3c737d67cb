"""Load and validate the required-endpoint matrix (``matrix/*.yaml``).

Every file starts with ``schema: 1`` and a ``kind``:

- ``platform``         one platform's entries (``platform``, ``title``, ``features``, ``defaults``, ``entries``)
- ``sources``          the documents entries cite
- ``expansions``       the further hosts a registry pull or a download really touches
- ``azure-locations``  Azure locations per cloud, with the service-tag region name where it differs

Errors name the file, the entry (with its line), the field and the value, and say how to fix it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import BaseModel, ValidationError

from .addresses import AddressError, classify, parse_destination, parse_port, parse_url
from .errors import CatalogError
from .gcpause import paused_gc
from .models import DEFAULT_PORTS, AllowlistExport, AzureLocation, Catalog, Citation, Entry, HostExpansion, NoProxyRule, Source
from .placeholders import PLACEHOLDER, PLACEHOLDERS, names_in, with_samples

SCHEMA_VERSION = 1
FILE_KINDS = ("platform", "sources", "expansions", "azure-locations", "openshift-noproxy")


class _LineDict(dict):
    line: int = 0


# libyaml's loader is ~10x faster and keeps node marks, so line numbers survive; fall back when absent.
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """SafeLoader whose mappings remember the line they start on (for error messages)."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _LineDict:
    loader.flatten_mapping(node)
    mapping = _LineDict()
    mapping.line = node.start_mark.line + 1
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in mapping:
            raise CatalogError(loader.file_name, f"line {key_node.start_mark.line + 1}", str(key), "", "duplicate key",
                               "keep one of the two")
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(path: Path) -> Any:
    try:
        loader = _LineLoader(path.read_text(encoding="utf-8"))
        loader.file_name = str(path)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise CatalogError(path, where, "(file)", "", f"not valid YAML: {problem}", "correct the YAML syntax") from None


def _where(raw: Any, label: str) -> str:
    line = getattr(raw, "line", 0)
    return f"{label} (line {line})" if line else label


def _validate(model: type[BaseModel], raw: Any, file: Path, where: str, prefix: str = "") -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = ".".join(str(part) for part in error["loc"])
        field = f"{prefix}{loc}" if loc else prefix.rstrip(".") or "(entry)"
        value = error.get("input")
        kind = error["type"]
        if kind == "extra_forbidden":
            allowed = ", ".join(_allowed_fields(model, error["loc"]))
            raise CatalogError(file, where, field, value, "unknown field", f"remove it or use one of: {allowed}") from None
        if kind == "missing":
            raise CatalogError(file, where, field, None, "required field is missing", f"add '{field.rsplit('.', 1)[-1]}'") from None
        if kind == "literal_error":
            raise CatalogError(file, where, field, value, "not an allowed value", f"use one of {error['ctx']['expected']}") from None
        if kind == "string_pattern_mismatch":
            raise CatalogError(file, where, field, value, "not a valid identifier",
                               "use lower-case letters, digits and inner '-' (a stable slug)") from None
        raise CatalogError(file, where, field, value, error["msg"], "correct the value") from None


def _allowed_fields(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = current.model_fields.get(part) if hasattr(current, "model_fields") else None
        if field is None:
            break
        current = _model_in(field.annotation)
        if current is None:
            return []
    return sorted(current.model_fields) if hasattr(current, "model_fields") else []


def _model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None


# ---------------------------------------------------------------------------------------------- destinations
def check_destination(text: str, kind: str | None, file: Path, where: str, field: str) -> str:
    """Validate a destination (placeholders allowed) and return its kind."""
    for name in names_in(text):
        if name not in PLACEHOLDERS:
            raise CatalogError(file, where, field, text, f"unknown placeholder '{{{name}}}'",
                               f"use one of {', '.join('{' + p + '}' for p in sorted(PLACEHOLDERS))}")
    if "{" in PLACEHOLDER.sub("", text) or "}" in PLACEHOLDER.sub("", text):
        raise CatalogError(file, where, field, text, "unbalanced or malformed placeholder", "write placeholders as {name}")
    sample = with_samples(text)
    try:
        if kind is None and sample != text:
            kind = classify(sample)
        return parse_destination(sample, kind)  # type: ignore[arg-type]
    except AddressError as exc:
        raise CatalogError(file, where, field, text, exc.problem, exc.fix) from None


def check_ports(items: Iterable[Any], file: Path, where: str, field: str) -> None:
    for index, item in enumerate(items):
        if isinstance(item, str) and names_in(item):
            name = names_in(item)[0]
            placeholder = PLACEHOLDERS.get(name)
            if placeholder is None or placeholder.kind != "port" or item != f"{{{name}}}":
                raise CatalogError(file, where, f"{field}[{index}]", item, "not a port placeholder",
                                   "use a port, a range 'a-b' or a port placeholder such as {ibm_etcd_port}")
            continue
        try:
            parse_port(item)
        except AddressError as exc:
            raise CatalogError(file, where, f"{field}[{index}]", item, exc.problem, exc.fix) from None


def _with_default_ports(raw: dict[str, Any]) -> dict[str, Any]:
    if not raw.get("ports") and raw.get("protocol") in DEFAULT_PORTS:
        raw = dict(raw, ports=[DEFAULT_PORTS[raw["protocol"]]])
    return raw


# ---------------------------------------------------------------------------------------------- files
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


class _Collector:
    def __init__(self) -> None:
        self.sources: dict[str, Source] = {}
        self.features: dict[str, tuple[str, Path]] = {}
        self.platforms: dict[str, tuple[str, Path]] = {}
        self.entries: list[tuple[Entry, Path, str]] = []
        self.expansions: list[tuple[HostExpansion, Path, str]] = []
        self.azure_locations: dict[str, tuple[AzureLocation, ...]] = {}
        self.azure_citations: list[tuple[Citation, Path, str]] = []
        self.entry_files: dict[str, tuple[Path, str]] = {}
        self.noproxy: dict[str, list[tuple[NoProxyRule, Path, str]]] = {"rules": [], "removed": []}
        self.exports: list[tuple[AllowlistExport, Path, str]] = []

    def add(self, path: Path, document: dict[str, Any]) -> None:
        kind = _header(document, path)
        allowed = {
            "platform": {"schema", "kind", "platform", "title", "features", "defaults", "entries", "exports"},
            "sources": {"schema", "kind", "sources"},
            "expansions": {"schema", "kind", "expansions"},
            "azure-locations": {"schema", "kind", "citations", "locations"},
            "openshift-noproxy": {"schema", "kind", "rules", "removed"},
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
                raise CatalogError(path, where, "sources", source_id, "duplicate source id", "give each source one id")
            self.sources[source_id] = _validate(Source, raw, path, where)

    def _add_platform(self, path: Path, document: dict[str, Any]) -> None:
        platform = document.get("platform")
        if not isinstance(platform, str) or not platform:
            raise CatalogError(path, "", "platform", platform, "missing platform name", "write 'platform: <name>'")
        if platform in self.platforms:
            raise CatalogError(path, "", "platform", platform, f"platform already defined in {self.platforms[platform][1]}",
                               "keep one file per platform")
        if path.stem != platform:
            raise CatalogError(path, "", "platform", platform, f"file name '{path.name}' does not match the platform",
                               f"rename the file to '{platform}.yaml'")
        self.platforms[platform] = (str(document.get("title") or platform), path)
        for name, description in (document.get("features") or {}).items():
            if name in self.features:
                raise CatalogError(path, "", f"features.{name}", name, f"feature already declared in {self.features[name][1]}",
                                   "declare each feature once")
            self.features[name] = (str(description), path)
        for index, raw in enumerate(document.get("exports") or []):
            where = _where(raw, f"exports[{index}] '{raw.get('id') if isinstance(raw, dict) else ''}'")
            export = _validate(AllowlistExport, {**raw, "platform": platform} if isinstance(raw, dict) else raw, path, where)
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
            where = _where(raw, label)
            merged = _with_default_ports({**defaults, **raw, "platform": platform})
            entry = _validate(Entry, merged, path, where)
            if entry.id in self.entry_files:
                other, _ = self.entry_files[entry.id]
                raise CatalogError(path, where, "id", entry.id, f"duplicate id (also in {other})", "give every entry a unique id")
            self.entry_files[entry.id] = (path, where)
            self.entries.append((self._check_entry(entry, path, where), path, where))

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
        citations = [(e.citation, p, w) for e, p, w in self.entries]
        citations += [(e.retires.citation, p, w) for e, p, w in self.entries if e.retires]
        citations += [(x.citation, p, w) for x, p, w in self.expansions]
        citations += [(h.citation, p, w) for x, p, w in self.expansions for h in x.implies]
        citations += self.azure_citations
        citations += [(r.citation, p, w) for section in self.noproxy.values() for r, p, w in section]
        citations += [(e.citation, p, w) for e, p, w in self.exports]
        for citation, path, where in citations:
            if citation.source not in self.sources:
                raise CatalogError(path, where, "citation.source", citation.source, "unknown source",
                                   f"add it to matrix/sources.yaml or use one of: {', '.join(sorted(self.sources))}")
        for entry, path, where in self.entries:
            for feature in (entry.feature, *entry.when.features):
                if feature is not None and feature not in self.features:
                    raise CatalogError(path, where, "feature", feature, "unknown feature",
                                       f"declare it under 'features:' of a platform file, or use one of: {', '.join(sorted(self.features))}")
        return Catalog(
            sources=dict(sorted(self.sources.items())),
            features={name: desc for name, (desc, _) in sorted(self.features.items())},
            platforms={name: title for name, (title, _) in sorted(self.platforms.items())},
            entries=tuple(sorted((e for e, _, _ in self.entries), key=lambda e: e.id)),
            expansions=tuple(sorted((x for x, _, _ in self.expansions), key=lambda x: x.host)),
            azure_locations=dict(sorted(self.azure_locations.items())),
            azure_locations_citation=tuple(c for c, _, _ in self.azure_citations),
            exports=tuple(sorted((e for e, _, _ in self.exports), key=lambda e: e.id)),
            noproxy_rules=tuple(r for r, _, _ in self.noproxy["rules"]),
            noproxy_removed=tuple(r for r, _, _ in self.noproxy["removed"]),
        )


def load_catalog(matrix_dir: Path) -> Catalog:
    """Load every ``*.yaml`` under ``matrix_dir`` (sorted by name) into one validated Catalog."""
    if not matrix_dir.is_dir():
        raise CatalogError(matrix_dir, "", "(directory)", str(matrix_dir), "matrix directory not found",
                           "run inside an egress-matrix project or pass --project")
    collector = _Collector()
    files = sorted(matrix_dir.glob("*.yaml"))
    if not files:
        raise CatalogError(matrix_dir, "", "(directory)", str(matrix_dir), "no matrix files", "add matrix/<platform>.yaml files")
    with paused_gc():
        for path in files:
            collector.add(path, read_yaml(path))
        return collector.finish()


def export_entry(entry: Entry, catalog: Catalog) -> dict[str, Any]:
    """The JSON form of one unresolved entry (``egress catalog export``)."""
    source = catalog.sources[entry.citation.source]
    data: dict[str, Any] = {
        "id": entry.id,
        "platform": entry.platform,
        "variant": entry.variant,
        "feature": entry.feature,
        "level": entry.level,
        "role": entry.role,
        "destination": entry.destination,
        "kind": entry.kind,
        "protocol": entry.protocol,
        "ports": [_export_port(p) for p in entry.ports],
        "conditions": entry.when.model_dump(exclude_defaults=True, mode="json"),
        "alternatives": [
            {k: v for k, v in {
                "destination": alt.destination,
                "kind": alt.kind or classify(with_samples(alt.destination)),
                "protocol": alt.protocol or entry.protocol,
                "ports": [_export_port(p) for p in (alt.ports or entry.ports)],
                "note": alt.note,
            }.items() if v is not None}
            for alt in entry.alternatives
        ],
        "purpose": entry.purpose,
        "citation": {"doc": source.doc, "section": entry.citation.section},
    }
    if source.url:
        data["citation"]["url"] = source.url
    if entry.images:
        data["images"] = list(entry.images)
    if entry.note:
        data["note"] = entry.note
    if entry.documented_as:
        data["documented_as"] = [
            {"destination": d.destination, "protocol": d.protocol or entry.protocol,
             "ports": [_export_port(p) for p in (d.ports or entry.ports)]}
            for d in entry.documented_as
        ]
    if entry.differs_because:
        data["differs_because"] = entry.differs_because
    if entry.broad:
        data["broad"] = entry.broad
    if entry.retires:
        retire_source = catalog.sources[entry.retires.citation.source]
        data["retires"] = {"date": entry.retires.date.isoformat(),
                           "citation": {"doc": retire_source.doc, "section": entry.retires.citation.section}}
    return data


def _export_port(item: Any) -> Any:
    if isinstance(item, str) and names_in(item):
        return item
    return parse_port(item).export()
