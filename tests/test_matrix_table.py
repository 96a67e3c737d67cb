"""`egress matrix`'s table fits the terminal (issue 22 item 6): COLUMNS honoured, entry id and feature kept whole,
citations wrapped and never truncated; the JSON, CSV and Markdown forms do not depend on the width."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from egress.tables import Column, cell_width, table_lines, terminal_width, wrap

ROOT = Path(__file__).resolve().parents[1]


def matrix(run_cli, monkeypatch, columns: str | None, *args: str, stack: str = "dev") -> str:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    code, out, err = run_cli("matrix", "--stack", stack, "--project", str(ROOT), *args)
    assert code == 0, err
    return out


def squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("width", [60, 80, 120, 160, 200])
def test_every_line_fits_and_nothing_is_lost(run_cli, monkeypatch, width):
    out = matrix(run_cli, monkeypatch, str(width))
    data = json.loads(matrix(run_cli, monkeypatch, str(width), "--format", "json"))
    lines = out.splitlines()
    assert max(cell_width(line) for line in lines) <= width
    words = set(out.split()) | {w.rstrip(",") for w in out.split()}
    for req in data["requirements"]:
        for entry_id in req["entries"]:
            assert entry_id in words, entry_id  # whole, never broken over two lines
    text = squeezed(out)
    for req in data["requirements"]:
        for citation in req["citations"]:
            assert squeezed(citation["url"]) in text  # wrapped, every character still there in order


def test_the_table_leads_with_entry_and_feature(run_cli, monkeypatch):
    out = matrix(run_cli, monkeypatch, "250")
    header = out.splitlines()[1].split()
    assert header[:4] == ["entry", "feature", "role", "destination"]
    row = next(line for line in out.splitlines() if line.startswith("aks-monitor-ingest-public "))
    assert row.split()[1:3] == ["azure-monitor", "nodes"]


def test_a_narrow_terminal_gets_one_block_per_requirement(run_cli, monkeypatch):
    out = matrix(run_cli, monkeypatch, "60")
    block = out.split("\n\n")[0]
    assert "entry: aks-public-mcr, aks-public-mcr-data" in block and "feature: -" in block
    assert re.search(r"^citation: https://", block, re.M)


def test_without_a_terminal_or_columns_rows_are_not_wrapped(run_cli, monkeypatch):
    out = matrix(run_cli, monkeypatch, None)
    data = json.loads(matrix(run_cli, monkeypatch, None, "--format", "json"))
    for req in data["requirements"]:
        if len(req["entries"]) == 1:
            assert any(line.split()[:1] == req["entries"] and req["destination"] in line.split() for line in out.splitlines()), req


@pytest.mark.parametrize("fmt", ["json", "csv", "md"])
def test_scripted_formats_ignore_the_width(run_cli, monkeypatch, fmt):
    assert matrix(run_cli, monkeypatch, "40", "--format", fmt) == matrix(run_cli, monkeypatch, "400", "--format", fmt)


def test_terminal_width_reads_columns():
    assert terminal_width({"COLUMNS": "91"}) == 91
    assert terminal_width({"COLUMNS": "0"}) in (None,) or terminal_width({"COLUMNS": "0"}) > 0  # ignored: the terminal's, or none
    assert terminal_width({"COLUMNS": "wide"}) == terminal_width({})


def test_wrap_breaks_long_words_after_separators_and_keeps_every_character():
    url = "https://github.com/MicrosoftDocs/azure-aks-docs/blob/f9be3faa3436b5bd5fb2cda4d33b5771538031f7/articles/aks/x.md"
    lines = wrap(f"see {url} for more", 30)
    assert all(cell_width(line) <= 30 for line in lines)
    assert "".join(lines).replace(" ", "") == f"see{url}formore"
    assert lines[1] == "https://github.com/"  # broken after a '/', not at the 30th character


def test_wide_characters_count_two_cells():
    assert cell_width("日本") == 4 and cell_width("e\u0301") == 1 and cell_width("§ 2") == 3
    assert all(cell_width(line) <= 5 for line in wrap("日本語のテキスト", 5))


def test_the_layouts_degrade_in_order():
    columns = [Column("id", keep=True), Column("what"), Column("note", detail=True)]
    rows = [["a-long-identifier", "short", "a note that is long enough to need wrapping somewhere " * 2]]
    wide = table_lines(columns, rows, None)
    assert len(wide) == 3 and wide[2].startswith("a-long-identifier  short  a note")
    middle = table_lines(columns, rows, 40)
    assert middle[2].rstrip() == "a-long-identifier  short" and middle[3].startswith("    note: a note")
    narrow = table_lines(columns, rows, 20)
    assert narrow[:3] == ["id:", "  a-long-identifier", "what: short"]  # an id is moved whole, not broken
    for lines, width in ((middle, 40), (narrow, 20)):
        assert max(cell_width(line) for line in lines) <= width
        assert squeezed(" ".join(lines)).count(squeezed(rows[0][2])) == 1


@pytest.mark.parametrize("width", [60, 100])
def test_egress_stacks_fits_the_width_and_keeps_every_word(run_cli, monkeypatch, width):
    monkeypatch.delenv("COLUMNS", raising=False)
    code, wide, err = run_cli("stacks", "--project", str(ROOT))
    assert code == 0, err
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, _ = run_cli("stacks", "--project", str(ROOT))
    assert code == 0
    assert max(map(cell_width, wide.splitlines())) > width  # the check means something: unbounded lines are wider
    assert max(map(cell_width, out.splitlines())) <= width
    assert squeezed(out) == squeezed(wide)
    assert [line for line in out.splitlines() if not line.startswith(" ")][0].startswith("aks-china ")  # stacks still start lines


def test_the_probe_table_wraps_its_detail_under_itself():
    from egress.probe.agent import table
    from egress.tables import fit_lines

    detail = "TLS ok, the certificate names the host; HTTP 200 from the server after 0.31 s, through the proxy at 10.0.0.5:3128"
    report = {"results": [{"check": "https mcr.microsoft.com:443", "expect": "allow", "status": "ok", "via": "proxy",
                           "entries": ["aks-public-mcr"], "detail": detail}],
              "counts": {"ok": 1, "failed": 0, "inconclusive": 0, "not-probed": 0}, "stack": "dev", "role": "nodes", "ok": True,
              "enforcement": "proven"}
    lines = table(report).splitlines()
    column = lines[0].index("DETAIL")
    fitted = fit_lines(lines, 100, column=column)
    assert max(map(cell_width, fitted)) <= 100
    assert fitted[1].startswith(lines[1][:column]) and fitted[2].startswith(" " * column) and fitted[2][column] != " "
    assert squeezed(" ".join(fitted)) == squeezed(" ".join(lines))


@pytest.mark.parametrize("width", ["5", "12", "19", "24", "33"])
def test_entry_ids_are_never_broken_however_narrow(run_cli, monkeypatch, width):
    # review of issue 22: COLUMNS=5 broke ids into 3-letter pieces
    out = matrix(run_cli, monkeypatch, width)
    data = json.loads(matrix(run_cli, monkeypatch, None, "--format", "json"))
    words = {word.rstrip(",") for line in out.splitlines() for word in line.split()}
    for req in data["requirements"]:
        assert set(req["entries"]) <= words, req["entries"]


def test_kept_cells_wrap_between_ids_only():
    columns = [Column("entry", keep=True), Column("what")]
    lines = table_lines(columns, [["first-identifier\nsecond-identifier-that-is-long", "x"]], 24)
    assert lines[:3] == ["entry:", "  first-identifier,", "  second-identifier-that-is-long"]
