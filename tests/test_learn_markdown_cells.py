"""egress/markdown_cells.py: hostile text stays one literal cell of one row (review of issue 21, item 4).

Rendered with markdown-it-py's CommonMark parser plus its GFM table rule; the table-row splitting cases are also
checked against GFM's rule as cmark-gfm (GitHub's renderer) applies it: a backslash escapes the next character,
so '\\\\|' is an escaped backslash followed by a cell-ending pipe.
"""
from __future__ import annotations

import html
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from egress.markdown_cells import cell, code_cell

HOSTILE = [
    "|\n\n### Owned [details](https://evil.example/)",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "![i](https://evil.example/p.png)",
    "`code` and ``two``",
    "a\\|b",
    "trailing backslash\\",
    "\\",
    "[x]: https://evil.example/",
    "line\rbreak\u2028sep",
    "<https://evil.example/>",
    "plain.example.com",
    "` starts with a backtick",
    "",
]


def _render(cells: list[str]) -> str:
    md = MarkdownIt("commonmark").enable("table")
    return md.render("| A | B |\n|---|---|\n| " + " | ".join(cells) + " |\n")


def _cells(rendered: str) -> list[str]:
    body = rendered.split("<tbody>", 1)[1]
    assert body.count("<tr>") == 1, rendered
    return re.findall(r"<td>(.*?)</td>", body, re.S)


def _gfm_split(row: str) -> list[str]:
    """Cells of a row by cmark-gfm's scanner (extensions/table.c: a cell is (escaped_char | [^|\\r\\n])+)."""
    return re.findall(r"(?:\\.|[^|\r\n])+", row.strip().strip("|")) if "|" in row else [row]


@pytest.mark.parametrize("text", HOSTILE)
def test_cell_is_one_literal_cell(text: str) -> None:
    rendered = _render([cell(text), "end"])
    got = _cells(rendered)
    assert len(got) == 2 and got[1] == "end", rendered
    for tag in ("<a ", "<img", "<script", "<h3", "<code", "<p>"):
        assert tag not in got[0], rendered
    expected = re.sub(r"[\r\n\u2028\u2029]+", " ", text).strip()
    assert html.unescape(got[0]) == expected
    assert "\n" not in cell(text) and "\r" not in cell(text)
    assert len(_gfm_split(f"| {cell(text)} | end |")) == 2


@pytest.mark.parametrize("text", HOSTILE)
def test_code_cell_is_one_code_span(text: str) -> None:
    rendered = _render([code_cell(text), "end"])
    got = _cells(rendered)
    assert len(got) == 2 and got[1] == "end", rendered
    for tag in ("<a ", "<img", "<script", "<h3"):
        assert tag not in got[0], rendered
    assert len(_gfm_split(f"| {code_cell(text)} | end |")) == 2
    expected = re.sub(r"[\r\n\u2028\u2029]+", " ", text)
    if "\\" in text and "|" in text:  # shown as literal text, not a code span: see code_cell
        assert html.unescape(got[0]) == expected.strip()
    elif expected.strip():
        assert got[0].startswith("<code>") and got[0].endswith("</code>")
        assert html.unescape(got[0][len("<code>"):-len("</code>")]) == expected


def test_the_reviewers_sni_is_not_a_heading_or_link() -> None:
    sni = "x|\n\n### Deploy now [details](https://evil.example/)"
    assert cell(sni) == "x\\| ### Deploy now \\[details\\](https\\://evil.example/)"


# -- review 21 item 6: GFM's extended autolinks, character references, bidi controls ---------------------------------

@pytest.mark.parametrize("text, escaped", [
    ("www.evil-login.example/reset", "www\\.evil-login.example/reset"),
    ("WWW.evil.example", "WWW\\.evil.example"),
    ("https://evil.example/phish", "https\\://evil.example/phish"),
    ("ftp://evil.example/x", "ftp\\://evil.example/x"),
    ("ops@evil.example", "ops\\@evil.example"),
    ("mailto:ops@evil.example", "mailto:ops\\@evil.example"),
    ("@octocat and @org/team", "\\@octocat and \\@org/team"),
    ("&#96;x&#96; &lt;img src=x&gt;", "&amp;#96;x&amp;#96; &amp;lt;img src=x&amp;gt;"),
    ("a&b", "a&amp;b"),
    ("abc\u202egnp.exe \u2066x\u2069 \u200f", "abcU+202Egnp.exe U+2066xU+2069 U+200F"),
    ("host:443", "host:443"),  # a ':' that starts no '://' stays as it is
])
def test_cell_breaks_autolinks_references_and_bidi(text: str, escaped: str) -> None:
    assert cell(text) == escaped
    got = _cells(_render([cell(text), "end"]))
    shown = re.sub(r"[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]", lambda m: f"U+{ord(m.group(0)):04X}", text)
    assert html.unescape(got[0]) == shown and "<a " not in got[0] and "<img" not in got[0]


def test_code_cell_shows_bidi_controls() -> None:
    assert code_cell("a\u202eb") == "`aU+202Eb`"


# GFM 0.29 §6.9: where each extended autolink is recognised, read on the Markdown source (the escaped text). A
# backslash before '.', ':' or '@' is an escape (§2.4) that ends the text the autolink scanner reads.
_WWW = re.compile(r"(?:^|[\s*_~(])www\.", re.I)
_URL = re.compile(r"(?:https?|ftp)://", re.I)
_EMAIL = re.compile(r"[A-Za-z0-9.+_-]@")


@settings(max_examples=300)
@given(st.lists(st.sampled_from(["www.", "WwW.", "http://", "HTTPS://", "ftp://", "@", "ops", "evil.example", "/", " ", "(", "*",
                                 "_", "~", ":", ".", "\\", "&", "#96;", "mailto:", "xmpp:"]), max_size=12).map("".join))
def test_no_extended_autolink_survives_cell(text: str) -> None:
    escaped = cell(text)
    assert not _WWW.search(escaped) and not _URL.search(escaped) and not _EMAIL.search(escaped), escaped
    assert "&" not in escaped.replace("&amp;", "")
