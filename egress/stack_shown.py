"""A stack file as it may be shown (``egress init --force`` shows the file it replaces as a diff): every line that may
hold a secret is replaced, by the rules the stack reader hides values with (egress/stack_file.py).

- a setting that is, or nearly is, a secret setting ('proxyCredentials', 'proxycredentials', 'PROXY_CREDENTIALS'),
  whose name says secret (password, token, ...), or that is no setting of ours (its meaning is unknown): ``(hidden)``, unless its value is a ``secure:`` ciphertext
  Pulumi wrote (encrypted already, so shown as it is);
- PEM text anywhere in a setting (a CA bundle, a private key): ``(PEM text, not shown)`` for the whole setting;
- any other line, a comment included, whose value looks like a secret (a URL with credentials, ``user:password``, a
  long token: egress/secret_like.py), or names one and seems to give it ('# the proxy password is ...':
  egress/secret_words.py): ``(hidden)``;
- a YAML anchor's value whose alias a hidden setting uses: ``(hidden)``.

Line-based, so a file the reader refuses (the reason ``--force`` may replace it) is shown all the same.
"""
from __future__ import annotations

import re

from .profile import PROJECT, SECRET_KEYS, declared_settings
from .redact import HIDDEN, PEM_SHOWN, is_secret_name, redact
from .secret_like import looks_secret
from .secret_words import shows_secret
from .stack_rules import SettingProblem, check_key, is_ciphertext, secret_meant

# '  egress-matrix:httpProxy: value', '  - destination: value', '  # egress-matrix:kkpDomain: value' (a commented setting)
_LINE = re.compile(r"(?P<lead>[ \t]*(?:#[ \t]*)?(?:-[ \t]+)*)(?:(?P<key>[^\s#'\"-][^\s]*?|\"[^\"]*\"|'[^']*'):(?=[ \t]|$))?"
                   r"(?P<rest>[ \t]*(?P<value>.*?))(?P<end>[\r\n]*)\Z", re.S)
_PEM = re.compile(r"-----BEGIN |(?i:private[ _-]?key|private-lines:)")
_SECURE = re.compile(r"\{?\s*secure:\s*(?P<text>[^\s{}]+)\s*\}?")


def shown_stack_text(text: str) -> str:
    """``text`` (a stack file) with every line that may hold a secret replaced; the other lines as they are."""
    lines = text.splitlines(keepends=True)
    anchors = _secret_anchors(lines)
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        group = [line]
        depth = _indent(line)
        if depth and not line.lstrip().startswith("#") and _LINE.match(line).group("key"):  # a setting (not 'config:' itself)
            while index + len(group) < len(lines) and _continues(lines[index + len(group)], depth):
                group.append(lines[index + len(group)])
        out += _shown_group(group, anchors)
        index += len(group)
    return "".join(out)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _continues(line: str, depth: int) -> bool:
    """Is ``line`` part of the value of a setting at ``depth`` (more indented, or blank inside a block)?"""
    return not line.strip() or _indent(line) > depth or line.lstrip().startswith("- ") and _indent(line) == depth > 0


_ALIAS = re.compile(r"(?<![^\s\[{,:])\*(?P<name>[^\s,\[\]{}]+)")
_ANCHOR = re.compile(r"(?<![^\s\[{,:])&(?P<name>[^\s,\[\]{}]+)")


def _hidden_key(key: str) -> bool:
    """Is ``key`` a setting whose value is never shown (a secret, nearly one, named like one, or unknown)?"""
    return bool(key) and (secret_meant(key.rpartition(":")[2], SECRET_KEYS) or is_secret_name(key) or _unknown(key))


def _secret_anchors(lines: list[str]) -> set[str]:
    """The YAML anchors whose alias a hidden setting uses ('clusterName: &p hunter2' + 'proxyCredentials: *p'): the
    anchored value is the secret, so it is hidden where it is written too."""
    found = set()
    for line in lines:
        parsed = _LINE.match(line)
        if _hidden_key((parsed.group("key") or "").strip("'\"")):
            found.update(alias.group("name") for alias in _ALIAS.finditer(parsed.group("value")))
    return found


def _shown_group(group: list[str], anchors: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """One setting (its key line and the lines of its value), or one other line, as it may be shown."""
    first = _LINE.match(group[0])
    key = (first.group("key") or "").strip("'\"")
    body = first.group("value") + "".join(group[1:])
    end = first.group("end") or "\n"
    head = first.group("lead") + first.group("key") + ": " if key else first.group("lead")
    if _PEM.search(key + body):
        return [head + PEM_SHOWN + end]
    if any(anchor.group("name") in anchors for anchor in _ANCHOR.finditer(body)):
        return [head + HIDDEN + end]
    if _hidden_key(key):
        secure = _SECURE.fullmatch(body.strip())
        if secure and is_ciphertext(secure.group("text"), "any"):
            return [redact(line) for line in group]  # a ciphertext Pulumi wrote: encrypted already
        return [head + HIDDEN + end]
    if len(group) == 1:
        return [_shown_line(group[0])]
    return [_shown_line(group[0]), *(_shown_line(line) for line in group[1:])]


def _unknown(key: str) -> bool:
    """A key of ours (or nearly) that is no setting: its meaning is unknown, so its value is not shown (as the reader does)."""
    if ":" not in key:
        return False
    try:
        check_key(key, PROJECT, declared_settings())
    except SettingProblem:
        return True
    return False


def _shown_line(line: str) -> str:
    parsed = _LINE.match(line)
    key, value = (parsed.group("key") or "").strip("'\""), parsed.group("value")
    if not value.strip():
        return line
    prose = parsed.group("lead").lstrip().startswith("#") and not key
    if _secret(value, key, prose):
        head = parsed.group("lead") + (parsed.group("key") + ": " if key else "")
        return head + HIDDEN + (parsed.group("end") or "\n")
    return redact(line)


_OUR_KEY = re.compile(rf"\b{re.escape(PROJECT)}:(?P<name>[A-Za-z]+)\b")


def _secret(value: str, key: str, prose: bool) -> bool:
    """Does ``value`` (of ``key``; ``prose``: a comment's text) look like a secret? In prose, our own setting names
    ('egress-matrix:proxyCredentials', 'pulumi config set --secret ...') and the placeholder 'user:password' are words."""
    if key and (secret_meant(key.rpartition(":")[2], SECRET_KEYS) or is_secret_name(key)):
        return True
    if prose:
        known = declared_settings()
        value = _OUR_KEY.sub(lambda m: "" if m.group("name") in known else m.group(0), value).replace("'user:password'", "")
    # a word for a secret and what seems to be one ('# the proxy password is Hunter2Hunter2', "'DB_PASSWORD=hunter2'",
    # a trailing '# Authorization: Bearer ...'): the rule pem.py refuses CA bundle lines by (egress/secret_words.py)
    return looks_secret(value.strip().strip("'\""), key) or shows_secret(value)
