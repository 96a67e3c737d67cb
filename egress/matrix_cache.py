"""A cache of ``egress matrix``'s output: a repeated run skips importing pydantic, the models and the catalog.

Why it is safe (a hit prints exactly what a fresh run would):

- The key covers the code: every ``.py`` file of this package (content, not dates), the Python build, and the names of
  the installed distributions with their versions (pydantic, PyYAML, botocore's endpoint data, ...); and the request:
  project directory, stack, format, table width, today's date (expiry and retirement depend on it) and the environment
  the core reads (EGRESS_TODAY, AWS_DATA_PATH, whether ~/.aws/models exists).
- The entry lists every file the computing run opened for reading and every directory it listed, as the interpreter
  itself reported them (``sys.addaudithook``: the ``open``, ``os.listdir`` and ``os.scandir`` events), and every path
  whose existence or kind it asked (``os.stat``, behind ``Path.exists``/``is_file``/``is_dir`` and ``os.path``; no audit
  event reports it, so ``os.stat`` is wrapped while the run computes): what it was, absence included (a catalog file
  behind a dangling link, skipped as no file, counts once the link's target appears). All outside the Python
  installation (covered by the distributions' versions) and this package's bytecode; a hit re-reads each file
  (SHA-256), each directory listing and each path's kind and must find them all unchanged. Any change is a miss.
- Only a run that printed no warning and raised no error is stored; errors are never cached. Output is stored as printed
  (redacted), the newest KEEP entries kept, in folders this user made and owns that nobody else can write (made 0700):
  a cache folder owned by another user, writable by others, or a link, is not used at all (no cache, same output), so
  nobody can plant an entry (its key is computable from public code). Off under pytest and with EGRESS_NO_CACHE=1.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any, Callable, Optional

VERSION = 2  # 2: entries record the kind (or absence) of every path the run asked about
KEEP = 64  # entries kept (newest first): one per stack, format and width in use, and a few older states
PACKAGE = Path(__file__).resolve().parent
_recording: Optional[dict[str, Any]] = None
_hooked = False
_os_stat = os.stat


def enabled() -> bool:
    return not os.environ.get("EGRESS_NO_CACHE") and "pytest" not in sys.modules


def cache_dir() -> Path:
    # the XDG spec: a relative XDG_CACHE_HOME is invalid and ignored (it would put the cache wherever the command runs)
    xdg = os.environ.get("XDG_CACHE_HOME") or ""
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "egress-matrix" / "matrix"


def _own_folder(folder: Path, create: bool) -> bool:
    """Is ``folder`` one only this user can change: a real folder (no link) this user owns, not writable by group or
    others? Made 0700 when missing and ``create``."""
    if not hasattr(os, "getuid"):
        return True  # Windows: no owner and mode bits to judge; the folder's ACL is the user profile's
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        if not create:
            return False
        try:
            os.mkdir(folder, 0o700)
            info = os.lstat(folder)
        except OSError:
            return False
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def trusted_dir(create: bool = False) -> Optional[Path]:
    """The cache folder when it and its parent egress-matrix/ are this user's own (see _own_folder), else None: then
    nothing is read from or written to it."""
    folder = cache_dir()
    if create:
        try:
            folder.parent.parent.mkdir(parents=True, exist_ok=True)  # ~/.cache (or XDG_CACHE_HOME): not ours to judge
        except OSError:
            return None
    return folder if _own_folder(folder.parent, create) and _own_folder(folder, create) else None


def _read_entry(path: Path) -> dict[str, Any]:
    """An entry this user wrote: a regular file (no link) this user owns."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
            raise ValueError("not this user's entry")
        return json.loads(handle.read().decode("utf-8"))


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


def _kind(path: str) -> str:
    """What ``os.stat(path)`` finds: file, dir, other, missing, or an error number."""
    try:
        mode = _os_stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as exc:
        return f"error {exc.errno}"
    except ValueError:  # an embedded NUL
        return "invalid"
    return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"


def _recording_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
    """os.stat while a run computes: each path asked about is noted (with its kind when the entry is stored)."""
    recording = _recording
    if recording is not None and not args and kwargs.get("dir_fd") is None and kwargs.get("follow_symlinks", True) \
            and isinstance(path, (str, os.PathLike)):
        recording["stats"].add(os.path.abspath(os.fspath(path)))
    return _os_stat(path, *args, **kwargs)


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
    return all(_kind(path) == kind for path, kind in entry["stats"].items()) and \
        all(_file_digest(path) == digest for path, digest in entry["files"].items()) and \
        all(_listing(path) == names for path, names in entry["dirs"].items())


def cached(parts: list[Any], compute: Callable[[], tuple[str, list[str]]]) -> tuple[str, list[str]]:
    """(output, warnings) of ``compute()``, from the cache when nothing it read has changed. ``parts``: the request."""
    global _recording, _hooked
    if not enabled():
        return compute()
    key = _key(parts)
    folder = trusted_dir()
    if folder is not None:
        try:
            entry = _read_entry(folder / f"{key}.json")
            if entry.get("version") == VERSION and _hit(entry):
                return entry["output"], []
        except (OSError, ValueError, KeyError, AttributeError, TypeError):
            pass  # no entry, or one that cannot be read as ours: a miss, computed and stored afresh below
    if not _hooked:
        sys.addaudithook(_hook)
        _hooked = True
    _recording = {"files": set(), "dirs": set(), "stats": set()}
    os.stat = _recording_stat  # type: ignore[assignment]  # no audit event reports a stat (see the module's docstring)
    try:
        output, warnings = compute()
        recorded = _recording
    finally:
        _recording = None
        os.stat = _os_stat  # type: ignore[assignment]
    if not warnings:
        _store(key, output, recorded)
    return output, warnings


def _store(key: str, output: str, recorded: dict[str, set[str]]) -> None:
    import contextlib
    import tempfile

    from .redact import redact

    installation = _installation()
    entry = {"version": VERSION, "output": redact(output),
             "stats": {p: _kind(p) for p in sorted(recorded["stats"]) if _relevant(p, installation)},
             "files": {f: _file_digest(f) for f in sorted(recorded["files"]) if _relevant(f, installation)},
             "dirs": {d: _listing(d) for d in sorted(recorded["dirs"]) if _relevant(d, installation)}}
    folder = trusted_dir(create=True)
    if folder is None:
        return  # a cache folder someone else could change: no cache, same output
    path = folder / f"{key}.json"
    temporary = None
    try:
        # mkstemp: a new file (O_EXCL, 0600) with an unguessable name, so a planted name or link is never written through
        fd, temporary = tempfile.mkstemp(prefix=f"{key}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(entry, handle)
        os.replace(temporary, path)
        temporary = None
        _prune(path.parent)
    except OSError:
        pass  # a read-only home: no cache, same output
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _prune(folder: Path) -> None:
    """Keep the KEEP newest entries: every change of an input or of the code leaves an entry nothing will hit again."""
    entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        old.unlink(missing_ok=True)
