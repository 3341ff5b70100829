"""Writing files so that a crash or a full disk never leaves a half-written file behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from app.core.interrupts import terminate_as_interrupt


def write_together(files: Sequence[tuple[Path, bytes]]) -> None:
    """Write several files so that they land together or not at all (captions and their word
    times): each is written in full beside its target first, and only then are they renamed into
    place. A rename that fails takes back the files already placed that were new, and SIGTERM
    during the write is taken as Ctrl+C so nothing staged is left behind."""
    with terminate_as_interrupt():
        _write_together(files)


def _write_together(files: Sequence[tuple[Path, bytes]]) -> None:
    # A link is written through, as editors do: the file it names is written, the link stays a
    # link (the temporary file renamed over it replaced the link with a file).
    files = [(path.resolve() if path.is_symlink() else path, data) for path, data in files]
    staged: list[tuple[Path, Path]] = []
    placed: list[Path] = []
    try:
        for path, data in files:
            staged.append((_staged(path, data), path))
        for temporary, path in staged:
            existed = path.exists()
            temporary.replace(path)
            if not existed:
                placed.append(path)
    except BaseException:
        for temporary, _ in staged:
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
        for path in placed:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        raise


def _staged(path: Path, data: bytes) -> Path:
    """``data`` in a temporary file beside ``path``, on disk, with the permissions ``path`` has
    (the usual ones for a new file)."""
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    temporary = Path(name)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        temporary.chmod(mode)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
    return temporary


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
