"""A copy of the project a test may change (the program, its code and data), and one as a git repository with one
commit, for `egress preview` and `egress diff --base` on edited stacks."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = ["Pulumi.yaml", "__main__.py", "matrix", "stacks", "egress", "egress_preview", "components", "policy"]


def copy_project(directory: Path) -> Path:
    for name in TREE:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, directory / name, ignore=shutil.ignore_patterns("__pycache__", "venv"))
        else:
            shutil.copy(source, directory / name)
    return directory


def git(directory: Path) -> list[str]:
    return ["git", "-C", str(directory), "-c", "user.name=t", "-c", "user.email=t@example.com"]


def git_repository(directory: Path) -> Path:
    """``directory`` holding a copy of the project, committed once."""
    copy_project(directory)
    subprocess.run([*git(directory), "init", "-q"], check=True)
    subprocess.run([*git(directory), "add", "-A"], check=True)
    subprocess.run([*git(directory), "commit", "-q", "-m", "base"], check=True)
    return directory
