"""Does a value an error is about to quote look like a secret? For settings egress does not know (an unknown key, a
misspelt one): their meaning is unknown, so their value is shown only when it looks like none of the forms credentials
take. The rules of egress/redact.py (a URL or host with credentials, PEM text) plus what a pasted secret looks like
without a URL around it: ``user:password``, and a long token (an API key, a JWT, a base64 blob). A value hidden in error
costs nothing (the message still names the file, line and key); one shown in error may be a password in a CI log.
"""
from __future__ import annotations

import ipaddress
import re
from typing import Any

from .redact import has_credentials, is_secret_name

_PEM_OR_KEY = re.compile(r"-----BEGIN |(?i:private[ _-]?key|private-lines:)")
_USER_PASSWORD = re.compile(r"[^\s:/@]+:[^\s]+")  # 'alice:hunter2'; a host:port (digits after the ':') is not one
_TOKEN = re.compile(r"[A-Za-z0-9+/=_~.-]{20,}")
_HOST = re.compile(r"(?i)\*?\.?(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}\.?")
_UUID = re.compile(r"(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_NAME_HINTS = ("cred", "pass", "pasw", "pwd", "secret", "token", "apikey", "auth")  # 'proxyPasword' misspelt too


def looks_secret(value: Any, name: str = "") -> bool:
    """Whether ``value`` (of setting ``name``) may hold a secret: then an error shows it as (hidden)."""
    key = re.sub(r"[^a-z0-9]", "", name.rpartition(":")[2].lower())
    if name and (is_secret_name(name) or any(hint in key for hint in _NAME_HINTS) or key.endswith("pw")):  # 'proxyPw'
        return value not in (None, "", [], {})
    if isinstance(value, (list, tuple)):
        return any(looks_secret(item) for item in value)
    if isinstance(value, dict):
        return any(looks_secret(item, str(k)) for k, item in value.items())
    if not isinstance(value, str):
        return False
    text = value.strip()
    if not text:
        return False
    if _PEM_OR_KEY.search(text) or has_credentials(text):
        return True
    return any(_secret_word(word) for word in text.split())


def _secret_word(word: str) -> bool:
    if _USER_PASSWORD.fullmatch(word) and not _is_address(word):
        head, _, tail = word.partition(":")
        if not (tail.isdigit() or (head.lower() in ("http", "https") and tail.startswith("//"))):
            return True  # 'user:password' ('host:3128' and a plain URL are not)
    if _TOKEN.fullmatch(word) and not _HOST.fullmatch(word) and not _UUID.fullmatch(word) and not word.startswith("/"):
        return any(c.isdigit() for c in word) and any(c.isalpha() for c in word)  # a long mix of letters and digits
    return False


def _is_address(word: str) -> bool:
    try:
        ipaddress.ip_network(word, strict=False)
        return True
    except ValueError:
        return False
