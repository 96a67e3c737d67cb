"""Checks every catalog entry passes, wherever it comes from: pydantic errors as one clear error, destinations, ports."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, ValidationError

from ..addresses import AddressError, parse_destination, parse_port, classify
from ..errors import CatalogError
from ..models import DEFAULT_PORTS
from ..placeholders import PLACEHOLDER, PLACEHOLDERS, names_in, with_samples
from ..profile_messages import choices_of, explain
from ..suggest import did_you_mean


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
            allowed = _allowed_fields(model, error["loc"])
            raise CatalogError(file, where, field, value, "unknown field",
                               did_you_mean(str(error["loc"][-1]), allowed, listing="remove it or use one of")) from None
        if kind == "missing":
            raise CatalogError(file, where, field, None, "required field is missing", f"add '{field.rsplit('.', 1)[-1]}'") from None
        if kind == "literal_error":
            raise CatalogError(file, where, field, value, "not an allowed value", did_you_mean(value, choices_of(error))) from None
        if kind == "string_pattern_mismatch":
            raise CatalogError(file, where, field, value, "not a valid identifier",
                               "use lower-case letters, digits and inner '-' (a stable slug)") from None
        if kind == "string_type" and (written := _written(value)) is not None:  # YAML built a date, null, boolean or number
            raise CatalogError(file, where, field, written[0], f"not text: YAML reads it as {written[1]}",
                               f"quote it: '{written[0]}'" if value is not None else "write the text, quoted") from None
        problem, fix = explain(field, error)  # the library's wording ("Input should be a valid tuple") in ours
        raise CatalogError(file, where, field, value, problem, fix) from None


def _written(value: Any) -> tuple[str, str] | None:
    """(the value as it is written in the file, what YAML read it as) for a plain scalar YAML built as something other
    than text; shown as written, never as the Python object ('datetime.date(2026, 1, 1)')."""
    import datetime

    if value is None:
        return "null", "no value (null, '~' or nothing)"
    if isinstance(value, bool):
        return str(value).lower(), "true or false"
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" "), "a date and time"
    if isinstance(value, datetime.date):
        return value.isoformat(), "a date"
    if isinstance(value, (int, float)):
        return str(value), "a number"
    return None


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


def _with_default_ports(raw: dict[str, Any]) -> dict[str, Any]:
    if not raw.get("ports") and raw.get("protocol") in DEFAULT_PORTS:
        raw = dict(raw, ports=[DEFAULT_PORTS[raw["protocol"]]])
    return raw
