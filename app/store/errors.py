"""The error every part of the project store raises for a file it cannot open or an operation
it cannot take (a second writer is ``app.store.lock.ProjectLockedError``)."""

from __future__ import annotations

from app.core.errors import PunctumError


class ProjectError(PunctumError):
    """A project file that cannot be opened or an operation it cannot take."""
