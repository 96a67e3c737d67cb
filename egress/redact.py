"""One redaction for everything that quotes a URL or a setting: credentials and private keys never reach a terminal,
a CI log, a pull-request comment or a file.

- ``userinfo_span`` / ``redact_url``: a single value (a proxy URL, a host setting). Go's ``net/url`` (egress/gourl.py)
  decides whether a URL carries credentials at all (an '@' in a path does not); one that does, or that the parser
  refuses, is masked from ``//`` (or its scheme) to its last '@', whatever lies between (a space, '%zz', a '/' or '#'
  in a password: parsers disagree on where such credentials end, so the mask takes the widest reading).
- ``redact_message``: a message that quotes known values, including the pieces of them Go's parse errors quote
  (``invalid port ":pa" after host`` for ``http://user:pa/ss@host``).
- ``redact``: any text (the last line of defence for error output, policy messages, explain and diff output).
- ``redact_value``: the value an error shows: a setting named like a secret shows as ``(hidden)``, PEM text as
  ``(PEM text, not shown)``.
"""
from __future__ import annotations

import codecs
import re
import warnings
from typing import Any, Iterator, Optional

from .gourl import GoURLError, parse, parse_request_uri
from .secret_words import secret_parameter

MASK = "(credentials hidden)"
HIDDEN = "(hidden)"
PEM_SHOWN = "(PEM text, not shown)"

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")  # Go's getScheme
# Schemes whose opaque form ('http:user:pass@host') is still read as carrying a user by proxy clients.
_URL_SCHEMES = frozenset({"http", "https", "socks4", "socks4a", "socks5", "socks5h", "ftp", "ws", "wss", "mailto"})
_SECRET_HINTS = ("credential", "password", "passwd", "secret", "token")
_QUOTED = re.compile(r"'[^'\n]*'|\"(?:[^\"\\\n]|\\.)*\"")
_TOKEN = re.compile(r"[^\s'\"`]+")
_GO_QUOTED = re.compile(r"\"((?:[^\"\\]|\\.)*)\"")
_PEM_BLOCK = re.compile(r"-----BEGIN ([^-\r\n]+)-----.*?(?:-----END \1-----|\Z)", re.S)
_PRIVATE = re.compile(r"(?i)private[ _-]?key|private-lines")
# A query parameter ('?', '&', or a fragment's '#': '#access_token=' of OAuth's implicit flow) or a connection string's
# 'Key=Value;' pair whose name says it holds a credential (egress/secret_words.py decides): its value is hidden.
_QUERY_PAIR = re.compile(r"(?P<lead>[?&#])(?P<name>[A-Za-z0-9_.-]+)=(?P<value>[^&;#\s'\"`]+)")
_CONNECTION_PAIR = re.compile(r"(?P<lead>(?:^|[;\s'\"`]))(?P<name>[A-Za-z0-9_.-]+)=(?P<value>[^;\s'\"`]+)(?=;|$|[\s'\"`])", re.M)
# An OCI image reference pinned by digest ('python:3.12-slim@sha256:<hex>', 'registry.example.com:5000/squid:6@sha256:<hex>'):
# name (optional registry host[:port], path components) and tag as distribution/reference's grammar (regexp.go,
# 00a09fa3: domainAndPort, pathComponent, tag `[\w][\w.-]{0,127}`); the digest only as the OCI image spec registers it
# (descriptor.md 023b0770, "Registered algorithms": sha256 and sha512, 64 and 128 lowercase hex digits), so that
# 'user:password@host:<digits>' (a mistyped port) stays masked: after the '@' stands 'sha256', never a proxy host with a
# port. A name with a repository path may carry an abbreviated digest ('ubuntu/squid@sha256:6a097f68', as release notes
# quote them) if it holds a hex letter: 'sha256:<digits>' could be a host and port. Punctuation around it is a sentence's.
_REF_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REF_DOMAIN = r"(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_REF_TAG = r"(?::\w[\w.-]{0,127})?"
_IMAGE_DIGEST = re.compile(rf"[(\[]*(?:{_REF_DOMAIN}/)?{_REF_COMPONENT}(?:/{_REF_COMPONENT})*{_REF_TAG}"
                           r"@(?:sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})[,.;)\]]*\Z")
_IMAGE_SHORT_DIGEST = re.compile(rf"[(\[]*(?=[^@]*/)(?:{_REF_DOMAIN}/)?{_REF_COMPONENT}(?:/{_REF_COMPONENT})*{_REF_TAG}"
                                 r"@sha(?:256|512):[0-9a-f]*[a-f][0-9a-f]*[,.;)\]]*\Z")
# 'http://alice:pa ss@proxy' in free text: white space splits the URL into tokens, none of which is credentials and a
# host. A scheme's authority whose ':' is followed by no port, continued on the same line up to an '@', is one.
_SPLIT_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://)(?P<authority>[^\s/@'\"`]*:(?P<after>[^\s/@'\"`]*))"
                             r"(?P<rest>[^\s@'\"`]*(?:[ \t]+[^\s@'\"`]*)+)@")


def userinfo_span(value: str) -> Optional[tuple[int, int]]:
    """(start, end) of the credentials a URL or host value carries before its host, or None."""
    at = value.rfind("@")
    if at < 0:
        return None
    scheme = _SCHEME.match(value)
    if scheme and value.startswith("//", scheme.end()):
        start = scheme.end() + 2
    elif value.startswith("//"):
        start = 2
    elif scheme and scheme.group(0)[:-1].lower() in _URL_SCHEMES:
        start = scheme.end()  # opaque: 'http:user:pass@proxy:3128'
    else:
        # no scheme: 'user:password@host[:port]' (a colon before the '@'), whatever the password holds ('/' too: a client
        # that prepends 'http://' may read it otherwise, a person reads a password), unless it is an image reference
        # pinned by digest: what follows its '@' is a digest, which no host[:port] is. A bare 'user@host' has no secret.
        if ":" not in value[:at] or _IMAGE_DIGEST.match(value) or _IMAGE_SHORT_DIGEST.match(value):
            return None
        return (0, at)
    if at < start:
        return None
    if value.startswith(MASK + "@", start):
        return start, start + len(MASK)  # already masked
    # Parsers disagree on '#', '?' and '/' inside credentials: only a value both of Go's parsers read without a user
    # (its '@' in a path, query or fragment) carries none; otherwise everything up to the last '@' is masked.
    readings = []
    for parser in (parse, parse_request_uri):
        try:
            readings.append(parser(value))
        except GoURLError:
            return start, at
    if all(url.user is None and "@" not in url.opaque for url in readings):
        return None
    return start, at


def redact_url(value: str) -> str:
    span = userinfo_span(value)
    return value if span is None else value[:span[0]] + MASK + value[span[1]:]


def has_credentials(text: str) -> bool:
    """Does ``text`` (one value, or a list or config blob of them) carry a URL or host with credentials?"""
    return userinfo_span(text) is not None or any(userinfo_span(t) is not None for t in _TOKEN.findall(text))


def is_secret_name(name: str) -> bool:
    """Is ``name`` (a setting, or a field path ending in one) a secret setting, however it is cased or spelt?"""
    key = _norm(re.split(r"[:.]", name)[-1]) if name else ""
    if not key:
        return False
    try:
        from .profile import SECRET_KEYS  # late: profile imports errors, which imports this module
    except ImportError:  # pragma: no cover - only while the package itself is half imported
        SECRET_KEYS = {}
    return key in {_norm(k) for k in SECRET_KEYS} or any(hint in key for hint in _SECRET_HINTS)


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def redact_value(value: Any, name: str = "") -> Any:
    """What an error may show of ``value`` (the value of setting or field ``name``)."""
    if value is not None and is_secret_name(name):
        return value if value in (HIDDEN, "(secret)") else HIDDEN  # the placeholders callers already show
    if isinstance(value, str):
        return PEM_SHOWN if "-----BEGIN" in value or _PRIVATE.search(value) else redact(_mask_token_users(redact_url(value)))
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(v) for v in value)
    if isinstance(value, dict):
        return {k: redact_value(v, str(k)) for k, v in value.items()}
    return value


def authority(value: str) -> tuple[int, str]:
    """Where a user may stand in a URL or host value, and that text: after the scheme's '//' (if any), up to the first '/',
    '?' or '#' ('registry.npmjs.org/@types/' has an '@' in its path only: an npm scope, no user)."""
    scheme = _SCHEME.match(value)
    start = scheme.end() + 2 if scheme and value.startswith("//", scheme.end()) else 2 if value.startswith("//") else 0
    return start, re.split(r"[/?#]", value[start:], maxsplit=1)[0]


def token_user_span(value: str) -> Optional[tuple[int, int]]:
    """(start, end) of a user name without a password that is long enough to be a token (16 characters or more, as
    ``_secret_userinfo`` counts) before the host of ``value`` ('ghp_<36>@registry.example.com:5000'), or None."""
    start, text = authority(value)
    at = text.rfind("@")
    if at < 16 or ":" in text[:at] or text.startswith(MASK) or _IMAGE_DIGEST.match(value) or _IMAGE_SHORT_DIGEST.match(value):
        return None
    return start, start + at


def _mask_token_users(text: str) -> str:
    """``text`` with every token-like user name before a host masked (an error's value; a password is redact_url's)."""
    def masked(match: re.Match) -> str:
        word = match.group(0)
        lead = len(word) - len(word.lstrip("([{<"))
        span = token_user_span(word[lead:])
        return word if span is None else word[:lead + span[0]] + MASK + word[lead + span[1]:]
    return _TOKEN.sub(masked, text) if "@" in text else text


def redact(text: str) -> str:
    """``text`` with the credentials of every URL in it masked, and any PEM block but a certificate left out."""
    if "=" in text:
        text = _QUERY_PAIR.sub(lambda m: _pair_shown(m, False), text)
        if ";" in text:
            text = _CONNECTION_PAIR.sub(lambda m: _pair_shown(m, True), text)
    if "@" not in text and "-----BEGIN" not in text:
        return text
    text = _PEM_BLOCK.sub(lambda m: m.group(0) if m.group(1) == "CERTIFICATE" else f"(PEM '{m.group(1)}' block, not shown)", text)
    text = _SPLIT_USERINFO.sub(_mask_split, text)
    # a quoted value may hold spaces (a malformed password); unquoted, a URL ends at white space
    text = _QUOTED.sub(lambda m: m.group(0)[0] + _redact_quoted(m.group(0)[1:-1]) + m.group(0)[-1], text)
    return _TOKEN.sub(lambda m: redact_url(m.group(0)), text)


def _pair_shown(match: re.Match, connection_string: bool) -> str:
    if not secret_parameter(match.group("name"), connection_string):
        return match.group(0)
    return match.group("lead") + match.group("name") + "=" + HIDDEN


def _redact_quoted(inner: str) -> str:
    """A quoted value whose every word with an '@' is a whole URL (a log line quoted in JSON: 'GET http://u:p@host/x -')
    is masked word by word, keeping the line's other fields; anything else as one value, masked up to its last '@'."""
    probe = inner.replace(MASK + "@", "masked@")  # already masked by an earlier pass: MASK holds a space
    words = [word for word in probe.split() if "@" in word]
    if len(probe.split()) > 1 and words and all(_SCHEME.match(word) and "://" in word for word in words):
        return _TOKEN.sub(lambda m: redact_url(m.group(0)), inner)
    return redact_url(inner)


def _mask_split(match: re.Match) -> str:
    if match.group("after").isdigit():  # 'http://proxy:3128 ... bob@corp': a host and port, then other words
        return match.group(0)
    return match.group("head") + MASK + "@"


def redact_message(text: str, *values: Any) -> str:
    """``text``, which quotes ``values`` (or parts of them, as Go's parse errors do), redacted."""
    for value in _strings(values):
        for word in _TOKEN.findall(value) if "@" in value else ():  # a token before a host, wherever the message quotes it
            token = token_user_span(word.lstrip("([{<"))
            if token is not None:
                text = text.replace(word.lstrip("([{<")[token[0]:token[1]], MASK)
        span = userinfo_span(value)
        if span is None:
            continue
        secret = value[span[0]:span[1]]
        shown = redact_url(value)
        text = text.replace(value, shown).replace(_go_inner(value), _go_inner(shown))
        # Go's errors quote what they stumbled on: a piece of the credentials (":pa", "%zz", " ") is masked too
        pieces = (secret, _go_inner(secret))
        text = _GO_QUOTED.sub(lambda m: f'"{MASK}"' if m.group(1) and (any(m.group(1) in p for p in pieces) or _overlaps(value, span, m.group(1)))
                              else m.group(0), text)
    return redact(text)


def _overlaps(value: str, span: tuple[int, int], quoted: str) -> bool:
    """Does ``quoted`` (as Go quotes it) stand anywhere in ``value`` across the credentials' span? ('%Q@' for
    'http://alice:Q@/%Q@proxy': the escape Go stumbled on ends at the '@' after the password; '%\\xe2\\x82' for a '%€'
    in one: Go quotes bytes, so the search is in bytes.)"""
    def utf8(text: str) -> bytes:
        return text.encode("utf-8", "surrogatepass")

    raw, low, high = utf8(value), len(utf8(value[:span[0]])), len(utf8(value[:span[1]]))
    for piece in {utf8(quoted), _unquoted(quoted)}:
        start = raw.find(piece)
        while piece and start >= 0:
            if start < high and start + len(piece) > low:
                return True
            start = raw.find(piece, start + 1)
    return False


def _unquoted(quoted: str) -> bytes:
    """The bytes Go's %q quoted (its escapes undone); the text's own bytes when it cannot be read so."""
    raw = quoted.encode("utf-8", "surrogatepass")
    if b"\\" not in raw:
        return raw
    try:
        with warnings.catch_warnings():  # an escape Python does not know ('\\í') is kept as written, as Go wrote it
            warnings.simplefilter("ignore", DeprecationWarning)
            return codecs.escape_decode(raw)[0]
    except (ValueError, UnicodeError):
        return raw


def _go_inner(text: str) -> str:
    from .goip import go_quote

    return go_quote(text)[1:-1]


def _strings(values: Any) -> Iterator[str]:
    for value in values:
        if isinstance(value, str):
            yield value
        elif isinstance(value, (list, tuple, set, frozenset)):
            yield from _strings(value)
        elif isinstance(value, dict):
            yield from _strings(value.values())


# -- settings ----------------------------------------------------------------------------------------------------------
# PEM text: egress/pem.py refuses credentials outside its certificate blocks and deploys nothing outside them. (An image
# reference pinned by digest is no URL with credentials for has_credentials, so egressProxyImage is checked like the rest.)
_NOT_URLS = frozenset({"proxy_trusted_ca"})
_PROXY_URLS = frozenset({"http_proxy", "https_proxy"})


def credentials_path(value: Any, path: str = "") -> Optional[str]:
    """Where in ``value`` (text, or lists and mappings of it, such as an own entry) a string carries credentials: its
    path ('destination', 'approval.reference', '[0].destination'; '' for the value itself), or None."""
    if isinstance(value, str):
        # a destination holds no '@' at all ('token@host' is a token before the host); prose may quote a URL with a bare
        # user ('ssh://git@github.com/<org>/<repo>', as a vendor page writes it), never with a password or a token
        # ('@' only in its authority: 'registry.npmjs.org/@types/' is an npm scope in the path)
        return path if ("@" in authority(value)[1] if path.rpartition(".")[2] == "destination" else _secret_userinfo(value)) else None
    if isinstance(value, dict):
        items = ((f"{path}.{key}" if path else str(key), item) for key, item in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{path}[{index}]", item) for index, item in enumerate(value))
    else:
        return None
    return next((found for found in (credentials_path(item, where) for where, item in items) if found is not None), None)


def _secret_userinfo(text: str) -> bool:
    """Does a URL or host in ``text`` carry a password ('user:password@') or a token (a long user name) before its host?"""
    for token in _TOKEN.findall(text):
        token = token.lstrip("([{<")
        span = userinfo_span(token)
        if span is not None and (":" in token[span[0]:span[1]] or span[1] - span[0] >= 16 or token.startswith(MASK, span[0])):
            return True
    return False


def shown_with_credentials(value: Any) -> Any:
    """A value ``credentials_path`` found credentials in, as an error may show it."""
    if isinstance(value, str) and "@" in value and redact_url(value) == value:
        return MASK + value[value.rfind("@"):]  # 'token@host': no user:password for redact_url, still a token
    return redact_value(value)


def entry_credentials_problem(where: str) -> tuple[str, str]:
    """(problem, fix) for an own entry's field ``where`` that carries credentials (a destination, a reference URL)."""
    return (f"{where} carries credentials (a user, password or token before the host), which would be stored and shown in plain text",
            "remove them: an entry names the host (and path) only, and no firewall or proxy rule takes credentials; and change that "
            "password or token: it has been in the file")


def refuse_credentials(field: str, value: Any) -> Any:
    """A setting's ``value`` (a string or a list of them) unchanged, or ValueError (an AddressError: problem and fix)
    when it carries credentials: only the secret proxyCredentials may, and those never sit in a stack file."""
    from .addresses import AddressError  # late: errors imports this module, so it imports no other core module at load

    if field in _NOT_URLS:
        return value
    if isinstance(value, dict):  # a mapping setting (sourceGroups, runsOn): every string in it, named by its path
        inner = credentials_path(value)
        if inner is not None:
            raise AddressError(*entry_credentials_problem(f"field {inner}" if inner else "the value"))
        return value
    items = value if isinstance(value, (list, tuple)) else [value]
    for number, item in enumerate(items):
        if isinstance(item, (dict, list, tuple)):  # an own entry, a registry, a place: every string in it, named by its path
            inner = credentials_path(item)
            if inner is not None:
                where = f"item {number}{'.' if inner and not inner.startswith('[') else ''}{inner}"
                raise AddressError(*entry_credentials_problem(where))
        elif isinstance(item, str) and has_credentials(item):
            where = f"item {number} " if isinstance(value, (list, tuple)) else ""
            if field in _PROXY_URLS:
                raise AddressError(f"{where}the URL carries credentials, which would be stored in plain text",
                                   "remove them from the URL and run: pulumi config set --secret egress-matrix:proxyCredentials "
                                   "'user:password' (and change that password: it has been in the stack file)")
            if field == "proxy_readiness_endpoints":
                fix = "remove them: the operator fetches readiness endpoints without them, and the Proxy object would show them to anyone who can read it"
            else:
                fix = "remove them: this setting takes none (proxy credentials go in the secret egress-matrix:proxyCredentials)"
            raise AddressError(f"{where}carries credentials (a user and password before the host), which would be stored and shown in plain text",
                               f"{fix}; and change that password: it has been in the stack file")
    return value
