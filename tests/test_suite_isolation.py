"""The suite's own guards against machine state (conftest.py): what they promise, checked, so a change to them shows."""
from __future__ import annotations

import os
import subprocess

from hypothesis import settings


def test_git_reads_only_the_suites_config(tmp_path):
    """No user or system git config (commit.gpgsign, hooks, autocrlf) reaches a test's git."""
    listed = subprocess.run(["git", "-C", str(tmp_path), "config", "--list", "--show-origin"], capture_output=True, text=True, check=True)
    origins = {line.split("\t", 1)[0] for line in listed.stdout.splitlines()}
    assert origins == {f"file:{os.environ['GIT_CONFIG_GLOBAL']}"}
    assert "GIT_DIR" not in os.environ and os.environ["GIT_CONFIG_NOSYSTEM"] == "1"


def test_property_tests_are_the_same_on_every_run():
    """Derandomized (the same examples everywhere), no example database in the working tree, no timing."""
    profile = settings.default
    assert profile.derandomize is True and profile.database is None and profile.deadline is None
