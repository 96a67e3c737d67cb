"""A cache of ``egress matrix``'s output: a repeated run skips importing pydantic, the models and the catalog.

Why it is safe (a hit prints exactly what a fresh run would):

- The key covers the code: every ``.py`` file of this package (content, not dates), the Python build, and the names of
  the installed distributions with their versions (pydantic, PyYAML, botocore's endpoint data, ...); and the request:
  project directory, stack, format, table width, today's date (expiry and retirement depend on it) and the environment
  the core reads (EGRESS_TODAY, AWS_DATA_PATH, whether ~/.aws/models exists).
- The entry lists every file the computing run opened for reading and every directory it listed, as the interpreter
  itself reported them (``sys.addaudithook``: the ``open``, ``os.listdir`` and ``os.scandir`` events), outside the
  Python installation (covered by the distributions' versions) and this package's bytecode; a hit re-reads each file
  (SHA-256) and each directory listing and must find them all unchanged. A missing, unreadable or changed one is a miss.
- Only a run that printed no warning and raised no error is stored; errors are never cached. Output is stored as printed
  (redacted), in a directory only the user can read, the newest KEEP entries kept. Off under pytest and with
  EGRESS_NO_CACHE=1.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Optional

VERSION = 1
KEEP = 64  # entries kept (newest first): one per stack, format and width in use, and a few older states
PACKAGE = Path(__file__).resolve().parent
_recording: Optional[dict[str, set[str]]] = None
_hooked = False


def enabled() -> bool:
    return not os.environ.get("EGRESS_NO_CACHE") and "pytest" not in sys.modules


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "egress-matrix" / "matrix"


def _installation() -> tuple[str, ...]:
    return tuple(sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}))


def code_version() -> str:
    digest = hashlib.sha256(f"{VERSION}\0{sys.version}\0{sys.executable}\0".encode())
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(f"{path.relative_to(PACKAGE)}\0".encode() + path.read_bytes() + b"\0")
    for entry in sys.path:
        if entry.endswith("site-packages") and os.path.isdir(entry):
            digest.update("\0".join(sorted(n for n in os.listdir(entry) if n.endswith((".dist-info", ".egg-info")))).encode())
    return digest.hexdigest()


def _file_digest(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def _listing(path: str) -> Optional[list[str]]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return None


def _hook(event: str, args: tuple) -> None:
    recording = _recording
    if recording is None or event not in ("open", "os.listdir", "os.scandir") or not args:
        return
    path = args[0]
    if not isinstance(path, (str, os.PathLike)):
        return  # a file descriptor, or bytes
    if event == "open":
        mode, flags = (args[1], args[2]) if len(args) >= 3 else (None, 0)
        if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR)):
            return
        recording["files"].add(os.path.abspath(os.fspath(path)))
    else:
        recording["dirs"].add(os.path.abspath(os.fspath(path) or "."))


def _relevant(path: str, installation: tuple[str, ...]) -> bool:
    real = os.path.realpath(path)
    return not real.endswith(".pyc") and "__pycache__" not in real and not any(real.startswith(p + os.sep) for p in installation)


def _key(parts: list[Any]) -> str:
    env = [os.environ.get(name) for name in ("EGRESS_TODAY", "AWS_DATA_PATH")]
    request = [VERSION, code_version(), parts, datetime.date.today().isoformat(), env, (Path.home() / ".aws" / "models").exists()]
    return hashlib.sha256(json.dumps(request, default=str).encode()).hexdigest()


def _hit(entry: dict[str, Any]) -> bool:
    return all(_file_digest(path) == digest for path, digest in entry["files"].items()) and \
        all(_listing(path) == names for path, names in entry["dirs"].items())


def cached(parts: list[Any], compute: Callable[[], tuple[str, list[str]]]) -> tuple[str, list[str]]:
    """(output, warnings) of ``compute()``, from the cache when nothing it read has changed. ``parts``: the request."""
    global _recording, _hooked
    if not enabled():
        return compute()
    key = _key(parts)
    path = cache_dir() / f"{key}.json"
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        if entry.get("version") == VERSION and _hit(entry):
            return entry["output"], []
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    if not _hooked:
        sys.addaudithook(_hook)
        _hooked = True
    _recording = {"files": set(), "dirs": set()}
    try:
        output, warnings = compute()
        recorded = _recording
    finally:
        _recording = None
    if not warnings:
        _store(path, output, recorded)
    return output, warnings


def _store(path: Path, output: str, recorded: dict[str, set[str]]) -> None:
    from .redact import redact

    installation = _installation()
    entry = {"version": VERSION, "output": redact(output),
             "files": {f: _file_digest(f) for f in sorted(recorded["files"]) if _relevant(f, installation)},
             "dirs": {d: _listing(d) for d in sorted(recorded["dirs"]) if _relevant(d, installation)}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(entry, handle)
        os.replace(temporary, path)
        _prune(path.parent)
    except OSError:
        pass  # a read-only home: no cache, same output


def _prune(folder: Path) -> None:
    """Keep the KEEP newest entries: every change of an input or of the code leaves an entry nothing will hit again."""
    entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        old.unlink(missing_ok=True)
