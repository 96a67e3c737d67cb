#!/usr/bin/env python3
"""Create or reuse the project virtualenv, then run a command inside it.

    python3 dev.py egress matrix --stack dev     # any command installed in the venv
    python3 dev.py test [pytest args]            # the test suite

Needs only python3 (3.10+). The venv lives in .venv and is rebuilt when
pyproject.toml changes (its hash is stamped into the venv).
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".egress-matrix-stamp"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")


def _wanted_stamp() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def ensure_venv() -> None:
    wanted = _wanted_stamp()
    if STAMP.exists() and STAMP.read_text() == wanted and (BIN / "python").exists():
        return
    print("dev.py: preparing .venv (first run or pyproject.toml changed) ...", file=sys.stderr)
    venv.EnvBuilder(with_pip=True, clear=not (BIN / "python").exists()).create(VENV)
    pip = [str(BIN / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "-e", f"{ROOT}[test]"], check=True)
    STAMP.write_text(wanted)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    ensure_venv()
    if argv[0] == "test":
        command = [str(BIN / "python"), "-m", "pytest", *argv[1:]]
    else:
        exe = BIN / argv[0]
        command = [str(exe) if exe.exists() else argv[0], *argv[1:]]
    env = dict(os.environ, VIRTUAL_ENV=str(VENV), PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(command, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
