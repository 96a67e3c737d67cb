"""``egress diff``: the base side, previewed with its own code (``git archive`` of the ref, run in a child process with
that tree first on the path and a scrubbed environment), so a change to the compiler shows as what it changes."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from egress.errors import EgressError


class DiffError(EgressError):
    """The base ref cannot be previewed."""


_BASE_SCRIPT = """
import json, sys
from pathlib import Path
from egress.project import open_project
from egress_preview.preview import preview, snapshot
print(json.dumps(snapshot(preview(open_project(Path(sys.argv[1])), sys.argv[2]))))
"""


# What the base's code gets from the environment: enough for Python to start, nothing that opens anything (no cloud or
# Pulumi credentials, no kubeconfig, no tokens): the base is code from a branch, and it is executed.
# EGRESS_TODAY and TZ: the base is judged on the head's date (own entries' expiry), never on another day's.
_BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "SYSTEMROOT", "EGRESS_TODAY", "TZ")
_REF_FIX = "Fix: pass a commit, branch or tag that exists (in CI, fetch the base branch: actions/checkout with fetch-depth: 0)"
# The base is the committed bytes: a user's line-ending settings (core.autocrlf, core.eol) would hand its code over
# converted, and a global attributes file (export-ignore) incomplete. The repository's own .gitattributes still apply.
_GIT = ("git", "-c", "core.autocrlf=false", "-c", "core.eol=lf", "-c", f"core.attributesFile={os.devnull}")


def check_base_ref(ref: str) -> None:
    """Refuse a ref git would read as an option (``--output=FILE`` made ``git archive`` truncate FILE); cheap, so the
    command checks it before its own preview."""
    if not ref or ref.startswith("-") or any(c in ref for c in "\0\n\r"):
        raise DiffError(f"--base '{ref}' is not a git ref (it starts with '-' or is empty); git would read it as an option. "
                        "Fix: pass a commit, branch or tag, e.g. --base origin/main")


def _resolve_ref(project_root: Path, ref: str) -> str:
    """The commit ``ref`` names, as a full SHA, resolved with ``--end-of-options`` so git never reads it as an option."""
    check_base_ref(ref)
    done = subprocess.run([*_GIT, "-C", str(project_root), "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
                          capture_output=True, text=True)
    sha = done.stdout.strip()
    if done.returncode != 0 or len(sha) not in (40, 64) or any(c not in "0123456789abcdef" for c in sha):
        detail = done.stderr.strip() or "no such commit"
        raise DiffError(f"git ref '{ref}': {detail}. {_REF_FIX}")
    return sha


def base_snapshot(project_root: Path, ref: str, stack: str) -> dict[str, Any]:
    """Preview ``stack`` as it was at ``ref``, with that ref's code and data.

    The base's own code is EXECUTED (its program, components and policies, in a child Python process): only compare
    against a ref whose code you would run. The child gets a scrubbed environment (``_BASE_ENV`` plus the PYTHONPATH set
    here: no cloud, Pulumi or Kubernetes credentials). ``ref`` is resolved to a commit with ``git rev-parse --verify
    --end-of-options`` before ``git archive`` sees it, and a ref that looks like an option is refused."""
    sha = _resolve_ref(project_root, ref)
    try:
        archive = subprocess.run([*_GIT, "-C", str(project_root), "archive", "--format=tar", sha], capture_output=True, check=True).stdout
    except subprocess.CalledProcessError as exc:
        raise DiffError(f"git ref '{ref}' ({sha}): {exc.stderr.decode(errors='replace').strip()}. {_REF_FIX}") from None
    with tempfile.TemporaryDirectory(prefix="egress-diff-") as directory:
        tree = Path(directory)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tree, filter="data")
        if not (tree / "egress_preview" / "preview.py").exists():
            raise DiffError(f"git ref '{ref}' predates egress preview, so it cannot be previewed with its own code. Fix: use a later base")
        if not (tree / "stacks" / f"Pulumi.{stack}.yaml").exists():
            return {"stack": stack, "resources": [], "requirements": [], "violations": [], "outputs": {}, "coverage": [], "warnings": [],
                    "missing": True}
        env = {name: os.environ[name] for name in _BASE_ENV if name in os.environ}
        env.update(PYTHONPATH=os.pathsep.join([str(tree), str(tree / "policy")]), PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1")
        done = subprocess.run([sys.executable, "-c", _BASE_SCRIPT, str(tree), stack], cwd=tree, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise DiffError(f"previewing stack '{stack}' at '{ref}' failed: {last}")
        return json.loads(done.stdout.strip().splitlines()[-1])
