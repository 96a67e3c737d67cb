"""A reason a person writes to accept something wider or other than the default: ``allowBroadEgress``, an entry's
``broad``, a matrix row's ``direct.because`` and ``noTlsInspection.reason``. One rule for all of them, since each one
lifts a guard rail: ten spaces or a tab are no reason, and a reason is read in reviews and one-line reports."""
from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from .addresses import AddressError

MIN_REASON = 10
_WORD = re.compile(r"[^\W\d_]{2,}")  # two letters in a row, in any script


def check_reason(value: str) -> str:
    """``value`` without its surrounding white space, if it is one line of at least MIN_REASON characters holding a word."""
    if any(not c.isprintable() for c in value):  # a tab or line break: printable characters only, one line
        raise AddressError("holds a control character (a tab, a line break)", "write the reason on one line, in words")
    text = value.strip()
    if len(text) < MIN_REASON or not _WORD.search(text):
        raise AddressError(f"is no reason (at least {MIN_REASON} characters besides surrounding spaces, with words)",
                           "write why in words, e.g. 'lab cluster without a firewall, ticket OPS-42'")
    return text


Reason = Annotated[str, AfterValidator(check_reason)]
