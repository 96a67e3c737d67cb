"""The output folder of ``egress render`` and ``egress preview --out DIR``: write there without ever destroying a file
egress did not write (DESIGN.md, "commands delete only files they wrote").

    check_out_dir(out, project_root)                 the cheap refusals, before any work: a non-folder, a link, the project
                                                     or a folder holding it, anything inside .git
    write_output(out, files, scopes, project_root)   -> Written: write ``files`` ({relative path: text}) and replace what an
                                                     earlier run wrote under ``scopes`` (top-level names: a target's folder,
                                                     resources.json)

What an earlier run wrote is what ``DIR/.egress-manifest.json`` lists, with each file's SHA-256: a listed file that still
has its hash is ours to delete or overwrite; a file the user changed, a foreign file and any symbolic link are kept, and
nothing is written through a link. A folder without a manifest is used only when it is empty or holds just files this
run writes (an earlier version's output); anything else there makes the run stop before it changes anything.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterable, Mapping, Optional

from .errors import EgressError

MANIFEST = ".egress-manifest.json"
_FORMAT = "egress-matrix output manifest"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_FRESH = "Fix: pass a new or empty folder to --out (nothing was written or deleted)"


class OutDirError(EgressError):
    """The output folder cannot be written without touching something egress did not write."""


@dataclass
class Written:
    written: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # one note per file left in place, saying why


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISREG, "a file"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a folder"


def _lstat(path: Path) -> Optional[os.stat_result]:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # missing, or below a file: creating it fails later, with its own error
        return None


def check_out_dir(out: Path, project_root: Optional[Path] = None, tops: Iterable[str] = ()) -> None:
    """Refuse an --out that is not a folder (or a path to one), a symbolic link, the project, a folder holding the
    project, or a place inside a git directory; with ``tops`` (every top-level name a run could write), also a folder
    without a manifest that holds anything else (so a slow command stops before its work, not after)."""
    info = _lstat(out)
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise OutDirError(f"--out '{out}' is a symbolic link; egress never writes through links. Fix: pass the folder it points to "
                          f"({os.path.realpath(out)}) or another folder")
    if info is not None and not stat.S_ISDIR(info.st_mode):
        raise OutDirError(f"--out '{out}' is {_kind(info.st_mode)}, not a folder. Fix: pass a folder (it is created when missing)")
    real = Path(os.path.realpath(out))
    if ".git" in real.parts:
        raise OutDirError(f"--out '{out}' is inside a git directory ({real}), which holds the repository, not output. "
                          "Fix: pass a folder outside .git")
    if project_root is not None:
        root = Path(os.path.realpath(project_root))
        if real == root or root.is_relative_to(real):
            raise OutDirError(f"--out '{out}' is the project or holds it ({root}): its sources are not output. "
                              f"Fix: pass a folder for the output only, e.g. {root / 'out'}")
    names = set(tops)
    if names and info is not None and _lstat(out / MANIFEST) is None:
        with os.scandir(out) as entries:
            _refuse_foreign(out, sorted(entry.name for entry in entries if entry.name not in names or entry.is_symlink()))


def _relative(text: object, where: str) -> PurePosixPath:
    path = PurePosixPath(text) if isinstance(text, str) else None
    if path is None or not text or path.is_absolute() or "\\" in text or any(part in ("", ".", "..") for part in str(text).split("/")):
        raise OutDirError(f"{where}: {text!r} is not a plain relative path. Fix: delete the manifest only if the folder holds nothing of "
                          "yours, or pass another --out")
    return path


def _read_manifest(out: Path) -> Optional[dict[str, str]]:
    path = out / MANIFEST
    info = _lstat(path)
    if info is None:
        return None
    problem = "" if stat.S_ISREG(info.st_mode) else f"it is {_kind(info.st_mode)}"
    document = None
    if not problem:
        try:
            document = json.loads(path.read_bytes())
        except (OSError, ValueError) as exc:
            problem = f"not readable JSON ({exc})"
    files = document.get("files") if isinstance(document, dict) and document.get("format") == _FORMAT else None
    if not problem and not (isinstance(files, dict) and all(isinstance(v, str) and len(v) == 64 for v in files.values())):
        problem = "not a manifest egress wrote"
    if problem:
        raise OutDirError(f"{path}: {problem}. Fix: delete it only if the folder holds nothing of yours, or pass another --out "
                          "(nothing was written or deleted)")
    for name in files:
        _relative(name, str(path))
    return dict(files)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _blocker(out: Path, relative: str) -> Optional[str]:
    """Why a path under ``out`` cannot be reached without following a link or crossing a non-folder ('' when missing)."""
    here = out
    for part in PurePosixPath(relative).parts[:-1]:
        here = here / part
        info = _lstat(here)
        if info is None:
            return ""
        if not stat.S_ISDIR(info.st_mode):
            return f"{here} is {_kind(info.st_mode)}" + ("; egress never writes through links" if stat.S_ISLNK(info.st_mode) else "")
    return None


def _foreign(out: Path, wanted: Mapping[str, bytes]) -> list[str]:
    """What a folder without a manifest holds beyond files at the paths this run writes (links are never ours)."""
    found: list[str] = []
    stack = [out]
    while stack:
        directory = stack.pop()
        with os.scandir(directory) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                relative = Path(entry.path).relative_to(out).as_posix()
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.is_symlink() or not entry.is_file(follow_symlinks=False) or relative not in wanted:
                    found.append(relative)
    return sorted(found)


def _refuse_foreign(out: Path, foreign: list[str]) -> None:
    if foreign:
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        raise OutDirError(f"--out '{out}' is not empty and egress did not write it (no {MANIFEST}): it holds "
                          f"{', '.join(foreign[:3])}{more}. {_FRESH}")


def _check_target(out: Path, relative: str, data: bytes, old: Mapping[str, str], adopted: bool) -> None:
    blocked = _blocker(out, relative)
    if blocked:
        raise OutDirError(f"--out '{out}': cannot write {relative}: {blocked}. {_FRESH}")
    path = out / relative
    info = None if blocked == "" else _lstat(path)
    if info is None:
        return
    if not stat.S_ISREG(info.st_mode):
        raise OutDirError(f"--out '{out}': {path} is {_kind(info.st_mode)} where egress writes a file; it is left alone. {_FRESH}")
    current = _read(path)
    if current == data or adopted or old.get(relative) == _sha(current):
        return
    why = "was changed since egress wrote it" if relative in old else "was not written by egress"
    raise OutDirError(f"--out '{out}': {path} {why}, and this run would overwrite it. Fix: move it away, or pass a new or empty "
                      "folder to --out (nothing was written or deleted)")


def _remove(out: Path, relative: str, digest: str, result: Written) -> None:
    """Delete a file an earlier run wrote if it is still what that run wrote; else keep it and say why."""
    path = out / relative
    blocked = _blocker(out, relative)
    info = None if blocked is not None else _lstat(path)
    if blocked:
        result.kept.append(f"kept {path}: not followed ({blocked})")
    elif info is None:
        return
    elif not stat.S_ISREG(info.st_mode):
        result.kept.append(f"kept {path}: it is {_kind(info.st_mode)} now, not the file egress wrote")
    elif _sha(_read(path)) != digest:
        result.kept.append(f"kept {path}: changed since egress wrote it (no longer part of the output; delete it if not needed)")
    else:
        os.unlink(path)
        result.removed.append(path)
        for parent in PurePosixPath(relative).parents:  # folders the run emptied go too; stop at the first that is not empty
            if parent == PurePosixPath("."):
                break
            try:
                os.rmdir(out / parent)
            except OSError:
                break


def _write_file(out: Path, relative: str, data: bytes) -> Path:
    here = out
    for part in PurePosixPath(relative).parts[:-1]:
        here = here / part
        if _lstat(here) is None:
            os.mkdir(here)
    path = out / relative
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW, 0o666)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return path


def _write_manifest(out: Path, files: Mapping[str, str]) -> None:
    text = json.dumps({"format": _FORMAT, "files": dict(sorted(files.items()))}, indent=1) + "\n"
    fd, temporary = tempfile.mkstemp(prefix=MANIFEST + ".", dir=out)  # O_EXCL: never through a planted link
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, out / MANIFEST)


def write_output(out: Path, files: Mapping[str, str], scopes: Iterable[str], project_root: Optional[Path] = None) -> Written:
    """Write ``files`` under ``out`` and remove what an earlier run wrote under ``scopes`` and this run does not write.
    Every refusal happens before anything is written or deleted."""
    check_out_dir(out, project_root)
    owned = set(scopes)
    data = {str(_relative(name, "a file to write")): text.encode("utf-8") for name, text in files.items()}
    outside = sorted(name for name in data if name.split("/")[0] not in owned)
    if outside:
        raise ValueError(f"files outside the run's scopes {sorted(owned)}: {outside}")  # a caller's bug, not the user's
    exists = _lstat(out) is not None
    manifest = _read_manifest(out) if exists else None
    adopted = exists and manifest is None
    if adopted:
        _refuse_foreign(out, _foreign(out, data))
    old = manifest or {}
    for name in sorted(data):
        _check_target(out, name, data[name], old, adopted)
    result = Written()
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise OutDirError(f"--out '{out}': cannot create the folder ({exc.strerror}). Fix: pass a folder you can write") from None
    recorded = dict(old)  # other scopes' files stay listed; a removed or kept file leaves the list (kept: the user's now)
    try:
        for name in sorted(set(old) - set(data)):
            if name.split("/")[0] in owned:
                _remove(out, name, old[name], result)
                del recorded[name]
        for name in sorted(data):
            result.written.append(_write_file(out, name, data[name]))
            recorded[name] = _sha(data[name])
    except OSError as exc:
        try:  # what was written so far, so a later run can still tell its files from the user's (best effort: already failing)
            _write_manifest(out, recorded)
        except OSError:
            pass
        raise OutDirError(f"--out '{out}': {exc.filename or out}: {exc.strerror}. Fix: make the folder writable, or pass another "
                          "--out") from None
    try:
        _write_manifest(out, recorded)
    except OSError as exc:  # without it, the next run could not tell these files from the user's: not a success
        raise OutDirError(f"--out '{out}': cannot record what was written ({exc.strerror}). Fix: make the folder writable, or pass "
                          "another --out") from None
    return result
