"""A Punctum project: one SQLite file (WAL) with the captions as loaded, the suggestions made for
them, every decision taken and the processing jobs.

A document's current state is never stored as such: it is the captions as loaded, the suggestions,
then the decisions replayed in order through the same commands and history the editor uses (undo
and redo included). A decision is one row, committed before ``record`` returns, so a crash a
millisecond later loses nothing. Captions are kept as their original bytes, so a project file copied
to another machine still opens; media and reference paths are stored relative to the project
folder where possible, and can be relinked.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from app.core.errors import PunctumError
from app.core.model import Casing, Document, Source, Suggestion

SCHEMA_VERSION = 2
ACTIONS = ("accept", "reject", "accept_many", "set_mark", "change_mark", "edit_word", "undo", "redo")
DECIDERS = ("editor", "rule", "batch")
#: File states: waiting, being processed, processed, failed with a reason.
PENDING, RUNNING, DONE, FAILED = "pending", "running", "done", "failed"

_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        stem TEXT NOT NULL UNIQUE,
        captions_path TEXT NOT NULL,
        captions_format TEXT NOT NULL,
        captions_bytes BLOB NOT NULL,
        media_path TEXT,
        reference_path TEXT,
        language TEXT,
        state TEXT NOT NULL DEFAULT 'pending',
        reason TEXT,
        report TEXT,
        added_at REAL NOT NULL,
        processed_at REAL
    );
    CREATE TABLE cues (
        file_id INTEGER NOT NULL REFERENCES files(id),
        number INTEGER NOT NULL,
        start_ms INTEGER NOT NULL,
        end_ms INTEGER NOT NULL,
        text TEXT NOT NULL,
        PRIMARY KEY (file_id, number)
    );
    CREATE TABLE suggestions (
        file_id INTEGER NOT NULL REFERENCES files(id),
        id INTEGER NOT NULL,
        gap INTEGER NOT NULL,
        mark TEXT NOT NULL,
        confidence REAL NOT NULL,
        source TEXT NOT NULL,
        evidence TEXT NOT NULL,
        casing TEXT,
        probabilities TEXT NOT NULL,
        PRIMARY KEY (file_id, id)
    );
    CREATE TABLE decisions (
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL REFERENCES files(id),
        action TEXT NOT NULL,
        arguments TEXT NOT NULL,
        decided_by TEXT NOT NULL,
        decided_at REAL NOT NULL
    );
    CREATE INDEX decisions_by_file ON decisions(file_id, id);
    CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL REFERENCES files(id),
        state TEXT NOT NULL,
        pid INTEGER,
        started_at REAL NOT NULL,
        finished_at REAL,
        error TEXT
    );
    """,
    # The recogniser's word timing file (CTM or JSON), when there is one.
    2: """
    ALTER TABLE files ADD COLUMN timings_path TEXT;
    """,
}


class ProjectError(PunctumError):
    """A project file that cannot be opened or an operation it cannot take."""


@dataclass(frozen=True)
class FileEntry:
    id: int
    stem: str
    captions_path: Path
    captions_format: str
    media_path: Path | None
    reference_path: Path | None
    language: str | None
    state: str
    reason: str | None
    timings_path: Path | None = None


class Project:
    """An open project file. Use as a context manager or call ``close``."""

    def __init__(self, path: Path, create: bool = False) -> None:
        self.path = Path(path).resolve()
        if self.path.is_dir():
            raise ProjectError(f"{self.path}: is a folder, not a project file")
        if not create and not self.path.is_file():
            raise ProjectError(f"{self.path}: no such project file")
        if create and self.path.exists() and self.path.stat().st_size and not _is_sqlite(self.path):
            raise ProjectError(f"{self.path}: exists and is not a Punctum project; not overwriting it")
        try:
            # The editor opens a project on a worker thread and then uses it on the UI thread,
            # one thread at a time; Python's same-thread check would refuse that hand-over.
            connection = sqlite3.connect(
                str(self.path), timeout=30, isolation_level=None, check_same_thread=False
            )
            self.db = Database(connection)
            self.db.execute("PRAGMA journal_mode=WAL")
            # Durable at commit: a decision is on disk when ``record`` returns.
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.DatabaseError as error:
            raise ProjectError(f"{self.path}: not a readable project file ({error})") from None

    # --- life cycle -----------------------------------------------------------------------

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def copy_to(self, path: Path) -> None:
        """Write a copy of the whole project (decisions included) to ``path``, atomically, with its
        file paths stored again relative to the copy's folder."""
        path = Path(path).resolve()
        partial = path.with_name(path.name + ".partial")
        try:
            self._write_copy(partial, path.parent)
            partial.replace(path)
        except (sqlite3.Error, OSError) as error:
            partial.unlink(missing_ok=True)
            raise ProjectError(f"{path}: the project could not be saved ({error})") from None

    def _write_copy(self, partial: Path, folder: Path) -> None:
        partial.unlink(missing_ok=True)
        target = sqlite3.connect(str(partial))
        try:
            self.db.conn.backup(target)
            for entry in self.files():
                target.execute(
                    "UPDATE files SET captions_path = ?, media_path = ?, reference_path = ?, timings_path = ?"
                    " WHERE id = ?",
                    [
                        _stored(folder, entry.captions_path),
                        _stored(folder, entry.media_path) if entry.media_path else None,
                        _stored(folder, entry.reference_path) if entry.reference_path else None,
                        _stored(folder, entry.timings_path) if entry.timings_path else None,
                        entry.id,
                    ],
                )
            target.commit()
            target.execute("PRAGMA journal_mode=DELETE")
        finally:
            target.close()

    @property
    def folder(self) -> Path:
        return self.path.parent

    def _migrate(self) -> None:
        version = int(self.db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise ProjectError(
                f"{self.path}: made by a newer Punctum (schema {version}, this one reads {SCHEMA_VERSION})"
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            with self.db.atomic():
                for statement in _MIGRATIONS[target].split(";"):
                    if statement.strip():
                        self.db.execute(statement)
                self.db.execute(f"PRAGMA user_version = {target}")

    # --- files ------------------------------------------------------------------------------

    def add_file(
        self,
        stem: str,
        captions: Path,
        media: Path | None = None,
        reference: Path | None = None,
        language: str | None = None,
        timings: Path | None = None,
        *,
        data: bytes,
        document: Document,
    ) -> int:
        """Register a caption file with its media, reference and word timings: ``data``, its bytes,
        are kept as they are, and the cues of ``document`` (as the caller parsed them) listed."""
        with self.db.atomic():
            cursor = self.db.execute(
                "INSERT INTO files (stem, captions_path, captions_format, captions_bytes, media_path,"
                " reference_path, language, added_at, timings_path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    stem,
                    self._stored_path(captions),
                    document.format,
                    data,
                    self._stored_path(media) if media else None,
                    self._stored_path(reference) if reference else None,
                    language,
                    time.time(),
                    self._stored_path(timings) if timings else None,
                ],
            )
            file_id = int(cursor.lastrowid or 0)
            self.db.table("cues").insert_all(
                (
                    {
                        "file_id": file_id,
                        "number": number,
                        "start_ms": cue.start,
                        "end_ms": cue.end,
                        "text": cue.plain_text(),
                    }
                    for number, cue in enumerate(document.cues, 1)
                ),
                batch_size=500,
            )
        return file_id

    def add_file_failed(self, stem: str, captions: Path, reason: str) -> int:
        """Register a caption file that could not be read, with the reason, so status lists it."""
        with self.db.atomic():
            cursor = self.db.execute(
                "INSERT INTO files (stem, captions_path, captions_format, captions_bytes, state, reason,"
                " added_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    stem,
                    self._stored_path(captions),
                    Path(captions).suffix.lstrip("."),
                    b"",
                    FAILED,
                    reason,
                    time.time(),
                ],
            )
        return int(cursor.lastrowid or 0)

    def files(self) -> list[FileEntry]:
        rows = self.db.execute(
            "SELECT id, stem, captions_path, captions_format, media_path, reference_path, language,"
            " state, reason, timings_path FROM files ORDER BY stem"
        ).fetchall()
        return [
            FileEntry(
                row[0],
                row[1],
                self._resolved(row[2]),
                row[3],
                self._resolved(row[4]) if row[4] else None,
                self._resolved(row[5]) if row[5] else None,
                row[6],
                row[7],
                row[8],
                self._resolved(row[9]) if row[9] else None,
            )
            for row in rows
        ]

    def file(self, file_id: int) -> FileEntry:
        for entry in self.files():
            if entry.id == file_id:
                return entry
        raise ProjectError(f"{self.path}: no file {file_id}")

    def captions_bytes(self, file_id: int) -> bytes:
        """The captions as they were added, byte for byte."""
        row = self.db.execute("SELECT captions_bytes FROM files WHERE id = ?", [file_id]).fetchone()
        if row is None:
            raise ProjectError(f"{self.path}: no file {file_id}")
        return bytes(row[0])

    def language(self, file_id: int) -> str:
        """The file's language as given, or as its analysis detected it ("en" if neither says)."""
        entry = self.file(file_id)
        if entry.language:
            return entry.language
        row = self.db.execute("SELECT report FROM files WHERE id = ?", [file_id]).fetchone()
        report = json.loads(row[0]) if row and row[0] else {}
        return str(report.get("language") or "en")

    def relink_media(self, file_id: int, media: Path) -> None:
        with self.db.atomic():
            self.db.execute(
                "UPDATE files SET media_path = ? WHERE id = ?", [self._stored_path(media), file_id]
            )

    def _stored_path(self, path: Path) -> str:
        return _stored(self.folder, path)

    def _resolved(self, stored: str) -> Path:
        path = Path(stored)
        return path if path.is_absolute() else (self.folder / path).resolve()

    # --- processing -------------------------------------------------------------------------

    def start_job(self, file_id: int) -> int:
        with self.db.atomic():
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
        suggestions: list[Suggestion],
        report: dict[str, Any],
        decisions: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> None:
        """Store a file's results in one transaction: all of them, or (after a crash) none."""
        with self.db.atomic():
            self.db.execute("DELETE FROM suggestions WHERE file_id = ?", [file_id])
            self.db.table("suggestions").insert_all(
                ({"file_id": file_id, **_suggestion_row(s)} for s in suggestions), batch_size=500
            )
            for action, arguments in decisions:
                self._insert_decision(file_id, action, arguments, "batch")
            self.db.execute(
                "UPDATE files SET state = ?, reason = NULL, report = ?, processed_at = ? WHERE id = ?",
                [DONE, json.dumps(report, ensure_ascii=False), time.time(), file_id],
            )
            self.db.execute(
                "UPDATE jobs SET state = ?, finished_at = ? WHERE id = ?", [DONE, time.time(), job_id]
            )

    def store_results(self, file_id: int, suggestions: list[Suggestion], report: dict[str, Any]) -> None:
        """A file processed on the spot (not through the batch queue): its job and results at once."""
        self.finish(file_id, self.start_job(file_id), suggestions, report)

    def add_suggestions(self, file_id: int, suggestions: list[Suggestion]) -> None:
        """Add suggestions beside those there (a reference opened later); decisions stay valid."""
        with self.db.atomic():
            self.db.table("suggestions").insert_all(
                ({"file_id": file_id, **_suggestion_row(s)} for s in suggestions), batch_size=500
            )

    def set_reference(self, file_id: int, reference: Path) -> None:
        with self.db.atomic():
            self.db.execute(
                "UPDATE files SET reference_path = ? WHERE id = ?", [self._stored_path(reference), file_id]
            )

    def fail(self, file_id: int, job_id: int | None, reason: str) -> None:
        with self.db.atomic():
            self.db.execute("UPDATE files SET state = ?, reason = ? WHERE id = ?", [FAILED, reason, file_id])
            if job_id is not None:
                self.db.execute(
                    "UPDATE jobs SET state = ?, finished_at = ?, error = ? WHERE id = ?",
                    [FAILED, time.time(), reason, job_id],
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

    # --- decisions --------------------------------------------------------------------------

    def record(self, file_id: int, action: str, arguments: dict[str, Any], by: str = "editor") -> int:
        """Append one decision; it is committed (and synced to disk) when this returns."""
        if action not in ACTIONS:
            raise ProjectError(f"unknown action {action!r}")
        if by not in DECIDERS:
            raise ProjectError(f"unknown decider {by!r}")
        try:
            with self.db.atomic():
                return self._insert_decision(file_id, action, arguments, by)
        except sqlite3.Error as error:  # a locked database, a full disk, a vanished folder
            raise ProjectError(f"{self.path}: the decision could not be saved ({error})") from None

    def _insert_decision(self, file_id: int, action: str, arguments: dict[str, Any], by: str) -> int:
        cursor = self.db.execute(
            "INSERT INTO decisions (file_id, action, arguments, decided_by, decided_at) VALUES (?, ?, ?, ?, ?)",
            [file_id, action, json.dumps(arguments, ensure_ascii=False), by, time.time()],
        )
        return int(cursor.lastrowid or 0)

    def decisions(self, file_id: int) -> Iterator[tuple[str, dict[str, Any], str]]:
        for action, arguments, by in self.db.execute(
            "SELECT action, arguments, decided_by FROM decisions WHERE file_id = ? ORDER BY id", [file_id]
        ).fetchall():
            yield action, json.loads(arguments), by

    # --- documents --------------------------------------------------------------------------

    def stored_captions(self, file_id: int) -> tuple[bytes, str, Path]:
        """The captions as added: their bytes, their format and where they came from."""
        row = self.db.execute(
            "SELECT captions_bytes, captions_format, captions_path FROM files WHERE id = ?", [file_id]
        ).fetchone()
        if row is None:
            raise ProjectError(f"{self.path}: no file {file_id}")
        return bytes(row[0]), str(row[1]), self._resolved(row[2])

    def suggestions(self, file_id: int) -> list[Suggestion]:
        """The file's suggestions as stored, in id order (their statuses come from the decisions)."""
        return [
            _suggestion_from_row(r)
            for r in self.db.execute(
                "SELECT id, gap, mark, confidence, source, evidence, casing, probabilities"
                " FROM suggestions WHERE file_id = ? ORDER BY id",
                [file_id],
            ).fetchall()
        ]


def _suggestion_row(suggestion: Suggestion) -> dict[str, Any]:
    return {
        "id": suggestion.id,
        "gap": suggestion.gap,
        "mark": suggestion.mark,
        "confidence": suggestion.confidence,
        "source": suggestion.source.value,
        "evidence": suggestion.evidence,
        "casing": suggestion.casing.value if suggestion.casing else None,
        "probabilities": json.dumps(suggestion.probabilities, ensure_ascii=False),
    }


def _suggestion_from_row(row: tuple[Any, ...]) -> Suggestion:
    return Suggestion(
        id=int(row[0]),
        gap=int(row[1]),
        mark=str(row[2]),
        confidence=float(row[3]),
        source=Source(row[4]),
        evidence=str(row[5]),
        casing=Casing(row[6]) if row[6] else None,
        probabilities=json.loads(row[7]),
    )


def _stored(folder: Path, path: Path) -> str:
    """A path as a project in ``folder`` keeps it: relative, so the folder can move as a whole."""
    absolute = Path(path).resolve()
    try:
        return os.path.relpath(absolute, folder)
    except ValueError:  # another drive on Windows
        return str(absolute)


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(16) == b"SQLite format 3\x00"
