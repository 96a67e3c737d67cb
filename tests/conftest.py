from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from egress.catalog import load_catalog
from egress.cli import main
from egress_preview.runloop import close_loop

ROOT = Path(__file__).resolve().parents[1]

# Property tests draw the same examples on every run and machine (seeded from the test), keep no database of earlier
# failures in the working tree, and are not timed: a loaded machine must not turn them red. Explore with new examples
# with `--hypothesis-profile=explore`; a failure found so belongs in the test as an @example.
settings.register_profile("deterministic", derandomize=True, database=None, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", derandomize=False, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("deterministic")


@pytest.fixture(scope="session", autouse=True)
def _git_reads_no_machine_config(tmp_path_factory):
    """Every git the tests run (directly or through `egress diff`) reads only this config: a developer's global
    commit.gpgsign, hooks or line-ending settings must not decide whether a test passes. A test that wants a user's
    config sets GIT_CONFIG_GLOBAL itself. Repository locations from a calling hook (GIT_DIR, ...) are dropped too."""
    config = tmp_path_factory.mktemp("git") / "config"
    config.write_text("[user]\n\tname = egress-matrix tests\n\temail = tests@example.com\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GIT_CONFIG_GLOBAL", str(config))
        patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
        for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                     "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CEILING_DIRECTORIES"):
            patch.delenv(name, raising=False)
        yield


@pytest.fixture(scope="session")
def catalog():
    return load_catalog(ROOT / "matrix")


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    """A writable copy of the project's data (Pulumi.yaml, matrix/, stacks/, and teams/: the own catalogs stacks list)."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copytree(ROOT / "matrix", tmp_path / "matrix")
    shutil.copytree(ROOT / "stacks", tmp_path / "stacks")
    shutil.copytree(ROOT / "teams", tmp_path / "teams")
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

    # The loop and root stack other tests run on, given back afterwards: this test's root belongs to a loop that is
    # closed then, and a later test's set_mocks would reuse it. (The loop is made now if none was ever set; an earlier
    # `egress preview` run unsets its own, and then there is none.)
    try:
        previous = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        previous = None
    previous_root = pulumi.runtime.settings.ROOT.get()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    # A fresh root stack resource per test: one left by an earlier test belongs to a closed loop, and a resource
    # registered before a synchronous invoke (the explicit provider) would wait on it.
    pulumi.runtime.settings.ROOT.set(None)
    yield loop
    close_loop(loop)  # what a failed test left pending is cancelled, not left to be reported as destroyed later
    asyncio.set_event_loop(previous)
    pulumi.runtime.settings.ROOT.set(previous_root)
