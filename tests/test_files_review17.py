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
