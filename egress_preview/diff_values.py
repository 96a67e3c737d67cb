"""``egress diff``: the old and new values of the fields a change touches (pure).

A scalar shows inline (``"a" -> "b"``); a list, and a comma-separated noProxy string, as the items added and removed;
a list of named objects (containers, ports) field by field under each name; a PEM bundle as its certificates (subject
and SHA-256 fingerprint, never a private key's text); other multi-line text as the lines added and removed. Values are
compared whole (duplicates count) and kept whole in ``--format json``; only the Markdown line shortens a long value in the
middle, and prints a pair of similar long values as their delta (``diff_delta``). The snapshots already carry every secret as ``[secret]``
(``preview.snapshot`` masks the paths the program marked secret); a masked side is shown as the mask, and every value
shown is still passed through ``egress.redact`` (a URL's credentials, a key block), whatever the base's code did.

OpenShift's network operator writes the Proxy's ``status.noProxy`` from its ``spec.noProxy`` and the cluster's
networks; each side's program exports it (``openshiftStatusNoProxy``, computed by ``egress.noproxy.openshift_no_proxy``
as the operator computes it), so a change of ``spec.noProxy`` also shows what the nodes will really bypass.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from egress.redact import redact, redact_url

from .diff_delta import SHOWN, dangerous_first, dangerous_line, dangerous_path, delta, pairs, shorten  # noqa: F401 - SHOWN, shorten: the tests' names
from .diff_order import order_change, squid_orders

SECRET_MASK = "[secret]"  # as egress_preview.preview writes it (not imported: preview imports the pack and the program)
ITEMS = 12  # items (or lines) shown per side of one field
FIELDS = 30  # fields shown per resource; the rest are counted
DEPTH = 12
STATUS_OUTPUT = "openshiftStatusNoProxy"
PROXY_PATCH = "kubernetes:config.openshift.io/v1:ProxyPatch"
_MISSING = object()
_CERT = re.compile(r"-----BEGIN CERTIFICATE-----\s.*?-----END CERTIFICATE-----", re.S)


@dataclass(frozen=True)
class FieldChange:
    """One changed field: ``old``/``new`` are the whole display strings (redacted JSON; '' for a side where the field
    is absent); ``added`` and ``removed`` the items (or lines, or certificates) of a list-like value, whole, with their
    duplicates. ``line()`` shortens; ``json()`` never does."""
    path: str
    old: str = ""
    new: str = ""
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    what: str = "value"  # value | items | lines | certificates | added | removed
    note: str = ""
    moved: tuple[str, ...] = ()  # lines: the lines both sides have that moved ('ssl_bump splice all now before ssl_bump ...')

    def line(self) -> str:
        label = f"{self.path}{f' ({self.note})' if self.note else ''}"
        if self.what == "added":
            return f"+ {label}: {shorten(self.new)}"
        if self.what == "removed":
            return f"- {label}: {shorten(self.old)}"
        if self.what == "value":
            if shorten(self.old) == shorten(self.new):  # long values differing in the middle
                return f"~ {label}: {delta(self.old, self.new)}"
            return f"~ {label}: {shorten(self.old)} -> {shorten(self.new)}"
        paired, added, removed = pairs(dangerous_first(self.added), dangerous_first(self.removed))
        parts = [f"~{'; ~'.join(_few([delta(old, new) for old, new in paired]))}" if paired else "",
                 f"+{', '.join(_few([shorten(a) or '(empty line)' for a in added]))}" if added else "",
                 f"-{', '.join(_few([shorten(r) or '(empty line)' for r in removed]))}" if removed else "",
                 f"moved: {'; '.join(_few([shorten(m, SHOWN * 2) for m in dangerous_first(self.moved)]))}" if self.moved else ""]
        detail = "; ".join(filter(None, parts)) or "same items, new order"
        return f"~ {label}: {detail}"

    def dangerous(self, typ: str = "") -> bool:
        """Whether the change can widen what a firewall lets through (printed first when a limit cuts the rest); ``typ``:
        the resource's type (a Namespace's labels are selected by network policies)."""
        return dangerous_path(self.path, typ) or any(dangerous_line(item) for item in (*self.added, *self.removed, *self.moved))

    def json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "change": self.what}
        if self.what in ("items", "lines", "certificates"):
            out.update(added=list(self.added), removed=list(self.removed))
            if self.moved:
                out["moved"] = list(self.moved)
        else:
            out.update(old=self.old if self.what != "added" else None, new=self.new if self.what != "removed" else None)
        if self.note:
            out["note"] = self.note
        return out


def _few(items: Any) -> list[str]:
    return list(items[:ITEMS]) + ([f"... {len(items) - ITEMS} more"] if len(items) > ITEMS else [])


def _safe(text: str) -> str:
    """A string value with a URL's credentials masked (the whole value read as one URL, then as text)."""
    return redact(redact_url(text))


def show(value: Any) -> str:
    """One value as the diff shows it, whole: JSON, redacted; a PEM bundle by its certificates."""
    if value is _MISSING:
        return ""
    if value == SECRET_MASK:
        return SECRET_MASK
    if isinstance(value, str):
        return pem_summary(value) if "-----BEGIN" in value else json.dumps(_safe(value), ensure_ascii=False)
    return redact(json.dumps(value, ensure_ascii=False, sort_keys=True))


def certificates(text: str) -> list[str]:
    """Each certificate of a PEM bundle as 'CN=..., sha256 0123abcd...' (public material: subject and fingerprint)."""
    out = []
    for block in _CERT.findall(text):
        body = "".join(block.split("-----")[2].split())
        try:
            from cryptography import x509
            from cryptography.hazmat.primitives import hashes

            cert = x509.load_pem_x509_certificate(block.encode())
            subject = cert.subject.rfc4514_string()
            digest = cert.fingerprint(hashes.SHA256()).hex()
        except (ValueError, TypeError):
            digest = hashlib.sha256(body.encode()).hexdigest()
            subject = "(not parsable as X.509)"
        out.append(f"{shorten(_safe(subject), 48)}, sha256 {digest[:16]}")
    return out


def _other_blocks(text: str) -> list[str]:
    """The PEM blocks that are not certificates, counted, never quoted."""
    count = len(re.findall(r"-----BEGIN ", text)) - len(_CERT.findall(text))
    return [f"{count} PEM block(s) that are not certificates, not shown"] if count > 0 else []


def pem_summary(text: str) -> str:
    certs = certificates(text)
    summary = f"PEM, {len(certs)} certificate(s)" + "".join(f"; {other}" for other in _other_blocks(text))
    return summary + (f": {'; '.join(certs[:3])}{'; ...' if len(certs) > 3 else ''}" if certs else "")


def _is_comma_list(path: str) -> bool:
    """A field holding a comma-separated list: noProxy (OpenShift's spec and status, KKP's node.noProxy), NO_PROXY."""
    last = re.split(r"[.\[]", path)[-1]
    return re.sub(r"[^a-z]", "", last.lower()) == "noproxy"


def _item(value: Any) -> str:
    """A list item (or a line) as shown, whole: text as it is (redacted), anything else as JSON."""
    return _safe(value) if isinstance(value, str) and value != SECRET_MASK and "-----BEGIN" not in value else show(value)


def _key(value: Any) -> tuple[str, Any]:
    return type(value).__name__, value  # 1, 1.0 and True are one key in a dict; not here


def _items(old: list, new: list) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The items of ``new`` not in ``old`` and of ``old`` not in ``new``, compared raw and counted (a copy more or less
    is a change), in their own order; linear, a squid.conf has thousands of lines."""
    before, after = Counter(map(_key, old)), Counter(map(_key, new))
    return _extra(new, before), _extra(old, after)


def _extra(values: list, other: Counter) -> tuple[str, ...]:
    seen: Counter = Counter()
    out = []
    for value in values:
        seen[_key(value)] += 1
        if seen[_key(value)] > other[_key(value)]:
            out.append(_item(value))
    return tuple(out)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _named(values: list) -> Optional[dict[str, Any]]:
    """The items by their name (containers, rule collections) or key (an AWS rule group's ipSets: HOME_NET), when each
    has a distinct one."""
    for field_name in ("name", "key"):
        names = [v.get(field_name) for v in values if isinstance(v, dict)]
        if len(names) == len(values) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names):
            return {v[field_name]: v for v in values}
    return None


def changes(old: Any, new: Any, path: str = "", depth: int = DEPTH) -> list[FieldChange]:
    """Every changed field between two documents, as the diff prints them (sorted by path within each mapping)."""
    if old == new:
        return []
    if old is _MISSING and isinstance(new, dict) and new and depth:  # an added rule's sources and ports, each on its line
        return [c for key in sorted(new, key=str) for c in changes(_MISSING, new[key], f"{path}.{key}" if path else str(key), depth - 1)]
    if new is _MISSING and isinstance(old, dict) and old and depth:
        return [c for key in sorted(old, key=str) for c in changes(old[key], _MISSING, f"{path}.{key}" if path else str(key), depth - 1)]
    if old is _MISSING:
        return [FieldChange(path, new=show(new), what="added")]
    if new is _MISSING:
        return [FieldChange(path, old=show(old), what="removed")]
    if SECRET_MASK in (old, new):
        return [FieldChange(path, show(old), show(new))]
    if isinstance(old, dict) and isinstance(new, dict) and depth:
        out: list[FieldChange] = []
        for key in sorted(set(old) | set(new), key=str):
            out += changes(old.get(key, _MISSING), new.get(key, _MISSING), f"{path}.{key}" if path else str(key), depth - 1)
        return out
    if isinstance(old, list) and isinstance(new, list) and depth:
        if all(_scalar(v) for v in (*old, *new)):
            added, removed = _items(old, new)
            return [FieldChange(path, added=added, removed=removed, what="items")]
        before, after = _named(old), _named(new)
        if before is not None and after is not None:
            out = []
            for name in [*before, *(n for n in after if n not in before)]:
                out += changes(before.get(name, _MISSING), after.get(name, _MISSING), f"{path}[{name}]", depth - 1)
            return out
        if len(old) == len(new):
            return [c for i, (a, b) in enumerate(zip(old, new)) for c in changes(a, b, f"{path}[{i}]", depth - 1)]
    if isinstance(old, str) and isinstance(new, str):
        if "-----BEGIN" in old or "-----BEGIN" in new:
            before, after = certificates(old) + _other_blocks(old), certificates(new) + _other_blocks(new)
            added, removed = tuple(c for c in after if c not in before), tuple(c for c in before if c not in after)
            if added or removed:
                return [FieldChange(path, added=added, removed=removed, what="certificates")]
            return [FieldChange(path, pem_summary(old), pem_summary(new))]  # same certificates, other text around them
        if _is_comma_list(path):
            added, removed = _items([p for p in old.split(",") if p], [p for p in new.split(",") if p])
            return [FieldChange(path, added=added, removed=removed, what="items")]
        if "\n" in old or "\n" in new:
            added, removed = _items(old.splitlines(), new.splitlines())
            return [FieldChange(path, added=added, removed=removed, what="lines", moved=_moved(path, old, new))]
    return [FieldChange(path, show(old), show(new))]


def _moved(path: str, old: str, new: str) -> tuple[str, ...]:
    """The lines both sides have that moved, whatever was added or removed: in a squid.conf each directive's own lines
    (ssl_bump, never_direct: the first match decides), in other text all lines."""
    if path.endswith("squid.conf"):
        orders = squid_orders(old.splitlines(), new.splitlines())
    else:
        orders = [change for change in [order_change(old.splitlines(), new.splitlines(), "line order")] if change is not None]
    return tuple(_safe(move) for change in orders for move in change.moves())


def field_changes(old_props: dict, new_props: dict, skip: Iterable[str] = ()) -> list[FieldChange]:
    """The changed fields of a resource's inputs, leaving out the top-level fields in ``skip`` (shown as rules instead)."""
    left_out = set(skip)
    return changes({k: v for k, v in old_props.items() if k not in left_out}, {k: v for k, v in new_props.items() if k not in left_out})


def field_lines(found: list[FieldChange], typ: str = "") -> list[str]:
    """The Markdown lines of a resource's changed fields: the dangerous ones first, at most FIELDS, the rest counted."""
    ordered = [c for c in found if c.dangerous(typ)] + [c for c in found if not c.dangerous(typ)]
    lines = [c.line() for c in ordered[:FIELDS]]
    return lines + ([f"... {len(found) - FIELDS} more changed field(s) (egress diff --format json lists them all)"] if len(found) > FIELDS else [])


@dataclass
class OperatorResult:
    """What the platform computes from a changed resource: OpenShift's Proxy ``status.noProxy``."""
    resource: tuple[str, str] = ("", "")  # (type, name) of the Proxy patch, when either side has one
    change: Optional[FieldChange] = None
    spec_changed: bool = False
    unchanged_note: str = field(default="")

    def lines(self) -> list[str]:
        if self.change is not None:
            return [self.change.line()]
        return [self.unchanged_note] if self.unchanged_note else []


def operator_no_proxy(base: dict, head: dict) -> Optional[OperatorResult]:
    """The change of the Proxy's ``status.noProxy`` the operator will make, read from each side's own export."""
    old, new = (base.get("outputs") or {}).get(STATUS_OUTPUT), (head.get("outputs") or {}).get(STATUS_OUTPUT)
    if old is None and new is None or SECRET_MASK in (old, new):
        return None
    proxies = {(r["type"], r["name"]): r for side in (base, head) for r in side.get("resources") or () if r["type"] == PROXY_PATCH}
    key = next(iter(sorted(proxies)), ("", ""))
    spec = [((r.get("props") or {}).get("spec") or {}).get("noProxy") for side in (base, head)
            for r in side.get("resources") or () if (r["type"], r["name"]) == key]
    result = OperatorResult(key, spec_changed=len(spec) == 2 and spec[0] != spec[1])
    note = "the operator computes it from spec.noProxy and the cluster's networks"
    if old == new:
        if result.spec_changed:
            result.unchanged_note = f"= status.noProxy ({note}): unchanged, every entry added or removed is already implied"
        return result if result.unchanged_note else None
    if old is None or new is None:
        what = "added" if old is None else "removed"
        result.change = FieldChange("status.noProxy", old=_safe(old or ""), new=_safe(new or ""), what=what, note=note)
        return result
    added, removed = _items([p for p in old.split(",") if p], [p for p in new.split(",") if p])
    result.change = FieldChange("status.noProxy", added=added, removed=removed, what="items", note=note)
    return result


def code(text: str) -> str:
    """``text`` as one Markdown code span: a fence longer than any backtick run in it (CommonMark 0.31.2 §6.1)."""
    text = text.replace("\n", " ")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
