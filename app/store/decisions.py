"""The decision log: every decision taken on a file, one row each, in the order taken.

A decision belongs to the file's version it was taken on (``files.py``: captions changed on disk
and added again make a new version), so a file's decisions are those of its current version.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from sqlite_utils import Database

from app.core.decisions import ACTIONS
from app.core.history import Decider
from app.store.errors import ProjectError, damaged


class DecisionRow(NamedTuple):
    """One recorded decision: its row (increasing in the order taken), what it is and who took it."""

    row: int
    action: str
    arguments: dict[str, Any]
    by: Decider


class DecisionLog:
    """A project's decisions (part of ``Project``, which opens the database)."""

    db: Database
    path: Path
    #: The files table's columns: a project of an older schema, opened read-only, lacks some.
    _columns: set[str]

    def record(
        self, file_id: int, action: str, arguments: dict[str, Any], by: Decider = Decider.PERSON
    ) -> int:
        """Append one decision; it is committed (and synced to disk) when this returns."""
        if action not in ACTIONS:
            raise ProjectError(f"unknown action {action!r}")
        if by not in set(Decider):
            raise ProjectError(f"unknown decider {by!r}")
        try:
            with self.db.atomic():
                return self._insert_decision(file_id, action, arguments, by)
        except sqlite3.Error as error:  # a locked database, a full disk, a vanished folder
            raise ProjectError(f"{self.path}: the decision could not be saved ({error})") from None

    def _insert_decision(self, file_id: int, action: str, arguments: dict[str, Any], by: Decider) -> int:
        # Without spaces: a re-reading of a long call lists a thousand confidences.
        cursor = self.db.execute(
            "INSERT INTO decisions (file_id, action, arguments, decided_by, decided_at, version)"
            " VALUES (?, ?, ?, ?, ?, (SELECT version FROM files WHERE id = ?))",
            [
                file_id,
                action,
                json.dumps(arguments, ensure_ascii=False, separators=(",", ":")),
                by.value,
                time.time(),
                file_id,
            ],
        )
        return int(cursor.lastrowid or 0)

    def decided_by_person(self, file_id: int) -> bool:
        """Whether a person has decided anything in file ``file_id``."""
        row = self.db.execute(
            "SELECT 1 FROM decisions WHERE file_id = ? AND decided_by = ? LIMIT 1",
            [file_id, Decider.PERSON.value],
        )
        return row.fetchone() is not None

    def last_decision(self) -> int:
        """The row of the last decision taken on any file (0: none yet)."""
        return int(self.db.execute("SELECT COALESCE(MAX(id), 0) FROM decisions").fetchone()[0])

    def _current(self, file_id: int) -> tuple[str, list[int]]:
        """The condition (and its parameters) that keeps a file's decisions to its current version."""
        if "version" not in self._columns:
            return "", []
        return " AND version = (SELECT version FROM files WHERE id = ?)", [file_id]

    def decisions(self, file_id: int, after: int = 0) -> Iterator[DecisionRow]:
        """The decisions on the file's current version, in the order they were taken (those after
        row ``after``: a checkpoint includes the rest)."""
        current, parameters = self._current(file_id)
        for row, action, arguments, by in self.db.execute(
            f"SELECT id, action, arguments, decided_by FROM decisions WHERE file_id = ? AND id > ?{current}"
            " ORDER BY id",
            [file_id, after, *parameters],
        ).fetchall():
            try:
                decoded, decider = json.loads(arguments), Decider(by)
            except ValueError as error:
                raise damaged(self.db, self.path, file_id, f"{action} decision", error) from None
            yield DecisionRow(row, action, decoded, decider)

    def decision_count(self, file_id: int) -> int:
        """How many decisions the file's current version holds."""
        current, parameters = self._current(file_id)
        query = f"SELECT COUNT(*) FROM decisions WHERE file_id = ?{current}"
        return int(self.db.execute(query, [file_id, *parameters]).fetchone()[0])

    def has_unrecorded_recut(self, file_id: int) -> bool:
        """Whether the file's current version holds a re-cut an earlier Punctum stored without its
        cues (schema 8 recorded only that the cues were cut again): opening it cuts them again by
        today's rules, which may cut them otherwise."""
        current, parameters = self._current(file_id)
        query = (
            f"SELECT 1 FROM decisions WHERE file_id = ?{current} AND action = 'recut'"
            " AND json_type(arguments, '$.cut') IS NULL LIMIT 1"
        )
        return self.db.execute(query, [file_id, *parameters]).fetchone() is not None

    def decision_outline(self, file_id: int) -> list[tuple[int, str, bool]]:
        """Each decision's row and action, and whether it is undone with the one before it (a
        re-reading after a person's decision), without reading what it decided."""
        current, parameters = self._current(file_id)
        rows = self.db.execute(
            "SELECT id, action, CASE WHEN action = 'restyle' THEN json_extract(arguments, '$.joins') END"
            f" FROM decisions WHERE file_id = ?{current} ORDER BY id",
            [file_id, *parameters],
        ).fetchall()
        return [(row, action, action == "restyle" and joins in (None, 1)) for row, action, joins in rows]
