"""Small text files a person names (a style file, word timings, a training config): read whole,
and only when they are regular files of a sensible size. A device (``/dev/zero``) would otherwise
be read until memory ran out, a pipe would block for ever, and a symlink loop would raise.
"""

from __future__ import annotations

import errno
from pathlib import Path


class SmallFileError(ValueError):
    """Why a named file cannot be read as a small text file, in words (without the path)."""


def small_file_text(path: Path, limit: int, encoding: str = "utf-8") -> str:
    """The text of ``path``, a regular file of at most ``limit`` bytes; ``SmallFileError`` saying
    why not (no such file, a folder, a pipe or device, a symlink loop, too large, unreadable)."""
    try:
        status = path.stat()
    except FileNotFoundError:
        raise SmallFileError("no such file") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise SmallFileError("a symlink loop") from None
        raise SmallFileError(error.strerror or str(error)) from None
    if path.is_dir():
        raise SmallFileError("is a folder; name a file")
    if not path.is_file():
        raise SmallFileError("not a regular file (a pipe, device or socket); name a file")
    if status.st_size > limit:
        raise SmallFileError(f"is {status.st_size / 1e6:.1f} MB; at most {limit / 1e6:g} MB is read")
    try:
        return path.read_text(encoding=encoding)
    except UnicodeDecodeError:
        raise SmallFileError(f"not {encoding.upper().replace('-SIG', '')} text") from None
    except OSError as error:
        raise SmallFileError(error.strerror or str(error)) from None
