"""Offline schema checks for the Kubernetes manifests egress-matrix generates.

Built-in kinds go to kubernetes-validate's bundled *strict* schemas. Custom
resources (OpenShift Proxy, Kubermatic Cluster/Seed) are checked against the
CRDs copied verbatim into tests/data/crds (sources in its README), made strict
the way an API server with strict field validation would treat them.

Every failure raises AssertionError naming the object, the field path and the
reason; a kind we have no schema for is a failure, never a silent pass.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
from pathlib import Path
from typing import Any, Iterable, Iterator

import jsonschema
import kubernetes_validate
import yaml

# Newest version bundled by kubernetes-validate 1.37.0 (its latest_version()).
# Pinned rather than computed so a package upgrade cannot move it silently;
# test_k8s_schemas checks it is still bundled.
KUBERNETES_VERSION = "1.37.0"

CRD_DIR = Path(__file__).resolve().parent / "data" / "crds"

# libyaml parses the 300 kB Kubermatic CRDs ~20x faster than pure Python.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_MAX_REPORTED = 5


# --------------------------------------------------------------------- shared


def _describe(doc: dict) -> str:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    return f"{doc.get('kind', '?')}/{meta.get('name', '?')}"


def _dotted(path: Iterable[Any]) -> str:
    return ".".join(str(p) for p in path) or "<root>"


def _check_header(doc: Any) -> None:
    """apiVersion, kind and metadata.name: both schema sets let these slip
    (kubernetes-validate passes a ConfigMap without metadata, or with
    `name: null`; it raises KeyError without apiVersion)."""
    if not isinstance(doc, dict):
        raise AssertionError(f"manifest must be a mapping, got {type(doc).__name__}")
    for key in ("apiVersion", "kind"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise AssertionError(f"{_describe(doc)}: {key}: must be a non-empty string")
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        raise AssertionError(f"{_describe(doc)}: metadata: must be a mapping")
    if not isinstance(meta.get("name"), str) or not meta["name"]:
        raise AssertionError(f"{_describe(doc)}: metadata.name: must be a non-empty string")
    if "namespace" in meta and not isinstance(meta["namespace"], str):
        raise AssertionError(f"{_describe(doc)}: metadata.namespace: must be a string")


def _fail(doc: dict, errors: list[jsonschema.ValidationError], prefix: tuple[str, ...] = ()) -> None:
    errors = sorted(errors, key=lambda e: [str(p) for p in e.absolute_path])
    lines = [f"  {_dotted((*prefix, *e.absolute_path))}: {e.message[:300]}" for e in errors[:_MAX_REPORTED]]
    if len(errors) > _MAX_REPORTED:
        lines.append(f"  ... and {len(errors) - _MAX_REPORTED} more")
    raise AssertionError(f"{_describe(doc)} is invalid:\n" + "\n".join(lines))


# ----------------------------------------------------------------- core kinds


def validate_core(doc: dict) -> None:
    """Validate a built-in kind with kubernetes-validate, strict (unknown fields fail).

    It reports only the first error. Not caught by its schemas: enum values
    (`protocol: TCPX`), CIDR syntax, DNS-1123 names; assert those separately.
    """
    _check_header(doc)
    try:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        raise AssertionError(f"{_describe(doc)}: {_dotted(exc.path)}: {exc.message}") from None
    except (kubernetes_validate.SchemaNotFoundError, kubernetes_validate.InvalidSchemaError) as exc:
        # The CLI only WARNs here and exits 0; for us it is a failure.
        raise AssertionError(f"{_describe(doc)}: no usable schema: {exc.message}") from None


# ---------------------------------------------------------- custom resources


@functools.cache
def _crd_schemas() -> dict[tuple[str, str, str], dict]:
    """(group, version, kind) -> openAPIV3Schema for every served CRD version."""
    found: dict[tuple[str, str, str], dict] = {}
    for path in sorted(CRD_DIR.glob("*.yaml")):
        for crd in yaml.load_all(path.read_text(encoding="utf-8"), Loader=_Loader):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            spec = crd["spec"]
            for ver in spec["versions"]:
                if not ver.get("served", True):
                    continue
                key = (spec["group"], ver["name"], spec["names"]["kind"])
                if key in found:
                    raise AssertionError(f"two CRDs in {CRD_DIR} define {key}")
                found[key] = ver["schema"]["openAPIV3Schema"]
    return found


@functools.cache
def _crd_groups() -> frozenset[str]:
    return frozenset(group for group, _, _ in _crd_schemas())


# Root metadata is checked against ObjectMeta separately, so open it here.
_ANY_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _strict(schema: dict) -> dict:
    """Copy of a structural schema with unknown fields rejected and the
    Kubernetes extensions jsonschema does not know turned into plain keywords."""
    s = dict(schema)
    if s.get("x-kubernetes-embedded-resource"):
        s["properties"] = {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": _ANY_OBJECT,
            **s.get("properties", {}),
        }
    if "properties" in s:
        s["properties"] = {k: _strict(v) for k, v in s["properties"].items()}
    # The API server prunes (or with strict field validation rejects) fields a
    # schema does not declare, including in empty structs such as
    # `bringyourown: {type: object}`.
    if (
        ("properties" in s or s.get("type") == "object")
        and "additionalProperties" not in s
        and not s.get("x-kubernetes-preserve-unknown-fields")
    ):
        s["additionalProperties"] = False
    if isinstance(s.get("additionalProperties"), dict):
        s["additionalProperties"] = _strict(s["additionalProperties"])
    if isinstance(s.get("items"), dict):
        s["items"] = _strict(s["items"])
    for key in ("allOf", "anyOf", "oneOf"):
        if key in s:
            s[key] = [_strict(sub) for sub in s[key]]
    if isinstance(s.get("not"), dict):
        s["not"] = _strict(s["not"])
    # controller-gen also emits anyOf[integer,string]; older CRDs may carry only the flag.
    if s.get("x-kubernetes-int-or-string") and "anyOf" not in s:
        s["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if s.get("x-kubernetes-list-type") == "set":
        s["uniqueItems"] = True
    if s.get("nullable"):  # OpenAPI 3.0 keyword; Draft 4 would reject null
        s = {"anyOf": [{"type": "null"}, {k: v for k, v in s.items() if k != "nullable"}]}
    return s


def _cel_not_checked(validator, rules, instance, schema) -> Iterator[jsonschema.ValidationError]:
    # CEL rules cannot be evaluated offline; a document reaching one must not
    # pass silently.
    yield jsonschema.ValidationError(
        "x-kubernetes-validations (CEL) not checked offline: "
        + "; ".join(r.get("rule", "?") for r in rules)
    )


def _list_map_keys(validator, keys, instance, schema) -> Iterator[jsonschema.ValidationError]:
    # Server-side apply merges list-type=map items by these keys, so each item
    # needs them (unless defaulted) even in a patch where `required` is relaxed.
    if not validator.is_type(instance, "array"):
        return
    item_props = (schema.get("items") or {}).get("properties", {})
    for index, item in enumerate(instance):
        if not isinstance(item, dict):
            continue
        for key in keys:
            if key not in item and "default" not in item_props.get(key, {}):
                yield jsonschema.ValidationError(
                    f"list-map key {key!r} missing in item", path=[index]
                )


# OpenAPI v3.0 schema objects follow JSON Schema draft 4/5 semantics (e.g.
# boolean exclusiveMinimum), so Draft 4 is the faithful dialect, not 2020-12.
_CRDValidator = jsonschema.validators.extend(
    jsonschema.Draft4Validator,
    {"x-kubernetes-validations": _cel_not_checked, "x-kubernetes-list-map-keys": _list_map_keys},
)


@functools.cache
def _crd_validator(group: str, version: str, kind: str) -> jsonschema.protocols.Validator:
    try:
        schema = _crd_schemas()[(group, version, kind)]
    except KeyError:
        known = ", ".join(f"{g}/{v} {k}" for g, v, k in sorted(_crd_schemas()))
        raise AssertionError(
            f"no CRD for {group}/{version} {kind} in {CRD_DIR} (have: {known})"
        ) from None
    schema = dict(schema)
    # Accept apiVersion/kind/metadata at the root even if a CRD omits them;
    # metadata itself is checked against ObjectMeta in validate_custom.
    schema["properties"] = {
        **schema.get("properties", {}),
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": _ANY_OBJECT,
    }
    strict = _strict(schema)
    _CRDValidator.check_schema(strict)
    return _CRDValidator(strict)


@functools.cache
def _object_meta_validator() -> jsonschema.protocols.Validator:
    """Strict ObjectMeta from kubernetes-validate's definitions: catches e.g.
    `metadata.namepsace` or non-string labels on custom resources too."""
    path = (
        importlib.resources.files("kubernetes_validate")
        / "kubernetes-json-schema"
        / f"v{KUBERNETES_VERSION}-local-strict"
        / "_definitions.json"
    )
    defs = json.loads(path.read_text(encoding="utf-8"))
    schema = {
        "$schema": defs["$schema"],
        "$defs": defs["$defs"],
        "$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    }
    return jsonschema.Draft202012Validator(schema)


def _split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def _under(path: tuple[str, ...], owned: list[tuple[str, ...]]) -> bool:
    return any(path[: len(o)] == o for o in owned)


def _lookup(doc: Any, path: tuple[str, ...]) -> bool:
    for part in path:
        if not isinstance(doc, dict) or part not in doc:
            return False
        doc = doc[part]
    return True


def validate_custom(doc: dict, *, patch: bool = False, owned: Iterable[str] = ()) -> None:
    """Validate a custom resource against its CRD in tests/data/crds, strictly.

    patch=True: `doc` is a server-side-apply patch of an existing object, so
    `required` is not enforced, except at or below the dotted instance paths in
    `owned` (e.g. "spec.apiServerAllowedIPRanges", "spec.datacenters.dc1.node"),
    which the patch sets as a whole. Each owned path must be present in `doc`.
    """
    owned_paths = [tuple(p.split(".")) for p in owned]
    if owned_paths and not patch:
        raise ValueError("owned= only applies with patch=True")
    _check_header(doc)
    for path in owned_paths:
        if not _lookup(doc, path):
            raise AssertionError(f"{_describe(doc)}: owned path {'.'.join(path)} is not in the patch")

    group, version = _split_api_version(doc["apiVersion"])
    errors = [
        err
        for err in _crd_validator(group, version, doc["kind"]).iter_errors(doc)
        if not (
            patch
            and err.validator == "required"
            and not _under(tuple(str(p) for p in err.absolute_path), owned_paths)
        )
    ]
    if errors:
        _fail(doc, errors)
    meta_errors = list(_object_meta_validator().iter_errors(doc["metadata"]))
    if meta_errors:
        _fail(doc, meta_errors, prefix=("metadata",))


# ------------------------------------------------------------------- dispatch


def validate(doc: dict, *, patch: bool = False, owned: Iterable[str] = ()) -> None:
    """Validate one manifest: CRD-backed groups against tests/data/crds,
    everything else against kubernetes-validate (which fails on unknown kinds)."""
    _check_header(doc)
    group, _ = _split_api_version(doc["apiVersion"])
    if group in _crd_groups():
        validate_custom(doc, patch=patch, owned=owned)
        return
    if patch or owned:
        raise ValueError(f"patch mode is only supported for CRD-backed kinds, not {doc['apiVersion']}")
    validate_core(doc)


def validate_yaml_file(path: str | Path) -> int:
    """Validate every document of a (multi-document) YAML file; return how many.

    An empty file fails: it would otherwise pass without checking anything."""
    docs = [d for d in yaml.load_all(Path(path).read_text(encoding="utf-8"), Loader=_Loader) if d is not None]
    if not docs:
        raise AssertionError(f"{path}: no YAML documents")
    for index, doc in enumerate(docs):
        try:
            validate(doc)
        except AssertionError as exc:
            raise AssertionError(f"{path} document {index}: {exc}") from None
    return len(docs)
