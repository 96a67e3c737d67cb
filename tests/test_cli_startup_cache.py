"""egress/matrix_cache.py: a repeated `egress matrix` prints what a fresh run would, from the cache, and any change to
what the computing run read (a matrix file, a new file in matrix/, the stack file), to the code or to the request is a
miss. Each run is a fresh `egress` process with its own cache directory (the cache is off in-process under pytest)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from egress import matrix_cache

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import json, sys
sys.argv = ["egress", *json.loads(sys.argv[1])]
from egress.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
print("\\x00" + json.dumps("egress.models" in sys.modules))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(ROOT / "Pulumi.yaml", root)
    for folder in ("matrix", "stacks", "teams"):
        shutil.copytree(ROOT / folder, root / folder)
    return root


def matrix(project: Path, cache: Path, *args: str, **env: str) -> tuple[str, bool]:
    """(stdout, whether the models were imported, i.e. the matrix was computed)."""
    run = subprocess.run([sys.executable, "-c", PROBE, json.dumps(["matrix", "--stack", "dev", "--project", str(project), *args])],
                         cwd=project, capture_output=True, text=True, timeout=120,
                         env={**{k: v for k, v in os.environ.items() if k != "EGRESS_NO_CACHE"}, "XDG_CACHE_HOME": str(cache),
                              "COLUMNS": "120", **env})
    out, _, computed = run.stdout.rpartition("\x00")
    assert run.returncode == 0, run.stderr
    return out, json.loads(computed)


def test_a_repeat_is_served_from_the_cache_and_prints_the_same(project, tmp_path):
    cache = tmp_path / "cache"
    first, computed = matrix(project, cache)
    assert computed and first.startswith("egress requirements for stack 'dev'")
    again, computed = matrix(project, cache)
    assert (again, computed) == (first, False)
    entry = json.loads(next((cache / "egress-matrix" / "matrix").glob("*.json")).read_text())
    assert str(project / "stacks" / "Pulumi.dev.yaml") in entry["files"] and str(project / "matrix") in entry["dirs"]
    assert all(not path.startswith(sys.prefix) for path in entry["files"])
    for fmt in ("json", "csv", "md"):  # each format (and width) is its own entry, equal to an uncached run
        assert matrix(project, cache, "--format", fmt)[0] == matrix(project, cache, "--format", fmt, EGRESS_NO_CACHE="1")[0]


def test_a_changed_input_is_a_miss(project, tmp_path):
    cache = tmp_path / "cache"
    before, _ = matrix(project, cache)
    aks = project / "matrix" / "aks.yaml"
    aks.write_text(aks.read_text().replace("MCR storage backed by the Azure CDN", "MCR storage behind the Azure CDN"))
    after, computed = matrix(project, cache)
    assert computed and "MCR storage behind the Azure CDN" in after and after != before


def test_a_new_file_in_a_listed_folder_is_a_miss(project, tmp_path):
    cache = tmp_path / "cache"
    matrix(project, cache)
    (project / "matrix" / "notes.txt").write_text("not a matrix file\n")
    assert matrix(project, cache)[1] is True


def test_the_stack_file_and_the_request_are_in_the_key(project, tmp_path):
    cache = tmp_path / "cache"
    wide, _ = matrix(project, cache)
    narrow, computed = matrix(project, cache, COLUMNS="70")
    assert computed and narrow != wide
    stack = project / "stacks" / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("azure-policy, ", ""))
    changed, computed = matrix(project, cache)
    assert computed and changed != wide
    assert matrix(project, cache, EGRESS_TODAY="2030-01-01")[1] is True  # another day: expiry and retirement move


def test_no_cache_and_warnings_are_not_stored(project, tmp_path):
    cache = tmp_path / "cache"
    matrix(project, cache, EGRESS_NO_CACHE="1")
    assert not (cache / "egress-matrix").exists()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matrix_cache, "enabled", lambda: True)
        mp.setenv("XDG_CACHE_HOME", str(cache))
        assert matrix_cache.cached(["x"], lambda: ("text", ["an own entry expires soon"])) == ("text", ["an own entry expires soon"])
        assert not list((cache / "egress-matrix" / "matrix").glob("*.json"))


def test_the_code_version_follows_every_source_file(tmp_path, monkeypatch):
    package = tmp_path / "egress"
    shutil.copytree(ROOT / "egress", package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(matrix_cache, "PACKAGE", package)
    before = matrix_cache.code_version()
    (package / "resolve.py").write_text((package / "resolve.py").read_text() + "\n# changed\n")
    assert matrix_cache.code_version() != before


def test_only_the_newest_entries_are_kept(tmp_path, monkeypatch):
    folder = tmp_path / "egress-matrix" / "matrix"
    folder.mkdir(parents=True)
    for n in range(matrix_cache.KEEP + 10):
        old = folder / f"{n:064x}.json"
        old.write_text("{}")
        os.utime(old, (1_000_000 + n, 1_000_000 + n))
    monkeypatch.setattr(matrix_cache, "enabled", lambda: True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert matrix_cache.cached(["y"], lambda: ("text", [])) == ("text", [])
    kept = sorted(p.name for p in folder.glob("*.json"))
    assert len(kept) == matrix_cache.KEEP
    assert f"{0:064x}.json" not in kept and f"{matrix_cache.KEEP + 9:064x}.json" in kept  # the oldest went first
