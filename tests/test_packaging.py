"""A regular (non-editable) install gets every package: pyproject.toml lists them one by one, and a package directory
missing from the list would be left out of a wheel (the CLI's `egress.cli` once was: `egress --help` failed to import)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else pytest.importorskip("tomli")


def _listed() -> set[str]:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return set(setuptools["packages"])


def _found() -> set[str]:
    found = {"egress", "egress_preview", "egress_policies"}
    for top in ("egress", "egress_preview"):
        for init in (ROOT / top).rglob("__init__.py"):
            if "__pycache__" not in init.parts:
                found.add(".".join(init.parent.relative_to(ROOT).parts))
    for init in (ROOT / "policy" / "egress_policies").rglob("__init__.py"):
        found.add(".".join(("egress_policies", *init.parent.relative_to(ROOT / "policy" / "egress_policies").parts)).rstrip("."))
    return found


def test_every_package_directory_is_listed_for_a_regular_install():
    assert _found() - _listed() == set()


def test_every_listed_package_exists():
    assert _listed() - _found() == set()


def test_a_regular_build_carries_the_cli(tmp_path):
    """setuptools' own build_py, as `pip install .` runs it, copies the CLI package and its modules."""
    import subprocess

    build = tmp_path / "lib"
    result = subprocess.run([sys.executable, "-c", "import setuptools; setuptools.setup()", "-q", "build_py", "-d", str(build)],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    for module in ("egress/cli/__init__.py", "egress/cli/app.py", "egress/catalog/__init__.py", "egress/targets/azure/__init__.py",
                   "egress_preview/preview.py", "egress_policies/__init__.py"):
        assert (build / module).is_file(), module
