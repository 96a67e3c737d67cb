"""Text from outside (a logged host, a proxy's reply) made inert in a Markdown table cell (pure).

The summaries of ``egress learn`` and ``egress probe`` are meant for a pull-request comment or $GITHUB_STEP_SUMMARY,
both rendered as GitHub Flavored Markdown with raw HTML allowed; a cell's text may come from whoever sent the request
or answered it. ``cell`` keeps such text to one literal cell: no row or table break, no heading, link, image, code span
or HTML tag. ``code_cell`` writes it as a code span instead (nothing in a code span is markup; only its fence and a
table's pipe need care).

Rules relied on (CommonMark 0.31.2 §2.4 "Backslash escapes": any ASCII punctuation character may be backslash-escaped
and is then literal, so ``\\<`` starts no HTML tag and ``\\[`` no link; §6.1 code spans: a span ends at a backtick run
of its opening length, one space is stripped from each end when both ends are spaces; GFM 0.29 §4.10 tables: a row
is one line, a cell ends at an unescaped ``|`` even inside a code span, and ``\\|`` gives a literal pipe in a cell,
inside code spans too).
"""
from __future__ import annotations

import re

# Backslash first, so the escapes added after it are not themselves escaped; then the characters that open markup
# across a cell: table pipes, code spans, HTML tags and autolinks, links and images.
_SPECIAL = re.compile(r"([\\|`<>\[\]])")
# A row must stay one line: CommonMark line endings (\n, \r) and any other control character become a space.
_BREAKS = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")


def _one_line(text: object) -> str:
    return _BREAKS.sub(" ", str(text))


def cell(text: object) -> str:
    """``text`` as literal text in one table cell."""
    return _SPECIAL.sub(r"\\\1", _one_line(text))


def code_cell(text: object) -> str:
    """``text`` as one code span in a table cell: a fence longer than any backtick run in it, padded with spaces
    when it starts or ends with a backtick or a space (the renderer strips one space from each end), pipes escaped."""
    body = _one_line(text)
    if "\\" in body and "|" in body:
        # GitHub's table scanner takes '\\|' as an escaped backslash and a cell-ending pipe; a code span cannot
        # escape the backslash, so such text is shown as escaped literal text instead.
        return cell(body)
    body = body.replace("|", "\\|")
    if not body:
        return "` `"
    fence = "`" * (max((len(run) for run in re.findall(r"`+", body)), default=0) + 1)
    pad = " " if body[0] in "` " or body[-1] in "` " else ""
    return f"{fence}{pad}{body}{pad}{fence}"
