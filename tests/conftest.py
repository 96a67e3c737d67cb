from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from egress.catalog import load_catalog
from egress.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def catalog():
    return load_catalog(ROOT / "matrix")


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    """A writable copy of the project's data (Pulumi.yaml, matrix/, stacks/)."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copytree(ROOT / "matrix", tmp_path / "matrix")
    shutil.copytree(ROOT / "stacks", tmp_path / "stacks")
    return tmp_path


@pytest.fixture
def run_cli(capsys, monkeypatch):
    """Run `egress ARGS` in-process; return (exit code, stdout, stderr)."""

    def run(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        monkeypatch.setattr("sys.argv", ["egress", *args])
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out, err = capsys.readouterr()
        return code, out, err

    return run
