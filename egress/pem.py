"""What a CA bundle may hold: public CERTIFICATE blocks only.

OpenShift's network operator (library-go ``CertsFromPEM``) skips every other PEM block, so a CA's private key pasted
into ``proxyTrustedCa`` would pass the operator and land in a plain ConfigMap, AKS's plain ``trustedCa`` output, the
state, the rendered files and CI artifacts. This module finds such material without ever quoting it: findings name the
block's number, its line and its type (a short label such as ``RSA PRIVATE KEY``), never its content.

Text outside the blocks is never deployed: bundles people copy carry comment and title lines (OpenShift's own
trusted-ca-bundle writes '# <CA name>' before each block, curl's cacert.pem a title and '=====' line), which the operator
skips anyway, so ``bundle_as_deployed`` keeps the CERTIFICATE blocks only. Outside text that looks like a secret (a URL
with credentials, a line naming a password or token, base64 that may be a key's body pasted without its BEGIN/END lines)
is refused instead, so that the person who pasted it learns to rotate it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from .addresses import AddressError
from .redact import redact
from .secret_words import says_secret

_BEGIN = re.compile(r"-----BEGIN ([^\r\n]*?)-----")
_END = re.compile(r"-----END ([^\r\n]*?)-----")
_PRIVATE_TEXT = re.compile(r"(?i)private[ _-]?key(?![ _-]?usage)|private-lines:")  # PEM labels, PuTTY key files, prose pasted with a key
_LABEL = re.compile(r"[A-Z0-9][A-Z0-9 ]{0,39}")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{20,}={0,2}")  # a PEM body line is 64 of these; a key's body is nothing else
_CERTIFICATE_BLOCK = re.compile(r"^-----BEGIN CERTIFICATE-----[ \t\r]*\n.*?^-----END CERTIFICATE-----[ \t\r]*$", re.S | re.M)


_PASSWORD_EXPOSED = ("change that password (or token): it has been in the stack file, so treat it as exposed, even after the line is "
                     "removed (the file may already be in version control, with the value in earlier commits and every clone)")
_EXPOSED = ("rotate that key (issue a new one and revoke what the old one signed): it has been in the stack file, so treat it as "
            "exposed. Warning: the stack file may already be in version control, where deleting the lines leaves the key in earlier "
            "commits and every clone: rotate it even so, and remove it from the history (e.g. git filter-repo --replace-text), then "
            "have every clone fetched again")

# A CERTIFICATE block whose body is no certificate: it may be a key's body pasted under the certificate's lines.
NOT_A_CERTIFICATE_FIX = ("give the CA bundle as PEM 'CERTIFICATE' blocks (public certificates only); a block whose body is no certificate "
                         f"may be key material pasted under CERTIFICATE lines: if it was, {_EXPOSED}")


@dataclass(frozen=True)
class Foreign:
    """A block (or stray key text) that is not a certificate: ``number`` counts BEGIN lines (0 outside a block)."""
    number: int
    line: int
    label: str
    private: bool

    def describe(self) -> str:
        if not self.number:
            return f"line {self.line} holds private key text outside a PEM block"
        return f"block {self.number} (line {self.line}) is a PEM '{self.label}' block" + (" (private key material)" if self.private else ", not a CERTIFICATE")


def _label(raw: str) -> str:
    """The block type as it may be shown: a plain upper-case label, else a placeholder (the label is user text)."""
    return raw if _LABEL.fullmatch(raw) else "(unrecognised type)"


def foreign_blocks(text: str) -> list[Foreign]:
    """Every block of ``text`` that is not a CERTIFICATE, and any private key text outside blocks, in order."""
    if "-----BEGIN" not in text and not _PRIVATE_TEXT.search(text):
        return []
    found: list[Foreign] = []
    inside = ""
    number = 0
    for line_number, line in enumerate(text.splitlines(), 1):
        begin = _BEGIN.search(line)
        if begin:
            number += 1
            inside = begin.group(1)
            if inside != "CERTIFICATE":
                label = _label(inside)
                private = "PRIVATE" in inside.upper() or "ENCRYPTED" in inside.upper()
                found.append(Foreign(number, line_number, label, private))
        elif not inside and _PRIVATE_TEXT.search(line):
            found.append(Foreign(0, line_number, "", True))
        if _END.search(line):
            inside = ""
    return found


_KEY_BEGIN = re.compile(r"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----")


def private_key_label(value: object) -> Optional[str]:
    """The type of the first PEM private key block anywhere in ``value`` (text, or lists and mappings of it, keys too)."""
    if isinstance(value, str):
        found = _KEY_BEGIN.search(value)
        return found.group(1) if found else None
    items = [*value.keys(), *value.values()] if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    return next((label for label in map(private_key_label, items) if label), None)


def private_key_problem(label: str, where: str = "") -> AddressError:
    return AddressError(f"{where}holds a PEM '{label}' block (private key material), which would be stored in plain text",
                        f"remove it; {_EXPOSED}")


def check_no_private_key(value: object) -> None:
    """Raise AddressError when a setting that holds no PEM (text, a list or a mapping) holds a PEM private key block."""
    for number, item in enumerate(value if isinstance(value, (list, tuple)) else [value]):
        label = private_key_label(item)
        if label:
            raise private_key_problem(label, f"item {number} " if isinstance(value, (list, tuple)) else "")


def outside_problem(text: str) -> Optional[AddressError]:
    """The first line outside the CERTIFICATE blocks that looks like a secret, or a BEGIN/END line holding more than its
    marker, as a refusal naming its line and what it looks like (never its text); None when the text outside is blank or
    harmless (a comment, a title)."""
    lines = text.splitlines()
    inside, unterminated = _block_lines(lines)
    base64_lines: list[int] = []  # a run of outside lines that are base64 only (a body split short or by spaces)
    for index, line in enumerate(lines):
        where = f"line {index + 1}"
        marker = _BEGIN.search(line) or _END.search(line)
        if marker is not None:
            extra = (line[:marker.start()] + " " + line[marker.end():]).strip()
            if extra == "\ufeff":
                return AddressError(f"{where} starts with a byte-order mark (U+FEFF) before its BEGIN marker: the network "
                                    "operator (Go's pem.Decode) would skip the block", "save the bundle as UTF-8 without a BOM")
            if extra:
                return _marker_problem(f"{where} (a PEM {'BEGIN' if marker.re is _BEGIN else 'END'} line)", extra)
        if marker is not None or index in inside:
            base64_lines = []
            continue
        problem = _secret_problem(f"{where} (outside the CERTIFICATE blocks)", line, index not in unterminated)
        if problem is not None:
            return problem
        base64_lines = base64_lines + [index] if _BASE64_ONLY.fullmatch(line) and index not in unterminated else []
        if base64_lines and _looks_base64("".join("".join(lines[i].split()) for i in base64_lines)):
            return _base64_problem(f"line {base64_lines[0] + 1} (outside the CERTIFICATE blocks)")
    if unterminated:
        begin = min(unterminated) - 1
        return AddressError(f"line {begin + 1} begins a PEM block that has no END line: the network operator would skip it",
                            "end it with its -----END ...----- line, or remove it, keeping only the CA's CERTIFICATE blocks")
    return None


# `openssl x509 -text` prints a certificate's names as 'email:ca@example.com', 'URI:http://...': a name, no user before a
# host (OpenSSL's GENERAL_NAME_print prefixes). Each word is judged, not the line: 'Issuer: ..., emailAddress = a@b' is
# no 'user:password@host'.
_OPENSSL_NAME = re.compile(r"^(?:email|DNS|URI|DirName|othername|RID|IP Address):", re.IGNORECASE)
_BASE64_ONLY = re.compile(r"[ \t]*[A-Za-z0-9+/][A-Za-z0-9+/ \t]*={0,2}[ \t]*")


def _looks_base64(joined: str) -> bool:
    """A key's body, however it was split: long, with digits and letters of both cases, and mostly capitals and digits as
    random base64 is (prose, even without spaces, is mostly lower case; openssl's 'sha256WithRSAEncryption' is short; a
    serial number or fingerprint in hex has one case)."""
    dense = sum(1 for c in joined if not c.islower())
    return len(joined) >= 40 and re.search(r"[0-9+/]", joined) is not None and re.search(r"[a-z]", joined) is not None \
        and re.search(r"[A-Z]", joined) is not None and dense >= 0.3 * len(joined)


def _block_lines(lines: list[str]) -> tuple[set[int], set[int]]:
    """(indexes of the lines inside BEGIN/END pairs, indexes of the lines after a BEGIN that no END closes)."""
    inside: set[int] = set()
    begin = None
    for index, line in enumerate(lines):
        if _BEGIN.search(line):
            begin = index
        elif begin is not None and _END.search(line):
            inside.update(range(begin + 1, index))
            begin = None
    return inside, set(range(begin + 1, len(lines))) if begin is not None else set()


def _secret_problem(where: str, text: str, base64_counts: bool = True) -> Optional[AddressError]:
    """The refusal for ``text`` (a line outside the blocks, or what a BEGIN/END line holds besides its marker) when it
    looks like a secret: credentials before a host, a key's base64 body, or a word that names a password."""
    words = " ".join(_OPENSSL_NAME.sub("", word) for word in text.split())
    if redact(words) != words:  # the one redaction's judgement, word by word ('http://alice:pa ss@proxy' too)
        return AddressError(f"{where} holds a URL or host with credentials (a user and password before the host)",
                            f"remove the line (a CA bundle holds certificates only), and {_PASSWORD_EXPOSED}")
    if base64_counts and any(_BASE64_RUN.fullmatch(word) and _looks_base64(word) for word in text.split()):
        return _base64_problem(where)
    if says_secret(text):
        return AddressError(f"{where} names a password, token or credential", f"remove the line (a CA bundle holds certificates only), "
                            f"and if it held one, {_PASSWORD_EXPOSED}")
    return None


def _base64_problem(where: str) -> AddressError:
    return AddressError(f"{where} holds base64 text outside a PEM block: it may be a private key's body pasted without its "
                        "BEGIN/END lines", f"remove it, keeping only the CA's CERTIFICATE blocks; if it was key material, {_EXPOSED}")


def _marker_problem(where: str, extra: str) -> AddressError:
    """A BEGIN/END line with text before or after its marker: Go's pem.Decode, as the operator reads the bundle, skips
    such a block, and the text would be deployed as written."""
    secret = _secret_problem(where, extra)
    if secret is not None:
        return AddressError(f"{secret.problem} besides its marker", secret.fix.replace("remove the line", "remove that text, keeping the marker alone on its line", 1))
    return AddressError(f"{where} holds text besides its marker: the network operator (Go's pem.Decode) would skip the block",
                        "keep the marker alone on its line (-----BEGIN CERTIFICATE----- / -----END CERTIFICATE-----) and move any "
                        "comment to a line of its own")


def bundle_as_deployed(text: str) -> str:
    """The CA bundle as it is deployed: its CERTIFICATE blocks only, one after the other (comment and title lines, which
    the operator skips, are left out, so nothing outside a block reaches a ConfigMap, an output or a file)."""
    if not _CERTIFICATE_BLOCK.sub("", text).strip() or not _CERTIFICATE_BLOCK.search(text):
        return text  # nothing outside the blocks: as written (a stack's ConfigMap does not change); no block: refused later
    return "".join(block.group(0).replace("\r\n", "\n").rstrip(" \t\r") + "\n" for block in _CERTIFICATE_BLOCK.finditer(text))


def check_certificates_only(text: str) -> None:
    """Raise AddressError (problem, fix) naming the first block that is not a certificate, or the first line outside the
    blocks that looks like a secret; never quotes the text."""
    found = foreign_blocks(text)
    if not found:
        outside = outside_problem(text)
        if outside is not None:
            raise outside
        return
    others = f" (and {len(found) - 1} more that are not certificates)" if len(found) > 1 else ""
    private = next((f for f in found if f.private), None)
    if private is not None:
        raise AddressError(f"{private.describe()}{others}: a CA bundle is public, and this text would be stored in plain text (the "
                           "trusted-CA ConfigMap, AKS's trustedCa output, Pulumi's state, rendered files and CI artifacts)",
                           f"remove every block that is not a CERTIFICATE, keeping only the CA's certificates, and {_EXPOSED}")
    raise AddressError(f"{found[0].describe()}{others}: the network operator would skip it", "keep only the CA's CERTIFICATE blocks")
