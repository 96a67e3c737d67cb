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

Autolinks (GFM 0.29 §6.9 "Autolinks (extension)", https://github.github.com/gfm/#autolinks-extension-, read
2026-11-24): an extended www autolink is recognised where the text ``www.`` is found followed by a valid domain, an
extended url autolink where ``http://``, ``https://`` or ``ftp://`` is, and an extended email autolink where an email
address is recognised within any text node. A backslash escape ends a text run (§2.4: the escaped character is literal
text of its own), so ``www\\.``, ``https\\://`` and ``ops\\@evil.example`` match none of the three, and ``mailto:`` and
``xmpp:`` links need an '@' too. ``&`` becomes ``&amp;`` so that ``&#96;`` or ``&lt;img`` is shown as written, not
decoded (CommonMark 0.31.2 §2.5 "Entity and numeric character references"). Bidi controls (U+202A-202E embeddings and
overrides, U+2066-2069 isolates, and the marks U+200E, U+200F, U+061C) would reorder how the cell reads (Unicode
Technical Standard #39 / the "Trojan Source" class): they are shown as ``U+202E``.
Not handled here, because a Markdown escape cannot reach them: GitHub links @-mentions and email addresses a second
time in the rendered HTML text (micromark-extension-gfm-autolink-literal's readme describes that transform-time pass),
where an escape is already undone.
"""
from __future__ import annotations

import re

# In one pass, so no escape is escaped again: the characters that open markup across a cell (table pipes, code spans,
# HTML tags and autolinks, links and images, backslashes), the '@' of an email autolink, the ':' of '://' and the '.'
# of 'www.' (GFM's extended autolinks), and '&' (a character reference).
_SPECIAL = re.compile(r"[\\|`<>\[\]@&]|:(?=//)|(?<=[wW]{3})\.")
# A row must stay one line: CommonMark line endings (\n, \r) and any other control character become a space.
_BREAKS = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def _one_line(text: object) -> str:
    return _BIDI.sub(lambda m: f"U+{ord(m.group(0)):04X}", _BREAKS.sub(" ", str(text)))


def _escape(match: re.Match) -> str:
    return "&amp;" if match.group(0) == "&" else "\\" + match.group(0)


def cell(text: object) -> str:
    """``text`` as literal text in one table cell."""
    return _SPECIAL.sub(_escape, _one_line(text))


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
