"""The error every part of the project store raises for a file it cannot open or an operation
it cannot take (a second writer is ``app.store.lock.ProjectLockedError``), and how a failure of
the database under a project in use is told (``DatabaseError``, ``in_use_failure``), so that no
layer above names the engine."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlite_utils import Database

from app.core.errors import PunctumError


class ProjectError(PunctumError):
    """A project file that cannot be opened or an operation it cannot take."""


#: What the database raises when a project file in use is damaged or refuses a write.
DatabaseError = sqlite3.DatabaseError

#: SQLite's codes for a write the file or the disk refused: READONLY and FULL (primary codes), and
#: the I/O errors of a write, a sync, a truncation or sizing the WAL index (extended codes).
_SQLITE_WRITE_REFUSED, _SQLITE_WRITE_IO = {8, 13}, {778, 1034, 1290, 1546, 4874}


def write_refused(error: BaseException) -> bool:
    """Whether a database error is a write refused (read-only file, full disk), not a file unreadable."""
    code = int(getattr(error, "sqlite_errorcode", 0) or 0)
    return code & 0xFF in _SQLITE_WRITE_REFUSED or code in _SQLITE_WRITE_IO


def in_use_failure(error: DatabaseError) -> ProjectError:
    """A ``DatabaseError`` met while a project is in use (damaged, or no longer writable), told in
    one line."""
    what = "written" if write_refused(error) else "read"
    return ProjectError(f"the project file cannot be {what} ({error}); nothing more was written")


def damaged(db: Database, project: Path, file_id: int, what: str, error: object) -> ProjectError:
    """The error for a row of file ``file_id`` that cannot be read (``what``: "gap measures"...):
    one line naming the project and the file, by its name where that can be read."""
    row = db.execute("SELECT stem FROM files WHERE id = ?", [file_id]).fetchone()
    name = repr(str(row[0])) if row and row[0] is not None else str(file_id)
    return ProjectError(
        f"{project}: file {name}: its stored {what} cannot be read ({error});"
        " the project file was changed outside Punctum"
    )
