"""The error every part of the project store raises for a file it cannot open or an operation
it cannot take (a second writer is ``app.store.lock.ProjectLockedError``)."""

from __future__ import annotations

from pathlib import Path

from sqlite_utils import Database

from app.core.errors import PunctumError


class ProjectError(PunctumError):
    """A project file that cannot be opened or an operation it cannot take."""


def damaged(db: Database, project: Path, file_id: int, what: str, error: object) -> ProjectError:
    """The error for a row of file ``file_id`` that cannot be read (``what``: "gap measures"...):
    one line naming the project and the file, by its name where that can be read."""
    row = db.execute("SELECT stem FROM files WHERE id = ?", [file_id]).fetchone()
    name = repr(str(row[0])) if row and row[0] is not None else str(file_id)
    return ProjectError(
        f"{project}: file {name}: its stored {what} cannot be read ({error});"
        " the project file was changed outside Punctum"
    )
