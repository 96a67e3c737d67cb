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
    for own in (folder.parent, folder):
        own.chmod(0o700)  # whatever the umask: the cache uses only folders nobody else can write
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


def run_matrix(project: Path, cache: Path, *args: str, **env: str) -> tuple[int, str, bool]:
    """(exit code, stdout, whether the matrix was computed) of `egress matrix ARGS`."""
    run = subprocess.run([sys.executable, "-c", PROBE_CODE, json.dumps(["matrix", "--project", str(project), *args])],
                         cwd=project, capture_output=True, text=True, timeout=120,
                         env={**{k: v for k, v in os.environ.items() if k != "EGRESS_NO_CACHE"}, "XDG_CACHE_HOME": str(cache),
                              "COLUMNS": "120", **env})
    out, _, tail = run.stdout.rpartition("\x00")
    code, computed = json.loads(tail)
    return code, out, computed


PROBE_CODE = PROBE.replace("try:\n", "code = 0\ntry:\n").replace('json.dumps("egress.models" in sys.modules)',
                                                                 'json.dumps([code, "egress.models" in sys.modules])')


def test_a_file_appearing_behind_a_dangling_link_is_a_miss(project, tmp_path):
    # review of issue 22, item 8: is_file() of the link found nothing and was a stat no audit event reports
    cache = tmp_path / "cache"
    target = tmp_path / "elsewhere" / "extra.yaml"
    (project / "teams" / "payments" / "extra.yaml").symlink_to(target)
    args = ("--stack", "aks-contoso", "--format", "csv")
    first = run_matrix(project, cache, *args)
    assert first[0] == 0 and run_matrix(project, cache, *args) == (0, first[1], False)  # the repeat is served from the cache
    target.parent.mkdir()
    target.write_text(EXTRA)
    code, out, computed = run_matrix(project, cache, *args)
    assert (code, computed) == (0, True) and "api.extra.example" in out and "api.extra.example" not in first[1]
    assert out == run_matrix(project, cache, *args, EGRESS_NO_CACHE="1")[1]  # as without the cache
    target.write_text("schema: 1\nkind: nonsense\n")
    assert run_matrix(project, cache, *args)[0] == 1  # a changed file behind the link: read again, refused as without the cache


EXTRA = """schema: 1
kind: platform
platform: extra
title: Payments team (more)
defaults: {role: payments, level: required, protocol: https}
entries:
  - id: extra-api
    destination: api.extra.example
    purpose: Another API
    approval: {owner: team-payments, reference: "https://tickets.contoso.example/SEC-4713"}
"""


def test_an_absent_path_the_run_asked_about_is_recorded(project, tmp_path):
    cache = tmp_path / "cache"
    run_matrix(project, cache, "--stack", "aks-contoso")
    entry = json.loads(next((cache / "egress-matrix" / "matrix").glob("*.json")).read_text())
    assert entry["version"] == matrix_cache.VERSION and entry["stats"]
    assert entry["stats"][str(project / "teams" / "payments" / "payments.yaml")] == "file"  # own.py's is_file()


@pytest.mark.parametrize("kind", ["writable by others", "a link", "another owner"])
def test_a_cache_folder_someone_else_can_change_is_not_used(project, tmp_path, kind):
    cache = tmp_path / "cache"
    folder = cache / "egress-matrix" / "matrix"
    if kind == "a link":
        (tmp_path / "planted").mkdir(mode=0o700)
        folder.parent.mkdir(parents=True, mode=0o700)
        folder.symlink_to(tmp_path / "planted")
    else:
        folder.mkdir(parents=True)
        folder.chmod(0o700)
        folder.parent.chmod(0o777 if kind == "writable by others" else 0o700)
        if kind == "another owner":
            if os.geteuid() != 0:
                pytest.skip("giving a folder to another user needs root")
            os.chown(folder, 65534, 65534)
    fresh = run_matrix(project, tmp_path / "other-cache", "--stack", "dev", EGRESS_NO_CACHE="1")
    # a planted entry for exactly this request would be served if the folder were trusted
    for _ in range(2):
        code, out, computed = run_matrix(project, cache, "--stack", "dev")
        assert (code, out, computed) == (0, fresh[1], True)  # computed every time: no cache, same output
    stored = folder if kind != "a link" else tmp_path / "planted"
    assert not list(stored.glob("*.json"))


def test_an_entry_that_is_not_this_users_own_file_is_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(matrix_cache, "enabled", lambda: True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert matrix_cache.cached(["z"], lambda: ("real", [])) == ("real", [])
    entry = next((tmp_path / "egress-matrix" / "matrix").glob("*.json"))
    planted = tmp_path / "planted.json"
    planted.write_text(json.dumps({"version": matrix_cache.VERSION, "output": "planted", "files": {}, "dirs": {}, "stats": {}}))
    entry.unlink()
    entry.symlink_to(planted)
    assert matrix_cache.cached(["z"], lambda: ("real", [])) == ("real", [])
