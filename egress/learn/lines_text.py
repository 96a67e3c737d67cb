"""Log-derived text made safe to print: a log line is written by whoever sent the request (a Host, a URL, a rule name)."""
from __future__ import annotations

import unicodedata

__all__ = ["printable"]


def printable(text: str) -> str:
    """``text`` with every control character escaped (``\\x1b``, ``\\u202e``): a log line is written by whoever sent the
    request (a Host, a URL, a rule name), and its fields must not drive the terminal that shows them (escape sequences,
    line breaks, bidirectional overrides). C0/C1 controls, DEL, format characters (Cf) and line/paragraph separators."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else
                   c.encode("unicode_escape").decode("ascii") if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")
                   else c for c in text)
