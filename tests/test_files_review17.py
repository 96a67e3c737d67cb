"""Issue 17 review: files egress writes or reads that it did not write itself. The matrix cache's temporary file is a
new file with an unguessable name (a planted link at the old 'KEY.PID.tmp' name was written through), and a relative
XDG_CACHE_HOME is ignored, as the XDG spec says."""
from __future__ import annotations

import os
from pathlib import Path

from egress import matrix_cache


def _own_cache(tmp_path: Path, monkeypatch) -> Path:
    folder = tmp_path / "egress-matrix" / "matrix"
    folder.mkdir(parents=True)
    for own in (folder.parent, folder):
        own.chmod(0o700)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return folder


def test_the_cache_never_writes_through_a_planted_temporary_name(tmp_path, monkeypatch):
    folder = _own_cache(tmp_path, monkeypatch)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    key = "ab" * 32
    for pid in {os.getpid(), *range(os.getpid() - 2, os.getpid() + 3)}:
        (folder / f"{key}.{pid}.tmp").symlink_to(victim)
    matrix_cache._store(key, "output", {"stats": set(), "files": set(), "dirs": set()})
    assert victim.read_text() == "precious"
    assert (folder / f"{key}.json").is_file() and not (folder / f"{key}.json").is_symlink()
    assert not [p for p in folder.iterdir() if p.suffix == ".tmp" and not p.is_symlink()]  # no temporary left behind


def test_a_relative_xdg_cache_home_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert matrix_cache.cache_dir() == tmp_path / ".cache" / "egress-matrix" / "matrix"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "abs"))
    assert matrix_cache.cache_dir() == tmp_path / "abs" / "egress-matrix" / "matrix"


# --- egress learn --out: the proposals file is written whole, never through a link, never to a FIFO, device or .git ---

LEARN_STACK = "proxy-only"
DATA = Path(__file__).parent / "data" / "learn"


def _learn(run_cli, project: Path, out: str) -> tuple[int, str, str]:
    (project / "logs").mkdir(exist_ok=True)
    (project / "logs" / "access.log").write_bytes((DATA / "squid-access.log").read_bytes())
    return run_cli("learn", "--stack", LEARN_STACK, "logs/access.log", "--out", out, "--project", str(project), cwd=project)


def _one_error(code: int, out: str, err: str, *fragments: str) -> str:
    message = " ".join(err.split())
    assert code == 1 and out == "" and "Traceback" not in err and message.count("Error: ") == 1, (code, out, err)
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_learn_never_writes_through_a_dangling_link(project_copy, run_cli, tmp_path):
    victim = tmp_path / "elsewhere" / "victim.yaml"
    victim.parent.mkdir()
    (project_copy / "p.yaml").symlink_to(victim)
    _one_error(*_learn(run_cli, project_copy, "p.yaml"), "p.yaml: is a symbolic link; egress learn never writes through a link",
               "Fix: give another --out file")
    assert not victim.exists() and (project_copy / "p.yaml").is_symlink()


def test_learn_never_writes_through_a_link_to_an_earlier_proposals_file(project_copy, run_cli, tmp_path):
    code, _, err = _learn(run_cli, project_copy, "real.yaml")
    assert code == 3, err
    before = (project_copy / "real.yaml").read_text()
    (project_copy / "p.yaml").symlink_to(project_copy / "real.yaml")
    _one_error(*_learn(run_cli, project_copy, "p.yaml"), "is a symbolic link")
    assert (project_copy / "real.yaml").read_text() == before


def test_learn_out_in_a_missing_folder_is_one_error(project_copy, run_cli, tmp_path):
    missing = tmp_path / "nonexistent" / "x.yaml"
    _one_error(*_learn(run_cli, project_copy, str(missing)), str(missing), f"the folder '{missing.parent}' does not exist",
               "Fix: create the folder first")


def test_learn_out_under_a_file_is_one_error(project_copy, run_cli):
    _one_error(*_learn(run_cli, project_copy, "Pulumi.yaml/x.yaml"), "Pulumi.yaml/x.yaml", "Fix: give another --out file")


def test_learn_out_to_a_fifo_is_refused_not_a_hang(project_copy, run_cli):
    os.mkfifo(project_copy / "pipe.yaml")
    _one_error(*_learn(run_cli, project_copy, "pipe.yaml"), "pipe.yaml: is not a regular file (a FIFO, device or socket)")


def test_learn_out_to_a_device_is_refused(project_copy, run_cli):
    _one_error(*_learn(run_cli, project_copy, os.devnull), f"{os.devnull}: is not a regular file")


def test_learn_out_inside_git_is_refused(project_copy, run_cli):
    (project_copy / ".git" / "hooks").mkdir(parents=True)
    _one_error(*_learn(run_cli, project_copy, ".git/hooks/post-checkout"), ".git/hooks/post-checkout: is inside a .git folder")
    assert not (project_copy / ".git" / "hooks" / "post-checkout").exists()


def test_learn_out_in_a_folder_it_cannot_write_is_one_error(project_copy, run_cli, monkeypatch):
    # the folder's permissions refuse the temporary file (as root, which writes anywhere, the refusal is made so)
    folder = project_copy / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    if os.geteuid() == 0:
        def refused(*args, **kwargs):
            raise PermissionError(13, "Permission denied", str(folder))

        monkeypatch.setattr("egress.learn.out_file.tempfile.mkstemp", refused)
    try:
        _one_error(*_learn(run_cli, project_copy, "locked/p.yaml"), "locked/p.yaml: cannot be written (Permission denied)")
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o700)


def test_learn_writes_a_whole_file_and_leaves_no_temporary(project_copy, run_cli):
    code, _, err = _learn(run_cli, project_copy, "p.yaml")
    assert code == 3, err
    written = project_copy / "p.yaml"
    assert written.read_text().startswith("# egress learn") and (written.stat().st_mode & 0o777) == 0o666 & ~_umask()
    assert not list(project_copy.glob(".p.yaml.*"))
    code, _, err = _learn(run_cli, project_copy, "p.yaml")  # an earlier proposals file is replaced
    assert code == 3, err


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def test_learns_error_escapes_a_log_lines_control_characters(project_copy, run_cli):
    """'is in no format egress learn reads' quotes the line: its ESC/OSC bytes must not drive the terminal."""
    (project_copy / "esc.log").write_bytes(b"x\x1b]0;pwned\x07\x1b[31mRED\x1b[2J\n")
    code, out, err = run_cli("learn", "esc.log", "--stack", LEARN_STACK, "--out", "p.yaml", "--project", str(project_copy), cwd=project_copy)
    _one_error(code, out, err, "esc.log: line 1: is in no format egress learn reads", "\\x1b]0;pwned\\x07\\x1b[31mRED")
    assert "\x1b" not in err and "\x07" not in err and "\x1b" not in out


# --- JSON and YAML egress did not write: nesting is one clear error, never a RecursionError traceback ---

DEEP = "[" * 200_000 + "]" * 200_000


def _deep_file(tmp_path: Path, text: str = DEEP, name: str = "deep.json") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_parse_json_bounds_nesting_and_numbers():
    import pytest

    from egress.json_file import MAX_DEPTH, NotJSON, parse_json

    assert parse_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) == parse_json("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    for text in (DEEP, "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), '{"a": ' * 2000 + "1" + "}" * 2000):
        with pytest.raises(NotJSON, match=f"arrays and objects nested deeper than {MAX_DEPTH} levels"):
            parse_json(text)
    with pytest.raises(NotJSON, match=r"not valid JSON \(Exceeds the limit"):
        parse_json("9" * 5000)
    with pytest.raises(NotJSON, match=r"not valid JSON \(Expecting value\) at line 2, column 1"):
        parse_json("[1,\n")


def test_explain_deployed_on_deep_json(tmp_path):
    import pytest

    from egress.deployed_file import load_deployed
    from egress.errors import EgressError

    with pytest.raises(EgressError, match=r"deep.json: not the resources.json of an egress preview \(arrays and objects nested"):
        load_deployed(_deep_file(tmp_path), "dev")


def test_a_policy_pack_config_nested_deep(tmp_path):
    import pytest

    from egress.errors import EgressError
    from egress_preview.pack_config import load_pack_config

    with pytest.raises(EgressError, match=r"deep.json: not a readable policy pack config \(arrays and objects nested"):
        load_pack_config(_deep_file(tmp_path), policies=[])


def test_an_event_log_line_nested_deep(tmp_path):
    import pytest

    from egress.errors import InputError
    from egress_preview.policy_events import read_event_log

    with pytest.raises(InputError) as caught:
        read_event_log(_deep_file(tmp_path, DEEP + "\n"))
    assert "line 1: field '(event)'" in str(caught.value) and "arrays and objects nested deeper than" in str(caught.value)
    assert len(str(caught.value)) < 1000  # the 400,000-character line is not repeated


def test_a_hub_export_nested_deep(tmp_path):
    import pytest

    from egress.hub_exports import load_export
    from egress.hub_exports import HubFactsError

    with pytest.raises(HubFactsError, match=r"field '\(document\)' = '\(not shown\)': arrays and objects nested deeper"):
        load_export(_deep_file(tmp_path), "hub/deep.json", "")


def test_a_stack_file_value_nested_deep():
    import pytest

    from egress.stack_yaml import YamlProblem, load

    for depth in (5000, 200):  # the parser's own recursion, and a depth it parses but every reader of the tree recurses over
        with pytest.raises(YamlProblem) as caught:
            load("config:\n  egress-matrix:clusterName: dev\n  x: " + "[" * depth + "]" * depth + "\n")
        assert caught.value.line == 3 and caught.value.problem == "lists and mappings nested deeper than 128 levels"
        assert caught.value.field in ("(file)", "config.x")


# --- catalog files (matrix/*.yaml, teams/): a value YAML 1.1 and 1.2 read differently is refused, as in stack files ---

def _catalog(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "teams" / "payments" / "payments.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_a_catalog_value_yaml_readers_disagree_on_is_refused(tmp_path):
    import pytest

    from egress.catalog.yaml_lines import read_yaml
    from egress.errors import CatalogError

    for value, problem, fix in (
            ("20:21", "YAML 1.2 (Pulumi) reads it as text, YAML 1.1 as a number", 'quote it: "20:21"'),  # sexagesimal 1221
            ("010", "a number YAML readers disagree on (YAML 1.2 reads 8, a YAML 1.1 reader may not)", "write it in plain decimal"),
            ("0x1bb", "a number YAML readers disagree on", "write it in plain decimal: 443"),
            ("yes", "YAML 1.2 (Pulumi) reads it as text, YAML 1.1 as a boolean", 'quote it: "yes"')):
        path = _catalog(tmp_path, f"schema: 1\nentries:\n  - id: x\n    ports: [{value}]\n")
        with pytest.raises(CatalogError) as caught:
            read_yaml(path)
        assert f"payments.yaml: line 4: field 'ports' = '{value}': {problem}" in str(caught.value), str(caught.value)
        assert f"Fix: {fix}" in str(caught.value)


def test_catalog_values_every_reader_agrees_on_load_as_before(tmp_path):
    import datetime

    from egress.catalog.yaml_lines import read_yaml

    path = _catalog(tmp_path, "schema: 1\nentries:\n  - {id: x, ports: [443, '20:21', \"010\"], private: false, note: ~, expires: 2027-01-31}\n")
    entry = read_yaml(path)["entries"][0]
    assert entry == {"id": "x", "ports": [443, "20:21", "010"], "private": False, "note": None, "expires": datetime.date(2027, 1, 31)}


def test_a_catalog_file_that_is_not_utf8_says_so(tmp_path):
    import pytest

    from egress.catalog.yaml_lines import read_yaml
    from egress.errors import CatalogError

    with pytest.raises(CatalogError) as caught:
        read_yaml(_catalog(tmp_path, b"schema: 1\n# caf\xe9\n"))
    assert "payments.yaml: field '(file)' = '': not UTF-8 text (byte 15 cannot be decoded). Fix: save the file as UTF-8" in str(caught.value)
    assert "date or number" not in str(caught.value)
