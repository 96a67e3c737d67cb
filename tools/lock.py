#!/usr/bin/env python3
"""Re-lock the hashed dependency files the Pulumi workflows install (docs/CI.md, "Locked dependencies").

    python3 tools/lock.py                        # re-lock, keeping every pinned version that still fits
    python3 tools/lock.py --upgrade              # move every package to the newest version pyproject allows
    python3 tools/lock.py --upgrade-package pulumi-aws

Writes, from pyproject.toml's declarations:
    requirements.txt          the program's .venv: the core and the `pulumi` extra (provider SDKs, CLI SDK, policy SDK)
    requirements-build.txt    setuptools, installed first into both venvs: the lock's sdists and the project itself
                              are then built without build isolation, so no build dependency comes unhashed
    policy/requirements.txt   the pack's policy/venv: the core's dependencies and pulumi-policy, at the versions of
                              requirements.txt (the pack and the program judge with the same libraries)

Every file pins exact versions with the sha256 of every distribution file, for CPython TARGET_PYTHON on Linux
x86_64 (the workflows' setup-python and runners; tests/test_workflows.py checks they agree). The project itself
is not in them (a directory cannot be hash-checked): the workflows install it with --no-deps afterwards.
The resolver (uv, pinned) lives in a throwaway virtualenv in .tools/lock (gitignored), never in .venv.
Needs python3 (3.11+) and the package index; no other project tooling (dev.py is not used).
"""
from __future__ import annotations

import subprocess
import sys
import tomllib
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / ".tools" / "lock"
UV_VERSION = "0.13.8"
TARGET_PYTHON = "3.11"
TARGET_PLATFORM = "x86_64-unknown-linux-gnu"
COMMAND = "python3 tools/lock.py"
# idstools ships only an sdist: building it without isolation needs setuptools' own bdist_wheel (setuptools 70.1+).
SDIST_BUILD = "setuptools>=70.1"

HEADER = """\
# {what}
# Hashed lock: exact versions and the sha256 of every file, for CPython {python} on Linux x86_64. Installed with
# --require-hashes (docs/CI.md, "Locked dependencies"); the project itself is installed after it with --no-deps.
# Do not edit by hand: change pyproject.toml, then run `{command}` (`--upgrade` for newer versions).
"""
WHAT = {
    "requirements.txt": "The Pulumi program's .venv (Pulumi.yaml: toolchain pip): the core and pyproject's `pulumi` extra.",
    "requirements-build.txt": "Build tools, installed first into .venv and policy/venv: setuptools builds the sdists below and the project.",
    "policy/requirements.txt": "The policy pack's policy/venv (PulumiPolicy.yaml): the core's dependencies and pulumi-policy.",
}


def uv() -> Path:
    """uv UV_VERSION in .tools/lock, installed there on first use."""
    exe = TOOLS / "bin" / "uv"
    if exe.exists():
        version = subprocess.run([str(exe), "--version"], capture_output=True, text=True).stdout.split()
        if version[1:2] == [UV_VERSION]:
            return exe
    venv.EnvBuilder(with_pip=True, clear=True).create(TOOLS)
    subprocess.run([str(TOOLS / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    f"uv=={UV_VERSION}"], check=True)
    return exe


def inputs() -> dict[str, Path]:
    """The requirement inputs pyproject.toml implies beyond its own sections, written to .tools/lock/."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    policy_sdk = [r for r in pyproject["project"]["optional-dependencies"]["pulumi"] if r.startswith("pulumi-policy")]
    files = {
        "build-system.in": [*pyproject["build-system"]["requires"], SDIST_BUILD],
        "policy-pack.in": policy_sdk,
    }
    paths = {}
    for name, lines in files.items():
        path = TOOLS / name
        path.write_text("\n".join(lines) + "\n")
        paths[name] = path.relative_to(ROOT)
    return paths


def compile_lock(exe: Path, output: str, sources: list[str], extra: list[str]) -> None:
    """One `uv pip compile`, then the header, and annotations naming pyproject instead of the generated inputs."""
    command = [str(exe), "pip", "compile", "--no-config", "--quiet", *sources,
               "--generate-hashes", "--python-version", TARGET_PYTHON, "--python-platform", TARGET_PLATFORM,
               "--custom-compile-command", COMMAND, "--output-file", output, *extra]
    subprocess.run(command, cwd=ROOT, check=True)
    path = ROOT / output
    text = path.read_text()
    text = text.replace(f"-r {TOOLS.relative_to(ROOT)}/build-system.in", "pyproject.toml [build-system] (tools/lock.py)")
    text = text.replace(f"-r {TOOLS.relative_to(ROOT)}/policy-pack.in", "pyproject.toml [pulumi] pulumi-policy (tools/lock.py)")
    header = HEADER.format(what=WHAT[output], python=TARGET_PYTHON, command=COMMAND)
    path.write_text(header + text)


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):
        print("tools/lock.py needs Python 3.11+ (tomllib)", file=sys.stderr)
        return 2
    TOOLS.mkdir(parents=True, exist_ok=True)
    exe = uv()
    paths = inputs()
    build, policy = str(paths["build-system.in"]), str(paths["policy-pack.in"])
    # The program's lock first; the other two are held to its versions (-c), so all three agree.
    compile_lock(exe, "requirements.txt", ["pyproject.toml", build], ["--extra", "pulumi", *argv])
    compile_lock(exe, "requirements-build.txt", [build], ["-c", "requirements.txt"])
    compile_lock(exe, "policy/requirements.txt", ["pyproject.toml", policy, build], ["-c", "requirements.txt"])
    print("locked: requirements.txt, requirements-build.txt, policy/requirements.txt; if pulumi moved, set the "
          "workflows' pulumi-version to it (tests/test_workflows.py checks)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
