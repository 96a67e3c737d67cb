"""One strict reader for ``stacks/Pulumi.<stack>.yaml``: the file as the Pulumi CLI hands it to the program.

The tools (``load_profile``: render, preview, diff, explain) and the offline preview's program config (``stack_config``)
read stack files here; the program and the policy pack read the CLI's text with the same rules (stack_rules.py), so
one file gives one Profile whichever way it is read. Refused, with the line: what the CLI refuses (a duplicate key,
plain text for a secret, a boolean other than true/false, an empty value) and what two readers could read
differently or what the CLI would pass to no one (YAML 1.1 booleans, octal or underscored numbers, dates and numbers
where text is expected, a misspelt namespace or key, a ``secure:`` value that is not a ciphertext).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .errors import ProfileError
from .pem import private_key_label, private_key_problem
from .redact import HIDDEN, PEM_SHOWN
from .stack_rules import (DECIMAL, Secure, SettingProblem, check_key, cli_text, is_ciphertext, not_boolean, parse_setting,
                          secret_meant)
from .suggest import closest
from .stack_yaml import Map, Node, Scalar, Seq, Timestamp, YamlProblem, load

TOP_LEVEL = ("config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment")  # workspace.ProjectStack


@dataclass(frozen=True)
class StackFile:
    path: Path
    stack: str
    values: dict[str, Any]  # full key -> value as yaml.v3 reads it (Secure for a ciphertext)
    settings: dict[str, str]  # our setting -> the text the CLI hands the program (secrets excluded)
    secret_settings: frozenset[str]  # our secret settings the file sets
    lines: dict[str, int] = field(default_factory=dict)  # our setting -> its line
    problems: tuple[ProfileError, ...] = ()  # every value the file gets wrong (the caller reports them with the rest)
    broken: frozenset[str] = frozenset()  # our settings whose value could not be read (left out of settings)

    def cli_config(self, stand_in: str) -> tuple[dict[str, str], list[str]]:
        """Every value as the CLI hands it to a program (full keys), ciphertexts replaced by ``stand_in``; the secret keys."""
        config, secret = {}, []
        for key, value in self.values.items():
            config[key], is_secret = cli_text(value, stand_in)
            if is_secret:
                secret.append(key)
        return config, secret


def read_stack_file(path: Path, stack: str, *, project: str, declared: Mapping[str, Mapping[str, Any]]) -> StackFile:
    """Read a stack file strictly. ``declared``: the project's config declarations (Pulumi.yaml), secrets marked."""
    reader = _Reader(Path(path), stack, project, declared)
    return reader.read()


class _Reader:
    def __init__(self, path: Path, stack: str, project: str, declared: Mapping[str, Mapping[str, Any]]):
        self.path, self.stack, self.project, self.declared = path, stack, project, declared
        self.secret = [key for key, decl in declared.items() if decl.get("secret")]
        self.provider = "any"
        self.problems: list[ProfileError] = []
        self.broken: set[str] = set()

    def fail(self, line: int, field_: str, value: Any, problem: str, fix: str) -> ProfileError:
        where = f"stack '{self.stack}', line {line}" if line else f"stack '{self.stack}'"
        return ProfileError(self.path, where, field_, value, problem, fix)

    def read(self) -> StackFile:
        try:
            text = self.path.read_text(encoding="utf-8-sig")  # Pulumi strips a byte-order mark too
        except (OSError, UnicodeDecodeError) as exc:
            raise ProfileError(self.path, "", "(file)", "", f"cannot be read ({exc})", "write the stack file as UTF-8 text") from None
        try:
            root = load(text)
        except YamlProblem as exc:  # the file cannot be read on: this one problem is all there is to say
            field_ = f"config.{exc.field}" if ":" in exc.field and not exc.field.startswith("config.") else exc.field
            raise self.fail(exc.line, field_, exc.value, exc.problem, exc.fix) from None
        if root is None:
            return StackFile(self.path, self.stack, {}, {}, frozenset())
        if not isinstance(root, Map):
            raise self.fail(root.line, "(file)", "", "a stack file is a mapping", "write 'config:' with the settings under it")
        top = {key.text: (key, value) for key, value in root.entries}
        for name, (key, value) in top.items():
            if name not in TOP_LEVEL:
                close = closest(name, TOP_LEVEL)
                problem = self.fail(key.line, name, "", "not a stack file setting: Pulumi ignores it",
                                    f"write '{close}'" if close else f"use {', '.join(TOP_LEVEL)}")
                if close == "config" or "config" not in top:
                    raise problem  # no settings to read on: what else is wrong follows from this
                self.problems.append(problem)
            elif name != "config" and name != "environment" and not (isinstance(value, Scalar) and isinstance(value.value, str)):
                self.problems.append(self.fail(value.line, name, "", "must be text", f"keep the {name} Pulumi wrote"))
        salt, provider = top.get("encryptionsalt"), top.get("secretsprovider")
        provider_name = provider[1].value if provider else ""
        if salt or provider_name not in ("", "default"):
            self.provider = "v1"  # passphrase and cloud KMS providers write v1:<nonce>:<ciphertext>
        config = top.get("config", (None, None))[1]
        if config is None or (isinstance(config, Scalar) and config.value is None):
            return StackFile(self.path, self.stack, {}, {}, frozenset(), problems=tuple(self.problems))
        if not isinstance(config, Map):
            self.problems.append(self.fail(config.line, "config", "", "must be a mapping of settings",
                                           f"write '{self.project}:<key>: <value>' lines under 'config:'"))
            return StackFile(self.path, self.stack, {}, {}, frozenset(), problems=tuple(self.problems))
        return self._config(config)

    def _config(self, config: Map) -> StackFile:
        values: dict[str, Any] = {}
        settings: dict[str, str] = {}
        secrets: set[str] = set()
        lines: dict[str, int] = {}
        for key, node in config.entries:
            try:
                self._entry(key, node, values, settings, secrets, lines)
            except ProfileError as exc:  # noted; the other settings are read on, so the file's problems come at once
                self.problems.append(exc)
                name = key.text.partition(":")[2]
                meant = name if name in self.declared else closest(name, self.declared, cutoff=0.8)
                if meant:  # its follow-on errors ('platforms' not set when 'platfroms' is written) are not reported
                    self.broken.add(meant)
        return StackFile(self.path, self.stack, values, settings, frozenset(secrets), lines, tuple(self.problems), frozenset(self.broken))

    def _entry(self, key: Scalar, node: Node, values: dict[str, Any], settings: dict[str, str], secrets: set[str],
               lines: dict[str, int]) -> None:
        """One config line into values / settings / secrets / lines; raises ProfileError."""
        full = key.text
        if full != f"{self.project}:proxyTrustedCa":  # that one's own check names the block (pem.check_certificates_only)
            label = private_key_label([key.text, *_texts(node)])  # in any namespace: the file is committed either way
            if label:
                problem = private_key_problem(label)
                raise self.fail(key.line, f"config.{full}", PEM_SHOWN, problem.problem, problem.fix)
        try:
            name = check_key(full, self.project, self.declared)
        except SettingProblem as exc:
            # An unknown key's value is never shown: its meaning (a secret?) is unknown, and the value does not help fix the key.
            # Only a setting of ours written in a near-miss namespace ('egress_matrix:kkpSeed') is known for what it is.
            name = full.rpartition(":")[2]
            known = name in self.declared and name not in self.secret and not _has_secure(node)
            meant = secret_meant(name, self.secret)
            if meant and not _has_secure(node):  # a (nearly) secret key with a plain value: renaming it keeps the secret in plain text
                right = f"{self.project}:{meant}"
                raise self.fail(key.line, f"config.{full}", HIDDEN, f"{exc.problem}; and it is the secret {right}, written in plain text "
                                "in the stack file", f"remove the line and run: pulumi config set --secret {right} '<value>' (and rotate the "
                                "value: it has been in plain text)") from None
            raise self.fail(key.line, f"config.{full}", _shown(node) if known else HIDDEN, exc.problem, exc.fix) from None
        values[full] = self._value(full, node)
        if name is None:
            return  # a provider's setting: Pulumi's business, passed on as is
        lines[name] = key.line
        if name in self.secret:
            if not isinstance(values[full], Secure):
                raise self.fail(key.line, f"config.{full}", "(hidden)", "this setting must be a Pulumi secret, not plain text in "
                                "the stack file", f"remove the line and run: pulumi config set --secret {full} '<value>' "
                                "(and rotate the value: it has been in plain text)")
            secrets.add(name)
            return
        if _has_secure(node):
            raise self.fail(key.line, f"config.{full}", "(secret)", "egress settings are not secret", f"store it as plain config: pulumi config set {full} <value>")
        try:
            text = self._setting(node, self.declared[name])
            parse_setting(text, self.declared[name])  # the program's reading of the same text
            settings[name] = text
        except _NodeProblem as exc:
            raise self.fail(exc.node.line, f"config.{self.project}:{_path_at(node, name, exc.node)}", _shown(exc.node), exc.problem, exc.fix) from None
        except SettingProblem as exc:
            raise self.fail(key.line, f"config.{full}", _shown(node), exc.problem, exc.fix) from None
        if self.declared[name]["type"] == "object":
            lines.update(_item_lines(node, name))

    def _value(self, full: str, node: Node) -> Any:
        """The node as yaml.v3 reads it; every ``secure:`` must hold a ciphertext Pulumi wrote."""
        if isinstance(node, Scalar):
            return node.value
        if isinstance(node, Seq):
            return [self._value(full, item) for item in node.items]
        secure = _secure(node)
        if secure is not None:
            if not is_ciphertext(secure.text, self.provider):
                formats = ("v1:<nonce>:<ciphertext>, as this stack's passphrase or KMS provider does" if self.provider == "v1" else
                           "v1:<nonce>:<ciphertext> with a passphrase or KMS provider, base64 starting AAABA with Pulumi Cloud")
                raise self.fail(secure.line, f"config.{full}", "(hidden)", f"'secure:' holds no Pulumi ciphertext, so plain text (Pulumi writes {formats})",
                                f"remove the line and run: pulumi config set --secret {full} '<value>' (and rotate the value: it has been in plain text)")
            return Secure(secure.text)
        return {str(key.value).lower() if isinstance(key.value, bool) else str(key.value): self._value(full, value) for key, value in node.entries}

    def _setting(self, node: Node, decl: Mapping[str, Any]) -> str:
        kind = decl["type"]
        if kind == "object":
            if not isinstance(node, (Seq, Map)):
                raise _NodeProblem(node, "not a list or mapping", "write it as YAML under the key, e.g. a list of mappings")
            return json.dumps(_structured(node), separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        if kind == "array":
            if isinstance(node, Scalar) and isinstance(node.value, str) and node.text.strip():
                # e.g. OpenShift's comma-separated noProxy string: Pulumi refuses text where Pulumi.yaml declares a list
                parts = [part.strip() for part in node.text.split(",") if part.strip()]
                raise _NodeProblem(node, "text where a list belongs (Pulumi refuses it: the setting is declared as a list)",
                                   f"write it as a YAML list: [{', '.join(parts)}]")
            if not isinstance(node, Seq):
                raise _NodeProblem(node, "not a list", "write a YAML list, e.g. [a, b]")
            item_kind = decl.get("items", {}).get("type", "string")
            return json.dumps([_item(item, item_kind, in_list=True) for item in node.items], separators=(",", ":"), ensure_ascii=False)
        return str(_item(node, kind)) if kind != "boolean" else _boolean(node)


def _structured(node: Node) -> Any:
    """An object setting as JSON holds it (what the CLI hands the program). Inside it, a scalar is text, a whole number
    or true/false: what YAML 1.1 and 1.2 readers would read differently (a date, 'yes', '010') must be quoted."""
    if isinstance(node, Seq):
        return [_structured(item) for item in node.items]
    if isinstance(node, Map):
        out: dict[str, Any] = {}
        for key, value in node.entries:
            if not isinstance(key.value, str) or isinstance(key.value, Timestamp):
                raise _NodeProblem(key, "a key that is not text", f'quote it: "{key.text}"')
            out[key.value] = _structured(value)
        return out
    if node.plain and node.value is None:
        raise _NodeProblem(node, "no value", "give a value or remove the field")
    if node.plain and isinstance(node.value, bool) and node.yaml11 == "bool":
        return node.value
    if node.plain and type(node.value) is int and DECIMAL.fullmatch(node.text) and node.yaml11 == "int":
        return node.value
    return _item(node, "string")


def _path_at(node: Node, name: str, inner: Node) -> str:
    """Where ``inner`` sits inside a setting's value (entries[0].expires), for an error about it; the setting's name else."""
    if isinstance(node, Seq):
        for index, item in enumerate(node.items):
            found = _path_at(item, f"{name}[{index}]", inner)
            if found != f"{name}[{index}]" or item is inner:
                return found
    elif isinstance(node, Map):
        for key, value in node.entries:
            found = _path_at(value, f"{name}.{key.text}", inner)
            if found != f"{name}.{key.text}" or value is inner or key is inner:
                return found
    return name


def _item_lines(node: Node, path: str) -> dict[str, int]:
    """The line of every item and field inside an object setting (entries[0].owner -> 12), for error messages."""
    lines = {path: node.line}
    if isinstance(node, Seq):
        for index, item in enumerate(node.items):
            lines.update(_item_lines(item, f"{path}[{index}]"))
    elif isinstance(node, Map):
        for key, value in node.entries:
            lines.update(_item_lines(value, f"{path}.{key.text}"))
            lines[f"{path}.{key.text}"] = key.line
    return lines


class _NodeProblem(Exception):
    def __init__(self, node: Node, problem: str, fix: str):
        super().__init__(problem)
        self.node, self.problem, self.fix = node, problem, fix


def _boolean(node: Node) -> str:
    if isinstance(node, Scalar):
        if node.plain and isinstance(node.value, bool):
            return "true" if node.value else "false"
        if node.plain and node.value is None:
            raise _NodeProblem(node, "no value", "give a value or remove the line")
        if not node.plain and node.text in ("true", "false"):
            return node.text
        raise _NodeProblem(node, not_boolean(node.text), "write true or false")
    raise _NodeProblem(node, "not a boolean", "write true or false")


def _item(node: Node, kind: str, in_list: bool = False) -> Any:
    """A scalar of type ``kind`` (string or integer) as the CLI passes it on (inside a list: as JSON holds it)."""
    if not isinstance(node, Scalar):
        raise _NodeProblem(node, "a list or mapping where one value belongs", "write one value")
    if node.plain and node.value is None:
        raise _NodeProblem(node, "no value", "give a value or remove the line")
    if kind == "integer":
        if node.plain and type(node.value) is int:
            if DECIMAL.fullmatch(node.text):
                return node.value
            raise _NodeProblem(node, f"'{node.text}' is a number YAML readers disagree on (Pulumi reads {node.value}, a YAML 1.1 "
                                     "reader may not)", f"write it in plain decimal: {node.value}")
        if not node.plain and DECIMAL.fullmatch(node.text):
            if in_list:
                raise _NodeProblem(node, "a quoted number in a list of numbers", f"write it without quotes: {node.text}")
            return node.text  # Pulumi accepts text that reads as a whole number
        raise _NodeProblem(node, "not a whole number", "write a whole number in plain decimal, e.g. 3128")
    if node.plain and (not isinstance(node.value, str) or isinstance(node.value, Timestamp) or node.yaml11 != "str"):
        read_as, yaml11 = _kind(node.value), _WORDS.get(node.yaml11, node.yaml11)
        readers = f"YAML 1.2 (Pulumi) reads it as {read_as}, YAML 1.1 as {yaml11}" if read_as != yaml11 else f"it is read as {read_as}"
        raise _NodeProblem(node, f"text expected, but {readers}", f'quote it: "{node.text}"')
    return node.text


_WORDS = {"str": "text", "bool": "a boolean", "int": "a number", "float": "a number", "null": "nothing", "timestamp": "a date"}


def _kind(value: Any) -> str:
    if isinstance(value, Timestamp):
        return _WORDS["timestamp"]
    return _WORDS[{bool: "bool", int: "int", float: "float", type(None): "null"}.get(type(value), "str")]


def _secure(node: Map) -> Scalar | None:
    """``{secure: <text>}`` alone is a secret (config.isSecureValue); anything else is an object."""
    if len(node.entries) == 1:
        key, value = node.entries[0]
        if key.value == "secure" and isinstance(value, Scalar) and isinstance(value.value, str):
            return value
    return None


def _has_secure(node: Node) -> bool:
    if isinstance(node, Seq):
        return any(_has_secure(item) for item in node.items)
    if isinstance(node, Map):
        return _secure(node) is not None or any(_has_secure(value) for _, value in node.entries)
    return False


def _texts(node: Node) -> list[str]:
    """Every scalar's text in a value, mapping keys included."""
    if isinstance(node, Scalar):
        return [node.text]
    if isinstance(node, Seq):
        return [text for item in node.items for text in _texts(item)]
    return [text for key, value in node.entries for text in (key.text, *_texts(value))]


def _shown(node: Node) -> Any:
    if isinstance(node, Scalar):
        return node.text
    if isinstance(node, Seq):
        return [_shown(item) for item in node.items]
    return "(a mapping)"
