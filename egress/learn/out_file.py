"""The proposals file ``egress learn --out`` writes: it may replace only an earlier proposals file, never through a link,
never a FIFO or device, never inside ``.git``, and it is written whole (a temporary file beside it, renamed over it) or
not at all. Every failure is one LearnError naming the path and the fix."""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from .flows import LearnError
from .proposals import MARKER

__all__ = ["check_out", "write_out"]

_OTHER = "give another --out file"


def check_out(path: Path) -> None:
    """Refuse ``path`` unless it is a new file in an existing folder, or an earlier proposals file (a regular file, no
    link): a command deletes only what it wrote. Checked before the logs are read."""
    shown = str(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:  # a parent that is a file (ENOTDIR), a folder that cannot be searched, a name too long
        raise LearnError(shown, None, f"cannot be used ({exc.strerror})", _OTHER) from None
    folder = path.parent
    if info is None and not folder.is_dir():
        raise LearnError(shown, None, f"cannot be written: the folder '{folder}' does not exist",
                         f"create the folder first, or {_OTHER}") from None
    if ".git" in Path(os.path.realpath(folder)).parts or path.name == ".git":
        raise LearnError(shown, None, "is inside a .git folder, which is git's own", f"{_OTHER} outside .git")
    if info is None:
        return
    if stat.S_ISLNK(info.st_mode):
        raise LearnError(shown, None, "is a symbolic link; egress learn never writes through a link",
                         f"{_OTHER}, or remove the link yourself")
    if stat.S_ISDIR(info.st_mode):
        raise LearnError(shown, None, "is a directory", "give a file name for the proposals, e.g. --out learn-proposals.yaml")
    if not stat.S_ISREG(info.st_mode):
        raise LearnError(shown, None, "is not a regular file (a FIFO, device or socket), so it is not replaced", _OTHER)
    try:
        with open(path, "rb") as handle:  # a regular file (just checked): reading it cannot block
            first = handle.readline(len(MARKER) + 1).decode("utf-8", errors="replace")
    except OSError as exc:
        raise LearnError(shown, None, f"cannot be read ({exc.strerror})", _OTHER) from None
    if not first.startswith(MARKER):
        raise LearnError(shown, None, "exists and is not an earlier egress learn proposals file, so it is not replaced",
                         f"{_OTHER}, or remove it yourself")


def write_out(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (checked by check_out): a new temporary file beside it (O_EXCL, so never through a
    planted name), renamed over it, so a link or FIFO put there meanwhile is replaced, never written through."""
    temporary = None
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            if hasattr(os, "fchmod"):
                os.fchmod(handle.fileno(), 0o666 & ~_umask())  # mkstemp makes 0600: the mode open() would have given
            handle.write(text)
        os.replace(temporary, path)
        temporary = None
    except OSError as exc:
        raise LearnError(str(path), None, f"cannot be written ({exc.strerror})", f"{_OTHER} in a folder you can write") from None
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask
