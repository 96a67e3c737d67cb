"""The rules both stack-reading paths share: what Pulumi hands a program for a value, how the program reads it back,
which config keys are ours, what a ``secure:`` value must look like.

The Pulumi CLI checks every declared setting against its type in ``Pulumi.yaml`` and hands the program each value as
text: a boolean as ``true``/``false``, an integer in decimal, an array as JSON, a secret decrypted. The stack-file
reader (egress/stack_file.py) produces that text; ``parse_setting`` reads it back, in the program and in the tools.
"""
from __future__ import annotations

import base64
import binascii
import difflib
import json
import re
from typing import Any, Iterable, Mapping, Optional

from .stack_yaml import Timestamp
from .suggest import closest, distance

DECIMAL = re.compile(r"-?(0|[1-9][0-9]*)")  # used with fullmatch: "30\n" is not a number
_YAML11_BOOLEANS = {"y", "yes", "n", "no", "on", "off"}  # YAML 1.1 booleans that YAML 1.2 (Pulumi) reads as text
_B64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_SERVICE_HEADER = b"\x00\x00\x01\x00"  # every Pulumi Cloud ciphertext seen begins so (base64 'AAABA')


class SettingProblem(Exception):
    def __init__(self, problem: str, fix: str):
        super().__init__(problem)
        self.problem, self.fix = problem, fix


class Secure(str):
    """A ``secure:`` ciphertext (never decrypted here)."""


def cli_text(value: Any, stand_in: str) -> tuple[str, bool]:
    """The text Pulumi hands a program for a value (object.MarshalString), and whether it holds a secret."""
    if isinstance(value, Secure):
        return stand_in, True
    if isinstance(value, Timestamp):
        return str(value), False  # Pulumi hands on Go's time text; offline, as written (only provider settings hold dates)
    if isinstance(value, str):
        return value, False
    secret: list[bool] = []

    def plain(v: Any) -> Any:
        if isinstance(v, Secure):
            secret.append(True)
            return stand_in
        if isinstance(v, float) and v.is_integer() and abs(v) < 1e21:
            return int(v)  # Go's JSON writes 3128.0 as 3128
        if isinstance(v, list):
            return [plain(i) for i in v]
        if isinstance(v, dict):
            return {k: plain(i) for k, i in v.items()}
        return v

    return json.dumps(plain(value), separators=(",", ":"), sort_keys=True, ensure_ascii=False), bool(secret)


def parse_setting(raw: Any, declaration: Mapping[str, Any]) -> Any:
    """A setting's value from the text Pulumi hands the program, by its declared type. Raises SettingProblem."""
    if not isinstance(raw, str):
        raise SettingProblem(f"a {type(raw).__name__}, not the text Pulumi hands a program", "set it with pulumi config set")
    kind = declaration["type"]
    if kind == "boolean":
        if raw in ("true", "false"):
            return raw == "true"
        raise SettingProblem(not_boolean(raw), "write true or false")
    if kind == "integer":
        if DECIMAL.fullmatch(raw):
            return int(raw)
        raise SettingProblem("not a whole number in plain decimal", "write a whole number such as 3128 (no sign, underscores, leading zeros, 0x/0o)")
    if kind == "array":
        try:
            items = json.loads(raw)
        except ValueError:
            items = None
        if not isinstance(items, list):
            raise SettingProblem("not a list", "write a YAML list, e.g. [a, b] (pulumi config set --path 'egress-matrix:key[0]' a)")
        item_kind = declaration.get("items", {}).get("type", "string")
        for index, item in enumerate(items):
            if item_kind == "integer" and not (isinstance(item, int) and not isinstance(item, bool)):
                raise SettingProblem(f"item {index} ({item!r}) is not a whole number", "write whole numbers in plain decimal")
            if item_kind == "string" and not isinstance(item, str):
                raise SettingProblem(f"item {index} ({json.dumps(item)}) is not text", f"quote it: '{json.dumps(item)}'")
        return items
    if kind == "object":  # a structured setting: JSON text (checked by the Profile's models)
        try:
            return json.loads(raw)
        except ValueError:
            raise SettingProblem("not a list or mapping", "write it as YAML under the key (or pulumi config set --path)") from None
    return raw


def not_boolean(text: str) -> str:
    if text.lower() in _YAML11_BOOLEANS:
        return (f"'{text}' is not a boolean for Pulumi: YAML 1.2 (Pulumi) reads it as text, YAML 1.1 as a boolean, "
                "so the program and the offline tools would disagree")
    return "not a boolean"


def check_key(full_key: str, project: str, declared: Mapping[str, Any]) -> Optional[str]:
    """Our setting behind ``namespace:name``, None for another namespace (a provider's: Pulumi's business).
    Raises SettingProblem for a near-miss namespace or an unknown or mis-cased name in ours."""
    namespace, sep, name = full_key.partition(":")
    if not sep:
        raise SettingProblem("a config key without a namespace", f"write '{project}:{full_key}' (the form pulumi config set writes)")
    if ":" in name:
        module, _, member = name.partition(":")
        if module == "config":
            raise SettingProblem("the old '<namespace>:config:<name>' form", f"write '{namespace}:{member}'")
        raise SettingProblem("not a config key (one ':' between namespace and name)", f"write '<namespace>:<name>', e.g. '{project}:nodeSources'")
    if namespace != project:
        if _near(namespace, project):
            raise SettingProblem(f"namespace '{namespace}' is not '{project}': Pulumi would pass the setting to no one",
                                 f"write '{project}:{name}'")
        return None
    if name in declared:
        return name
    lowered = {key.lower(): key for key in declared}
    if name.lower() in lowered:
        right = lowered[name.lower()]
        raise SettingProblem(f"unknown setting: keys are case-sensitive, '{name}' is not '{right}'", f"write '{project}:{right}'")
    close = closest(name, declared, cutoff=0.8)
    if close:
        raise SettingProblem("unknown setting", f"did you mean '{project}:{close}'? (or remove it)")
    raise SettingProblem("unknown setting", f"remove it or use one of: {', '.join(sorted(declared))}")


def secret_meant(name: str, secret: Iterable[str]) -> Optional[str]:
    """The secret setting ``name`` is, or nearly is, however cased, separated or misspelt ('proxycredentials',
    'PROXY_CREDENTIALS', 'proxyCrendentials' are proxyCredentials); None for any other name."""
    def norm(text: str) -> str:
        return re.sub(r"[^a-z0-9]", "", text.lower())

    by_norm = {norm(s): s for s in secret}
    key = norm(name)
    if not key:
        return None
    if key in by_norm:
        return by_norm[key]
    close = difflib.get_close_matches(key, list(by_norm), n=1, cutoff=0.8)
    return by_norm[close[0]] if close else None


def hides_value(name: str, secret: Iterable[str]) -> bool:
    """Whether an error about setting ``name`` must not show its value: a secret, or a misspelt secret."""
    return secret_meant(name, secret) is not None


def _near(namespace: str, project: str) -> bool:
    normal = namespace.lower().replace("_", "-").replace(".", "-")
    return normal == project or normal.replace("-", "") == project.replace("-", "") or distance(normal, project) <= 2


def is_ciphertext(text: str, provider: str) -> bool:
    """Whether ``text`` is what Pulumi writes under ``secure:``. ``provider``: 'v1' (passphrase and cloud KMS
    providers: symmetricCrypter, ``v1:<base64 12-byte nonce>:<base64 AES-GCM ciphertext, tag included>``), 'service'
    (Pulumi Cloud: the base64 ciphertext its API returns) or 'any' (the file does not say)."""
    if provider in ("v1", "any") and text.startswith("v1:"):
        parts = text.split(":")
        if len(parts) == 3:
            nonce, sealed = _b64(parts[1]), _b64(parts[2])
            return nonce is not None and sealed is not None and len(nonce) == 12 and len(sealed) >= 16
        return False
    if provider in ("service", "any"):
        data = _b64(text)
        return data is not None and len(data) >= 32 and data.startswith(_SERVICE_HEADER)
    return False


def _b64(text: str) -> Optional[bytes]:
    if not _B64.fullmatch(text) or len(text) % 4:
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
