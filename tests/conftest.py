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


@pytest.fixture
def loop():
    """A fresh event loop for a test that runs the Pulumi program under the SDK's mocks itself."""
    import asyncio

    import pulumi

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    # A fresh root stack resource per test: one left by an earlier test belongs to a closed loop, and a resource
    # registered before a synchronous invoke (the explicit provider) would wait on it.
    pulumi.runtime.settings.ROOT.set(None)
    yield loop
    loop.close()
    asyncio.set_event_loop(None)
