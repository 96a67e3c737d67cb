"""egress/markdown_cells.py: hostile text stays one literal cell of one row (review of issue 21, item 4).

Rendered with markdown-it-py's CommonMark parser plus its GFM table rule; the table-row splitting cases are also
checked against GFM's rule as cmark-gfm (GitHub's renderer) applies it: a backslash escapes the next character,
so '\\\\|' is an escaped backslash followed by a cell-ending pipe.
"""
from __future__ import annotations

import html
import re

import pytest
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
    assert cell(sni) == "x\\| ### Deploy now \\[details\\](https://evil.example/)"
