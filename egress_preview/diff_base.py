"""``egress diff``: the base side, previewed with its own code (the ref's committed files, run in a child process with
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
from typing import Any, Callable

from egress.errors import EgressError
from egress.learn.lines_text import printable


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
# Not HOME: SDKs find credentials there without any variable (~/.aws/credentials, ~/.pulumi/credentials.json,
# ~/.kube/config, ~/.azure/, ~/.docker/config.json, gcloud's application default credentials). The child gets an
# empty home of its own, and every such tool is pointed into it or at /dev/null (_home_env).
_BASE_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "SYSTEMROOT", "EGRESS_TODAY", "TZ")
_STDERR_LINES = 5  # of a failed base preview, shown redacted: the error and where it came from, not the whole output
_REF_FIX = "Fix: pass a commit, branch or tag that exists (in CI, fetch the base branch: actions/checkout with fetch-depth: 0)"
# The base is the committed bytes, read as objects (ls-tree, cat-file --batch), never through git archive or a checkout:
# those apply attributes, so the base's .gitattributes could run a filter driver the user's config defines (git-lfs, any
# command) with the user's credentials, and export-ignore/export-subst or line-ending settings change what runs.
_GIT = ("git",)
_LINK = b"120000"  # a tree entry that is a symbolic link: its blob is the target


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


def _home_env(home: Path) -> dict[str, str]:
    """The child's own empty home, and every credential store a cloud, Pulumi or Kubernetes SDK would open pointed into
    it or at the null device (no instance-metadata credentials for botocore either; the base preview is offline)."""
    env = {"HOME": str(home), "USERPROFILE": str(home), "PULUMI_HOME": str(home / ".pulumi"), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_CACHE_HOME": str(home / ".cache"), "XDG_DATA_HOME": str(home / ".local" / "share"), "AZURE_CONFIG_DIR": str(home / ".azure"),
           "DOCKER_CONFIG": str(home / ".docker"), "CLOUDSDK_CONFIG": str(home / ".gcloud"), "KUBECONFIG": os.devnull,
           "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull, "AWS_EC2_METADATA_DISABLED": "true",
           "EGRESS_NO_CACHE": "1"}  # the matrix cache: never the user's, and nothing left behind
    return env


def _committed_tar(project_root: Path, ref: str, sha: str) -> bytes:
    """The tree of ``sha`` as a tar of its committed bytes: files with their executable bit, links as links; a submodule
    (a commit in the tree) is left out, as git archive leaves it empty. No attribute, filter or conversion applies."""
    def git(*args: str, given: bytes | None = None) -> bytes:
        try:
            return subprocess.run([*_GIT, "-C", str(project_root), *args], input=given, capture_output=True, check=True).stdout
        except subprocess.CalledProcessError as exc:
            raise DiffError(f"git ref '{ref}' ({sha}): {printable(exc.stderr.decode(errors='replace').strip())}. {_REF_FIX}") from None

    files = []  # (mode, object id, path)
    for record in git("ls-tree", "-r", "-z", "--full-tree", sha).split(b"\0"):
        if record:
            meta, _, path = record.partition(b"\t")
            mode, kind, oid = meta.split(b" ")
            if kind == b"blob" and (mode == _LINK or mode.startswith(b"100")):  # files (old trees also say 100664) and links
                files.append((mode, oid, os.fsdecode(path)))
    contents = git("cat-file", "--batch", given=b"".join(oid + b"\n" for _, oid, _ in files))
    out = io.BytesIO()
    at = 0
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for mode, oid, path in files:
            header_end = contents.index(b"\n", at)
            header = contents[at:header_end].split(b" ")  # "<oid> blob <size>", or "<oid> missing"
            if len(header) != 3:
                raise DiffError(f"git ref '{ref}' ({sha}): '{printable(path)}' is not in the repository (a shallow or partial clone). {_REF_FIX}")
            size = int(header[2])
            data = contents[header_end + 1:header_end + 1 + size]
            at = header_end + 1 + size + 1  # the content, then a newline
            info = tarfile.TarInfo(path)
            if mode == _LINK:
                info.type, info.linkname = tarfile.SYMTYPE, os.fsdecode(data)
                tar.addfile(info)
            else:
                info.mode, info.size = 0o755 if int(mode, 8) & 0o100 else 0o644, size
                tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _links_the_data_filter_refuses(skipped: list[str]):
    """tarfile's "data" filter, except that a symbolic or hard link it refuses (absolute, or pointing outside the tree)
    is left out instead of aborting: the preview reads the matrix, the stacks and the code, never such a link, and a
    base whose program needed one fails later with its own error."""
    def extraction_filter(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        try:
            return tarfile.data_filter(member, path)
        except tarfile.FilterError:
            if member.issym() or member.islnk():
                skipped.append(member.name)
                return None
            raise
    return extraction_filter


def _base_error(stderr: str) -> str:
    """The last lines a failed base preview wrote, as one may show them: credentials and private keys masked, control
    characters escaped (the base is someone's branch, and its output reaches a terminal and a CI log)."""
    from egress.redact import redact

    lines = [printable(redact(line)) for line in stderr.strip().splitlines()[-_STDERR_LINES:]] or ["(no output)"]
    return " | ".join(line.strip() for line in lines)


def _say(note: str) -> None:
    sys.stderr.write(note + "\n")


def base_snapshot(project_root: Path, ref: str, stack: str, say: Callable[[str], None] = _say) -> dict[str, Any]:
    """Preview ``stack`` as it was at ``ref``, with that ref's code and data.

    The base's own code is EXECUTED (its program, components and policies, in a child Python process): only compare
    against a ref whose code you would run. The child gets a scrubbed environment (``_BASE_ENV`` plus the PYTHONPATH set
    here: no cloud, Pulumi or Kubernetes credentials) and an empty temporary HOME (``_home_env``: no credential file an
    SDK finds on its own). It still runs as the user: it can read any file the user can read, and reach the network.
    ``ref`` is resolved to a commit with ``git rev-parse --verify --end-of-options`` before any other git command sees it, and a
    ref that looks like an option is refused. The base is its committed bytes (``_committed_tar``: no
    attribute, filter or conversion applies). Links the base holds that point outside its tree are left out (``say``
    names them)."""
    sha = _resolve_ref(project_root, ref)
    archive = _committed_tar(project_root, ref, sha)
    with tempfile.TemporaryDirectory(prefix="egress-diff-") as directory, tempfile.TemporaryDirectory(prefix="egress-diff-home-") as home:
        tree = Path(directory)
        skipped: list[str] = []
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            try:
                tar.extractall(tree, filter=_links_the_data_filter_refuses(skipped))
            except tarfile.FilterError as exc:  # not a link: the tree holds none, but never a traceback
                raise DiffError(f"git ref '{ref}' ({sha}): '{printable(exc.tarinfo.name)}' cannot be unpacked safely. "
                                "Fix: compare against a ref without it") from None
        if skipped:
            say(f"note: git ref '{ref}': left out {len(skipped)} link(s) pointing outside the tree, which the preview does not "
                f"read: {', '.join(printable(name) for name in skipped)}")
        if not (tree / "egress_preview" / "preview.py").exists():
            raise DiffError(f"git ref '{ref}' predates egress preview, so it cannot be previewed with its own code. Fix: use a later base")
        if not (tree / "stacks" / f"Pulumi.{stack}.yaml").exists():
            return {"stack": stack, "resources": [], "requirements": [], "violations": [], "outputs": {}, "coverage": [], "warnings": [],
                    "missing": True}
        env = {name: os.environ[name] for name in _BASE_ENV if name in os.environ}
        env.update(_home_env(Path(home)))
        env.update(PYTHONPATH=os.pathsep.join([str(tree), str(tree / "policy")]), PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1")
        done = subprocess.run([sys.executable, "-c", _BASE_SCRIPT, str(tree), stack], cwd=tree, env=env, capture_output=True, text=True,
                              errors="replace")
        if done.returncode != 0:
            raise DiffError(f"previewing stack '{stack}' at '{ref}' failed: {_base_error(done.stderr)}")
        return _result(done.stdout, stack, ref, sha)


def _result(stdout: str, stack: str, ref: str, sha: str) -> dict[str, Any]:
    """The preview's JSON object, the last line the base's code wrote; anything else is one error naming the ref."""
    lines = stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else None
    except ValueError:
        result = None
    if isinstance(result, dict):
        return result
    from egress.redact import redact

    last = f"its last line is '{printable(redact(lines[-1][:200]))}'" if lines else "it wrote nothing"
    raise DiffError(f"previewing stack '{stack}' at '{ref}' ({sha}) gave no result: the base's code exited 0 without the preview's JSON "
                    f"as its last line of output ({last}). Fix: compare against a ref whose egress preview --stack {stack} runs to the end")
