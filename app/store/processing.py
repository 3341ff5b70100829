"""Processing a file: the job that runs it, and what it leaves in the project, all at once: its
suggestions, what was measured at each gap and the decisions taken on them; or why it failed.

A file's state (``files.py``) follows its job: running while the job runs, then done or failed.
Files a process left running when it died go back to pending (``reset_interrupted``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

from app.core.gap_features import GapMeasure
from app.core.gap_readings import GapReading, GapReadingsError, parse_readings, readings_json
from app.core.history import Decider
from app.core.model import Suggestion
from app.store.checkpoints import forget_checkpoint
from app.store.decisions import DecisionLog
from app.store.errors import damaged
from app.store.files import DONE, FAILED, PENDING, RUNNING
from app.store.suggestions import measures_json, parse_measures, suggestion_row

_Parsed = TypeVar("_Parsed")


@dataclass(frozen=True)
class FileResults:
    """What processing a file leaves to store: its suggestions and report, what was measured at
    each gap, if anything, and what the model's readers said there."""

    suggestions: list[Suggestion]
    report: dict[str, Any]
    measures: Sequence[GapMeasure] | None = None
    readings: Sequence[GapReading] | None = None


class Processing(DecisionLog):
    """A project's processing jobs and the results they store (part of ``Project``). It is a
    decision log as well: a batch's decisions are stored in the same transaction as its results."""

    def start_job(self, file_id: int, *, again: bool = False) -> int:
        """A job on the file, which is running until it ends. ``again``: a file done before and
        analysed again (its media heard only now), which stays done, its results standing, until
        the new ones replace them (``transaction``), or the job fails (``job_failed``)."""
        with self.db.atomic():
            if not again:
                self.db.execute("UPDATE files SET state = ? WHERE id = ?", [RUNNING, file_id])
            cursor = self.db.execute(
                "INSERT INTO jobs (file_id, state, pid, started_at) VALUES (?, ?, ?, ?)",
                [file_id, RUNNING, os.getpid(), time.time()],
            )
        return int(cursor.lastrowid or 0)

    def finish(
        self,
        file_id: int,
        job_id: int,
        results: FileResults,
        decisions: Sequence[tuple[str, dict[str, Any], Decider]] = (),
    ) -> None:
        """Store a file's results in one transaction: all of them, or (after a crash) none.
        ``decisions``: each with who took it, in order (the previous version's carried over, as
        replayed on these suggestions, in place of those still to replay; then batch's own)."""
        with self.db.atomic():
            forget_checkpoint(self.db, file_id)
            self.db.execute("DELETE FROM suggestions WHERE file_id = ?", [file_id])
            self.add_suggestions(file_id, results.suggestions)
            for action, arguments, by in decisions:
                self._insert_decision(file_id, action, arguments, by)
            self.db.execute(
                "UPDATE files SET state = ?, reason = NULL, report = ?, processed_at = ?, carried = NULL,"
                " gap_measures = ?, gap_readings = ? WHERE id = ?",
                [
                    DONE,
                    json.dumps(results.report, ensure_ascii=False),
                    time.time(),
                    measures_json(results.measures),
                    readings_json(results.readings),
                    file_id,
                ],
            )
            self.db.execute(
                "UPDATE jobs SET state = ?, finished_at = ? WHERE id = ?", [DONE, time.time(), job_id]
            )

    def store_results(self, file_id: int, results: FileResults) -> None:
        """A file processed on the spot (not through the batch queue): its job and results at once."""
        self.finish(file_id, self.start_job(file_id), results)

    def gap_measures(self, file_id: int) -> list[GapMeasure] | None:
        """What the last analysis measured at each gap, or None (not measured, or an older project)."""
        return self._parsed_column(file_id, "gap_measures", parse_measures)

    def has_gap_readings(self, file_id: int) -> bool:
        """Whether the file's last analysis kept what the model's readers said at each gap (an
        earlier Punctum's did not), without reading them."""
        if "gap_readings" not in self._columns:
            return False
        row = self.db.execute("SELECT gap_readings IS NOT NULL FROM files WHERE id = ?", [file_id]).fetchone()
        return bool(row and row[0])

    def gap_readings(self, file_id: int) -> list[GapReading] | None:
        """What the model's readers said at each gap at the last analysis, or None (an older
        project); ``ProjectError`` when the stored readings are damaged."""
        return self._parsed_column(file_id, "gap_readings", parse_readings)

    def _parsed_column(self, file_id: int, column: str, parse: Callable[[str], _Parsed]) -> _Parsed | None:
        """The file's value in a column older projects lack, parsed: None there, as where it is
        empty; ``ProjectError`` naming the file when it cannot be parsed."""
        if column not in self._columns:
            return None
        row = self.db.execute(f"SELECT {column} FROM files WHERE id = ?", [file_id]).fetchone()
        if row is None or row[0] is None:
            return None
        try:
            return parse(row[0])
        except (ValueError, GapReadingsError) as error:
            raise damaged(self.db, self.path, file_id, column.replace("_", " "), error) from None

    def add_suggestions(self, file_id: int, suggestions: list[Suggestion]) -> None:
        """Add suggestions beside those there (a reference opened later); decisions stay valid."""
        with self.db.atomic():
            forget_checkpoint(self.db, file_id)
            self.db.table("suggestions").insert_all(
                ({"file_id": file_id, **suggestion_row(s)} for s in suggestions), batch_size=500
            )

    def fail(self, file_id: int, job_id: int | None, reason: str) -> None:
        with self.db.atomic():
            self.db.execute("UPDATE files SET state = ?, reason = ? WHERE id = ?", [FAILED, reason, file_id])
            if job_id is not None:
                self.job_failed(job_id, reason)

    def job_failed(self, job_id: int, reason: str) -> None:
        """A job ended without results, its file left as it stands (``start_job(again=True)``)."""
        with self.db.atomic():
            self.db.execute(
                "UPDATE jobs SET state = ?, finished_at = ?, error = ? WHERE id = ?",
                [FAILED, time.time(), reason, job_id],
            )

    def transaction(self) -> AbstractContextManager[object]:
        """Several writes as one (``with project.transaction():``): all of them, or (after a crash
        or an error inside) none."""
        return self.db.atomic()

    def retry(self, file_id: int) -> None:
        """A failed file back to pending, for the next run to process again."""
        with self.db.atomic():
            self.db.execute(
                "UPDATE files SET state = ? WHERE id = ? AND state = ?", [PENDING, file_id, FAILED]
            )

    def reset_interrupted(self) -> int:
        """Files left running by a process that died go back to pending; returns how many."""
        with self.db.atomic():
            cursor = self.db.execute("UPDATE files SET state = ? WHERE state = ?", [PENDING, RUNNING])
            self.db.execute(
                "UPDATE jobs SET state = 'interrupted', finished_at = ? WHERE state = ?",
                [time.time(), RUNNING],
            )
        return int(cursor.rowcount)
