"""How outputs cite a document: by its public address, which anyone reading a table, a pull-request comment or a
firewall comment can open (the copies the project transcribed stay with its records, named in ``doc``)."""
from __future__ import annotations

from typing import Optional
from urllib.parse import urlsplit

URL_FIX = "write the https address a reader can open: the docs page, or a github.com address at the commit read"


def public_url_problem(value: object) -> Optional[str]:
    """Why ``value`` is not a public https address a reader can open, or None when it is one."""
    if not isinstance(value, str) or not value:
        return "a source needs its public address"
    if value != value.strip() or any(c.isspace() for c in value):
        return "an address has no spaces"
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return "not a valid address"
    if parts.scheme != "https":
        return "not an https address"
    host = parts.hostname or ""
    if not host or "." not in host or parts.username or parts.password or port not in (None, 443):
        return "not a public web address (a host name, no credentials, no port)"
    return None


def cite(document: str, section: str) -> str:
    """One citation as a table cell, a CSV field or a comment carries it."""
    return f"{document} § {section}" if section else document


def markdown_link(text: str, url: str) -> str:
    """A Markdown link whose text cannot break the table cell it sits in."""
    return f"[{text.replace('[', '(').replace(']', ')')}]({url.replace(' ', '%20').replace(')', '%29')})"
