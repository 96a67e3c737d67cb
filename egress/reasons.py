"""A reason a person writes to accept something wider or other than the default: ``allowBroadEgress``, an entry's
``broad``, a matrix row's ``direct.because`` and ``noTlsInspection.reason``. One rule for all of them, since each one
lifts a guard rail: ten spaces or a tab are no reason, nor a placeholder ('<reason>', 'TODO', 'xxx') or one word
repeated ('aaaaaaaaaa'); a reason is read in reviews and one-line reports."""
from __future__ import annotations

import re
import unicodedata
from typing import Annotated

from pydantic import AfterValidator

from .addresses import AddressError

MIN_REASON = 10
_WORD = re.compile(r"[^\W\d_]{2,}")  # two letters in a row, in any script
# '<reason>', the fix texts' own placeholder, copied as it is: one standing as a word. Inside a name it is a pattern the
# matrix's reasons describe ('AzureCloud.<region>', '<vault-name>.vault.azure.net'), not a gap.
_PLACEHOLDER = re.compile(r"(?<![^\s'\"(])<[^<>]+>(?![\w.\-/<:])")
# A note to write the reason later; not a word of a name ('TODO-list app', 'TBD-123', 'xxx.corp').
_TO_DO = re.compile(r"(?<![^\W_])(?<!\w[-.])(todo|tbd|fixme|x{3,})(?![^\W_]|[-.]\w)", re.IGNORECASE)
# Scripts written without spaces between words: a sentence there is one run of letters, so its distinct letters count.
_UNSPACED = ("CJK", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN")


def check_reason(value: str) -> str:
    """``value`` without its surrounding white space, if it is one line of at least MIN_REASON characters holding a word."""
    if any(not c.isprintable() for c in value):  # a tab or line break: printable characters only, one line
        raise AddressError("holds a control character (a tab, a line break)", "write the reason on one line, in words")
    text = value.strip()
    fix = "write why in words, e.g. 'lab cluster without a firewall, ticket OPS-42'"
    if (placeholder := _PLACEHOLDER.search(text)) is not None:
        raise AddressError(f"holds the placeholder '{placeholder.group()}', not a reason", f"replace it: {fix}")
    if (later := _TO_DO.search(text)) is not None:
        raise AddressError(f"says '{later.group()}': a reason to write later is no reason yet", fix)
    if len(text) < MIN_REASON or (len({w.lower() for w in _WORD.findall(text)}) < 2 and len(_unspaced_letters(text)) < 4):
        raise AddressError(f"is no reason (at least {MIN_REASON} characters besides surrounding spaces, and two different words)", fix)
    return text


def _unspaced_letters(text: str) -> set[str]:
    return {c for c in text if c.isalpha() and unicodedata.name(c, "").startswith(_UNSPACED)}


Reason = Annotated[str, AfterValidator(check_reason)]
