"""Plain-text tables that fit the terminal, for people; scripts read --format json/csv.

Three layouts, the first that fits ``width``:

1. a grid of every column, long text wrapped inside its column;
2. a grid of the short columns, and each row's long "detail" columns (citation, purpose, ...) on indented lines under it,
   wrapped to the whole width;
3. one block per row: the kept columns a line each, the short ones packed as "header: value" items, then the details.

"Kept" columns (identifiers: entry id, feature) are never wrapped or moved: an id broken over two lines cannot be copied
or searched for. Nothing is ever truncated: a word longer than its column is broken after '/', '.', '-' and the like
where it can be, else where it must. Pure, stdlib only (rich would cost the start-up time of the command, and its
tables fold identifiers).
"""
from __future__ import annotations

import os
import re
import sys
import unicodedata
from dataclasses import dataclass
from typing import Optional, Sequence

GAP = "  "
MIN_WIDTH = 20  # narrower (COLUMNS=5) the table is laid out as blocks for this width: a terminal wraps them, ids stay whole
FLOOR = 8  # the narrowest a wrapped grid column gets (or its header, or its whole text, when those are narrower)
DETAIL_FLOOR = 24  # in layout 1, a detail column narrower than this reads worse than layout 2's full-width lines
_BREAK_AFTER = "/.-,;:?&#=_"


@dataclass(frozen=True)
class Column:
    header: str
    keep: bool = False  # an identifier: never wrapped, never moved under the row
    detail: bool = False  # long text that may move under the row (layout 2)
    min_width: int = 0  # narrower than this (or its whole text) the column reads badly: try the next layout


def terminal_width(env: Optional[dict] = None) -> Optional[int]:
    """COLUMNS when it is a positive integer, else the width of the terminal on stdout, else on stderr (``egress matrix |
    less``); None when there is no terminal (a pipe or file, and no COLUMNS): rows are not wrapped, one line each."""
    value = (os.environ if env is None else env).get("COLUMNS", "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and stream.isatty():
                return os.get_terminal_size(stream.fileno()).columns or None
        except (OSError, ValueError, AttributeError):
            continue
    return None


_SPECIAL = re.compile("[\u0300-\U0010ffff]")  # below U+0300 every character is one cell


def cell_width(text: str) -> int:
    """Terminal cells ``text`` takes: East Asian wide characters two, combining marks none."""
    if text.isascii():
        return len(text)
    return len(text) + sum(-1 if unicodedata.combining(ch) else 1 if unicodedata.east_asian_width(ch) in "WF" else 0
                           for ch in _SPECIAL.findall(text))


def _split_word(word: str, width: int) -> list[str]:
    """``word`` in pieces of at most ``width`` cells, broken after a separator where there is one."""
    pieces = []
    while cell_width(word) > width:
        cut, used = 0, 0
        for i, ch in enumerate(word):
            used += cell_width(ch)
            if used > width:
                break
            cut = i + 1
        cut = max(cut, 1)  # a character wider than the column still moves on
        soft = max((i + 1 for i in range(cut) if word[i] in _BREAK_AFTER), default=0)
        if soft >= max(2, cut // 2):  # a separator not too early in the piece
            cut = soft
        pieces.append(word[:cut])
        word = word[cut:]
    return [*pieces, word] if word else pieces


def wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` cells: paragraphs at newlines, lines at spaces, long words broken."""
    width = max(width, 1)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split():
            candidate = f"{line} {word}" if line else word
            if cell_width(candidate) <= width:
                line = candidate
                continue
            if line:
                lines.append(line)
            *full, line = _split_word(word, width) or [""]
            lines.extend(full)
        lines.append(line)
    return lines


def _pad(text: str, width: int) -> str:
    return text + " " * (width - cell_width(text))


def _natural(rows: Sequence[Sequence[str]], i: int, header: str) -> int:
    return max([cell_width(header), *(cell_width(part) for row in rows for part in row[i].split("\n"))])


def _longest_word(rows: Sequence[Sequence[str]], i: int) -> int:
    return max([0, *(cell_width(word) for row in rows for word in row[i].split())])


def _fit(natural: list[int], floors: list[int], fixed: list[bool], space: int) -> Optional[list[int]]:
    """Widths for the columns in ``space`` cells (gaps excluded): fixed ones at their natural width, the others shared
    out (each at most its natural width, none under its floor); None when they cannot fit."""
    widths = list(natural)
    free = [i for i, f in enumerate(fixed) if not f]
    left = space - sum(natural[i] for i, f in enumerate(fixed) if f)
    while free:
        share = left // len(free)
        small = [i for i in free if natural[i] <= share]
        if not small:
            break
        for i in small:
            left -= natural[i]
            free.remove(i)
    for n, i in enumerate(free):  # the rest share what is left, the remainder to the first
        widths[i] = left // len(free) + (1 if n < left % len(free) else 0)
    return widths if all(w >= f for w, f in zip(widths, floors)) and left >= 0 else None


def _grid(columns: Sequence[Column], rows: Sequence[Sequence[str]], widths: list[int]) -> list[str]:
    lines = [GAP.join(_pad(c.header, w) for c, w in zip(columns, widths)).rstrip(),
             GAP.join("-" * w for w in widths)]
    for row in rows:
        cells = [row[i].split("\n") if c.keep or ("\n" not in row[i] and cell_width(row[i]) <= widths[i]) else wrap(row[i], widths[i])
                 for i, c in enumerate(columns)]
        for n in range(max(len(cell) for cell in cells)):
            lines.append(GAP.join(_pad(cell[n] if n < len(cell) else "", w) for cell, w in zip(cells, widths)).rstrip())
    return lines


def table_lines(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: Optional[int]) -> list[str]:
    """The rows under a header line, fitted to ``width`` cells (None: unbounded, one line per row and cell line)."""
    rows = [[str(cell) for cell in row] for row in rows]
    natural = [_natural(rows, i, c.header) for i, c in enumerate(columns)]
    gaps = len(GAP) * (len(columns) - 1)
    if width is None or sum(natural) + gaps <= width:
        return _grid(columns, rows, natural)
    width = max(width, MIN_WIDTH)
    # 1. every column in the grid; long words of detail columns must not be cut more than needed
    floors = [max(cell_width(c.header), min(natural[i], FLOOR)) for i, c in enumerate(columns)]
    floors = [max(floor, min(natural[i], c.min_width)) for i, (c, floor) in enumerate(zip(columns, floors))]
    widths = _fit(natural, floors, [c.keep for c in columns], width - gaps)
    if widths and all(widths[i] >= min(natural[i], max(DETAIL_FLOOR, _longest_word(rows, i) // 2))
                      for i, c in enumerate(columns) if c.detail):
        return _grid(columns, rows, widths)
    # 2. the short columns in the grid, the detail columns under each row
    grid = [i for i, c in enumerate(columns) if not c.detail]
    details = [i for i, c in enumerate(columns) if c.detail]
    if grid and details:
        widths = _fit([natural[i] for i in grid], [floors[i] for i in grid], [columns[i].keep for i in grid],
                      width - len(GAP) * (len(grid) - 1))
        if widths:
            lines = _grid([columns[i] for i in grid], [], widths)  # the header
            for row in rows:
                lines.extend(_grid([columns[i] for i in grid], [[row[i] for i in grid]], widths)[2:])
                for i in details:
                    if row[i]:
                        lines.extend(_hanging(f"{columns[i].header}: ", row[i], width, indent=4))
            return lines
    # 3. one block per row
    lines = []
    for n, row in enumerate(rows):
        if n:
            lines.append("")
        for i, c in enumerate(columns):
            if c.keep:
                lines.extend(_kept(c.header, row[i].split("\n"), width))
        packed = ""
        for i, c in enumerate(columns):
            if c.keep or c.detail:
                continue
            item = f"{c.header}: {row[i]}"
            if packed and cell_width(f"{packed}{GAP}{item}") <= width:
                packed = f"{packed}{GAP}{item}"
                continue
            if packed:
                lines.append(packed)
            packed = item
            if cell_width(item) > width:
                lines.extend(_hanging(f"{c.header}: ", row[i], width, indent=0))
                packed = ""
        if packed:
            lines.append(packed)
        for i, c in enumerate(columns):
            if c.detail and row[i]:
                lines.extend(_hanging(f"{c.header}: ", row[i], width, indent=0))
    return lines


def _kept(header: str, ids: list[str], width: int) -> list[str]:
    """Identifiers as "header: a, b", wrapped between ids only: one longer than the line stands alone on its own, whole."""
    if cell_width(f"{header}: {', '.join(ids)}") <= width:
        return [f"{header}: {', '.join(ids)}"]
    lines, line = [f"{header}:"], ""
    for n, name in enumerate(ids):
        item = name + ("," if n < len(ids) - 1 else "")
        if line and cell_width(f"{line} {item}") > width:
            lines.append(line)
            line = ""
        line = f"{line} {item}" if line else f"  {item}"
    return [*lines, line] if line else lines


def _hanging(label: str, text: str, width: int, indent: int) -> list[str]:
    """``label`` then ``text`` wrapped, continuation lines indented under the text (or by 2 when the label is long)."""
    lead = " " * indent + label
    hang = len(lead) if len(lead) <= width // 2 else indent + 2
    longest = max([0, *map(cell_width, text.split())])
    if width - hang < longest <= width - indent - 2:  # a word that fits only under the label: move it there whole
        hang = min(hang, indent + 2)
    first, *rest = wrap(text, max(width - hang, 1))
    if len(lead) > hang:  # a long label gets its own line
        return [lead.rstrip(), *(" " * hang + line for line in [first, *rest])]
    return [lead + first, *(" " * hang + line for line in rest)]


def fit_lines(lines: Sequence[str], width: Optional[int], column: Optional[int] = None) -> list[str]:
    """Report lines fitted to ``width``: a longer line is wrapped, its continuation indented 4 more than the line, or,
    with ``column`` (where a table's last, free-text column starts), the text from that column on wrapped under it."""
    if width is None:
        return list(lines)
    out: list[str] = []
    for line in lines:
        if cell_width(line) <= width:
            out.append(line)
        elif column is not None and width - column >= 30 and line[:column].strip() and not line[column - 1:column].strip():
            first, *rest = wrap(line[column:], width - column)
            out.extend([line[:column] + first, *(" " * column + piece for piece in rest)])
        else:
            indent = len(line) - len(line.lstrip(" "))
            first, *rest = wrap(line.strip(), max(width - indent, 1))
            out.append(" " * indent + first)
            out.extend(" " * (indent + 4) + piece for piece in wrap(" ".join(rest), max(width - indent - 4, 1)) if rest)
    return out
