"""A Punctum project: one SQLite file (WAL) with the captions as loaded, the suggestions made for
them, every decision taken and the processing jobs.

A document's current state is never stored as such: it is the captions as loaded, the suggestions,
then the decisions replayed in order through the same commands and history the editor uses (undo
and redo included). A decision is one row, committed before ``record`` returns, so a crash a
millisecond later loses nothing. Captions are kept as their original bytes, so a project file copied
to another machine still opens; media and reference paths are stored relative to the project
folder where possible, and can be relinked.

One process writes a project at a time (``app.store.lock``); any number may read it. Opened
``read_only`` (``punctum status`` and ``export``), a project is read through a read-only SQLite
connection that never migrates it or changes its journal mode, and opens on read-only media too.
Each caption file's size, modification time and SHA-256 are kept, so captions edited on disk after
they were added are found (``captions_changed``) and can be added again as a new version.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from app.core.decisions import ACTIONS
from app.core.digest import file_sha256
from app.core.errors import PunctumError
from app.core.evidence import GapMeasure
from app.core.model import Casing, Document, Source, Suggestion
from app.store import lock
from app.store.lock import Holder, ProjectLockedError

__all__ = ["Holder", "Project", "ProjectError", "ProjectLockedError"]

SCHEMA_VERSION = 5
DECIDERS = ("editor", "rule", "batch")
#: File states: waiting, being processed, processed, failed with a reason.
PENDING, RUNNING, DONE, FAILED = "pending", "running", "done", "failed"
#: What a file left running by a process that has died is (it is pending for the next batch).
INTERRUPTED = "interrupted"
#: Modification times this close to the moment they were read are not trusted to tell a later
#: change (file systems with coarse times): such captions are compared by their hash.
_MTIME_SLACK = 2.0

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
    # What the captions on disk were when added (to find them changed later), the file's version
    # (a new one when changed captions are added again; decisions belong to a version), decisions
    # of the previous version still to be replayed on the new one, and earlier versions kept.
    3: """
    ALTER TABLE files ADD COLUMN captions_size INTEGER;
    ALTER TABLE files ADD COLUMN captions_mtime REAL;
    ALTER TABLE files ADD COLUMN captions_sha256 TEXT;
    ALTER TABLE files ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE files ADD COLUMN carried TEXT;
    ALTER TABLE decisions ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
    CREATE TABLE versions (
        file_id INTEGER NOT NULL REFERENCES files(id),
        version INTEGER NOT NULL,
        captions_bytes BLOB NOT NULL,
        suggestions TEXT NOT NULL,
        replaced_at REAL NOT NULL,
        PRIMARY KEY (file_id, version)
    );
    """,
    # What was measured at each gap (pause, pitch movement, when the word ends), shown beside a
    # gap under review: JSON, one entry per word.
    4: """
    ALTER TABLE files ADD COLUMN gap_measures TEXT;
    """,
    # The captions' bytes are the one copy of their cues; a parsed list beside them was never read.
    5: """
    DROP TABLE cues;
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
    version: int = 1


class Project:
    """An open project file. Use as a context manager or call ``close``.

    Opened for writing (the default), the project is locked for this process: another process
    that opens it for writing gets ``ProjectLockedError`` naming ``holder`` (what this process
    is, such as "punctum batch"). ``read_only`` takes no lock and writes nothing at all.
    """

    def __init__(
        self,
        path: Path,
        create: bool = False,
        *,
        read_only: bool = False,
        holder: str = "another Punctum process",
    ) -> None:
        self.path = Path(path).resolve()
        self.read_only = read_only
        self._locked = False
        if self.path.is_dir():
            raise ProjectError(f"{self.path}: is a folder, not a project file")
        if (read_only or not create) and not self.path.is_file():
            raise ProjectError(f"{self.path}: no such project file")
        if create and self.path.exists() and self.path.stat().st_size and not _is_sqlite(self.path):
            raise ProjectError(f"{self.path}: exists and is not a Punctum project; not overwriting it")
        if not read_only:
            try:
                lock.acquire(self.path, holder)
            except OSError as error:
                raise ProjectError(f"{self.path}: cannot be opened for writing ({error.strerror})") from None
            self._locked = True
        try:
            self.db = Database(self._connect())
            self._check_intact()
            if read_only:
                self._check_readable()
            else:
                self._check_ours()
                self.db.execute("PRAGMA journal_mode=WAL")
                # Durable at commit: a decision is on disk when ``record`` returns.
                self.db.execute("PRAGMA synchronous=FULL")
                self.db.execute("PRAGMA foreign_keys=ON")
                self._migrate()
            self._columns = {row[1] for row in self.db.execute("PRAGMA table_info(files)").fetchall()}
        except sqlite3.DatabaseError as error:
            self._fail_open()
            raise ProjectError(f"{self.path}: not a readable project file ({error})") from None
        except BaseException:
            self._fail_open()
            raise

    def _connect(self) -> sqlite3.Connection:
        # The editor opens a project on a worker thread and then uses it on the UI thread,
        # one thread at a time; Python's same-thread check would refuse that hand-over.
        def connect(target: str, uri: bool = False) -> sqlite3.Connection:
            return sqlite3.connect(target, timeout=30, isolation_level=None, check_same_thread=False, uri=uri)

        if not self.read_only:
            return connect(str(self.path))
        uri = "file:" + urllib.parse.quote(str(self.path))
        connection = connect(f"{uri}?mode=ro", uri=True)
        try:
            connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return connection
        except sqlite3.OperationalError:
            # A WAL project on read-only media: its -shm file can be neither found nor made. Nothing
            # can write there, so the file is read as immutable (which reads no WAL: a clean close
            # leaves none; a crashed writer's last transactions stay unread until it is writable).
            connection.close()
            return connect(f"{uri}?mode=ro&immutable=1", uri=True)

    def _fail_open(self) -> None:
        if hasattr(self, "db"):
            self.db.close()
        if self._locked:
            lock.release(self.path)
            self._locked = False

    def _check_intact(self) -> None:
        """Refuse a damaged file (a disk error, a copy cut short) before anything reads or writes
        it: SQLite's quick check, which reads every page once."""
        problems = [str(row[0]) for row in self.db.execute("PRAGMA quick_check(1)").fetchall()]
        if problems != ["ok"]:
            # SQLite's report spans lines ("*** in database main ***" first): its last one says what.
            what = problems[0].strip().splitlines()[-1]
            raise ProjectError(f"{self.path}: the project file is damaged ({what}); nothing was changed")

    def _check_ours(self) -> None:
        """Refuse another program's SQLite file before anything is written into it."""
        version = int(self.db.execute("PRAGMA user_version").fetchone()[0])
        tables = self.db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
        if version == 0 and tables:
            raise ProjectError(f"{self.path}: exists and is not a Punctum project; not overwriting it")

    def _check_readable(self) -> None:
        version = int(self.db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise ProjectError(
                f"{self.path}: made by a newer Punctum (schema {version}, this one reads {SCHEMA_VERSION})"
            )
        if version == 0 or not self.db["files"].exists():
            raise ProjectError(f"{self.path}: not a Punctum project")

    def writer(self) -> Holder | None:
        """The process writing the project now (this one, when it was opened for writing), or
        None: files left running then belong to a process that has died."""
        return lock.holder(self.path)

    # --- life cycle -----------------------------------------------------------------------

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()
        if self._locked:
            lock.release(self.path)
            self._locked = False

    def copy_to(self, path: Path) -> None:
        """Write a copy of the whole project (decisions included) to ``path``, atomically, with its
        file paths stored again relative to the copy's folder."""
        path = Path(path).resolve()
        partial = path.with_name(path.name + ".partial")
        try:
            lock.acquire(path, "a project copy")  # never replace a project another process writes
        except OSError as error:
            raise ProjectError(f"{path}: the project could not be saved ({error.strerror})") from None
        try:
            self._write_copy(partial, path.parent)
            partial.replace(path)
        except (sqlite3.Error, OSError) as error:
            partial.unlink(missing_ok=True)
            raise ProjectError(f"{path}: the project could not be saved ({error})") from None
        finally:
            lock.release(path)

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
                if target == 3:
                    self._fingerprint_stored()
                self.db.execute(f"PRAGMA user_version = {target}")

    def _fingerprint_stored(self) -> None:
        """Projects made before version 3 know their captions by their stored bytes."""
        for file_id, data in self.db.execute("SELECT id, captions_bytes FROM files").fetchall():
            if data:
                self.db.execute(
                    "UPDATE files SET captions_size = ?, captions_sha256 = ? WHERE id = ?",
                    [len(data), hashlib.sha256(data).hexdigest(), file_id],
                )

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
        mtime: float | None = None,
    ) -> int:
        """Register a caption file with its media, reference and word timings: ``data``, its bytes,
        are kept as they are (``document``, the caller's parse of them, gives their format).
        ``mtime``: the file's modification time, taken before ``data`` was read."""
        with self.db.atomic():
            cursor = self.db.execute(
                "INSERT INTO files (stem, captions_path, captions_format, captions_bytes, media_path,"
                " reference_path, language, added_at, timings_path, captions_size, captions_mtime,"
                " captions_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                    *_fingerprint(data, mtime),
                ],
            )
            file_id = int(cursor.lastrowid or 0)
        return file_id

    def new_version(
        self,
        file_id: int,
        captions: Path,
        *,
        data: bytes,
        document: Document,
        mtime: float | None = None,
        carried: Sequence[dict[str, Any]] = (),
    ) -> int:
        """The file's captions changed on disk: keep the current version (its bytes, suggestions and
        decisions) aside and make ``data`` the file's captions, to be processed again. ``carried``:
        the previous version's decisions that still apply, replayed when it is processed
        (``finish``). Returns the new version's number."""
        version = self._version(file_id) + 1
        with self.db.atomic():
            self.db.execute(
                "INSERT INTO versions (file_id, version, captions_bytes, suggestions, replaced_at)"
                " SELECT id, version, captions_bytes, ?, ? FROM files WHERE id = ?",
                [
                    json.dumps([_suggestion_row(s) for s in self.suggestions(file_id)], ensure_ascii=False),
                    time.time(),
                    file_id,
                ],
            )
            self.db.execute(
                "UPDATE files SET captions_path = ?, captions_format = ?, captions_bytes = ?, state = ?,"
                " reason = NULL, report = NULL, processed_at = NULL, version = ?, carried = ?,"
                " captions_size = ?, captions_mtime = ?, captions_sha256 = ? WHERE id = ?",
                [
                    self._stored_path(captions),
                    document.format,
                    data,
                    PENDING,
                    version,
                    json.dumps(list(carried), ensure_ascii=False) if carried else None,
                    *_fingerprint(data, mtime),
                    file_id,
                ],
            )
            self.db.execute("DELETE FROM suggestions WHERE file_id = ?", [file_id])
        return version

    def carried(self, file_id: int) -> list[dict[str, Any]]:
        """Decisions of the previous version still to be replayed (``new_version``)."""
        if "carried" not in self._columns:
            return []
        row = self.db.execute("SELECT carried FROM files WHERE id = ?", [file_id]).fetchone()
        return list(json.loads(row[0])) if row and row[0] else []

    def _version(self, file_id: int) -> int:
        if "version" not in self._columns:
            return 1
        row = self.db.execute("SELECT version FROM files WHERE id = ?", [file_id]).fetchone()
        return int(row[0]) if row else 1

    def captions_changed(self, file_id: int) -> bool:
        """Whether the captions on disk differ from those the project holds (by size, then time,
        then SHA-256). Captions that are gone or unreadable have not changed as far as anyone can
        tell: the project keeps their bytes, so a moved or copied project still works."""
        wanted = ["captions_path", "captions_size", "captions_mtime", "captions_sha256"]
        row = self.db.execute(
            f"SELECT {', '.join(c if c in self._columns else 'NULL' for c in wanted)} FROM files WHERE id = ?",
            [file_id],
        ).fetchone()
        if row is None:
            raise ProjectError(f"{self.path}: no file {file_id}")
        path, size, mtime, digest = self._resolved(row[0]), row[1], row[2], row[3]
        if digest is None:  # an older project, or captions that could not be read when added
            data = self.captions_bytes(file_id)
            if not data:
                return False
            size, digest = len(data), hashlib.sha256(data).hexdigest()
        try:
            status = path.stat()
            if status.st_size != size:
                return True
            if mtime is not None and status.st_mtime == mtime:
                return False
            return file_sha256(path) != str(digest)
        except OSError:
            return False

    def add_file_failed(self, stem: str, captions: Path, reason: str) -> int:
        """Register a caption file that could not be read, with the reason, so status lists it
        (and, by its fingerprint, finds it changed once it has been mended)."""
        fingerprint: tuple[int | None, float | None, str | None] = (None, None, None)
        with contextlib.suppress(OSError):
            status = Path(captions).stat()
            mtime = status.st_mtime if time.time() - status.st_mtime >= _MTIME_SLACK else None
            fingerprint = (status.st_size, mtime, file_sha256(Path(captions)))
        with self.db.atomic():
            cursor = self.db.execute(
                "INSERT INTO files (stem, captions_path, captions_format, captions_bytes, state, reason,"
                " added_at, captions_size, captions_mtime, captions_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    stem,
                    self._stored_path(captions),
                    Path(captions).suffix.lstrip("."),
                    b"",
                    FAILED,
                    reason,
                    time.time(),
                    *fingerprint,
                ],
            )
        return int(cursor.lastrowid or 0)

    def files(self) -> list[FileEntry]:
        # Read-only, a project of an older schema is read as it is: what it lacks is NULL.
        columns = ["timings_path", "version"]
        rows = self.db.execute(
            "SELECT id, stem, captions_path, captions_format, media_path, reference_path, language,"
            f" state, reason, {', '.join(c if c in self._columns else 'NULL' for c in columns)}"
            " FROM files ORDER BY stem"
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
                int(row[10] or 1),
            )
            for row in rows
        ]

    def file(self, file_id: int) -> FileEntry:
        for entry in self.files():
            if entry.id == file_id:
                return entry
        raise ProjectError(f"{self.path}: no file {file_id}")

    def captions_bytes(self, file_id: int) -> bytes:
        """The captions as they were added, byte for byte (checked against their SHA-256)."""
        return self.stored_captions(file_id)[0]

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
        carried: Sequence[tuple[str, dict[str, Any]]] = (),
        measures: Sequence[GapMeasure] | None = None,
        decided_by: str = "batch",
    ) -> None:
        """Store a file's results in one transaction: all of them, or (after a crash) none.
        ``carried``: the previous version's decisions as replayed on these suggestions, recorded
        (by "rule", before the batch's own ``decisions``, which are ``decided_by``) in place of
        those still to replay. ``measures``: what was measured at each gap, if anything."""
        with self.db.atomic():
            self.db.execute("DELETE FROM suggestions WHERE file_id = ?", [file_id])
            self.db.table("suggestions").insert_all(
                ({"file_id": file_id, **_suggestion_row(s)} for s in suggestions), batch_size=500
            )
            for action, arguments in carried:
                self._insert_decision(file_id, action, arguments, "rule")
            for action, arguments in decisions:
                self._insert_decision(file_id, action, arguments, decided_by)
            self.db.execute(
                "UPDATE files SET state = ?, reason = NULL, report = ?, processed_at = ?, carried = NULL,"
                " gap_measures = ? WHERE id = ?",
                [DONE, json.dumps(report, ensure_ascii=False), time.time(), measures_json(measures), file_id],
            )
            self.db.execute(
                "UPDATE jobs SET state = ?, finished_at = ? WHERE id = ?", [DONE, time.time(), job_id]
            )

    def store_results(
        self,
        file_id: int,
        suggestions: list[Suggestion],
        report: dict[str, Any],
        measures: Sequence[GapMeasure] | None = None,
    ) -> None:
        """A file processed on the spot (not through the batch queue): its job and results at once."""
        self.finish(file_id, self.start_job(file_id), suggestions, report, measures=measures)

    def gap_measures(self, file_id: int) -> list[GapMeasure] | None:
        """What the last analysis measured at each gap, or None (not measured, or an older project)."""
        if "gap_measures" not in self._columns:
            return None
        row = self.db.execute("SELECT gap_measures FROM files WHERE id = ?", [file_id]).fetchone()
        if row is None or row[0] is None:
            return None
        return [GapMeasure(*entry) for entry in json.loads(row[0])]

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
            "INSERT INTO decisions (file_id, action, arguments, decided_by, decided_at, version)"
            " VALUES (?, ?, ?, ?, ?, (SELECT version FROM files WHERE id = ?))",
            [file_id, action, json.dumps(arguments, ensure_ascii=False), by, time.time(), file_id],
        )
        return int(cursor.lastrowid or 0)

    def decisions(self, file_id: int) -> Iterator[tuple[str, dict[str, Any], str]]:
        """The decisions on the file's current version, in the order they were taken."""
        current = (
            " AND version = (SELECT version FROM files WHERE id = ?)" if "version" in self._columns else ""
        )
        for action, arguments, by in self.db.execute(
            f"SELECT action, arguments, decided_by FROM decisions WHERE file_id = ?{current} ORDER BY id",
            [file_id, file_id] if current else [file_id],
        ).fetchall():
            yield action, json.loads(arguments), by

    # --- documents --------------------------------------------------------------------------

    def stored_captions(self, file_id: int) -> tuple[bytes, str, Path]:
        """The captions as added: their bytes, their format and where they came from. Bytes that
        no longer match the SHA-256 kept with them are refused: they were changed outside Punctum,
        and exporting them would write what nobody reviewed."""
        row = self.db.execute(
            "SELECT captions_bytes, captions_format, captions_path, captions_sha256, stem FROM files WHERE id = ?",
            [file_id],
        ).fetchone()
        if row is None:
            raise ProjectError(f"{self.path}: no file {file_id}")
        data = bytes(row[0])
        if row[3] and hashlib.sha256(data).hexdigest() != row[3]:
            raise ProjectError(
                f"{self.path}: the stored captions of {row[4]} do not match their checksum"
                " (the project file was changed outside Punctum)"
            )
        return data, str(row[1]), self._resolved(row[2])

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


def measures_json(measures: Sequence[GapMeasure] | None) -> str | None:
    if measures is None:
        return None
    return json.dumps([[m.pause_ms, m.pitch_slope, m.end_ms] for m in measures])


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


def _fingerprint(data: bytes, mtime: float | None) -> tuple[int, float | None, str]:
    """Size, modification time and SHA-256 of captions as added. A time within ``_MTIME_SLACK`` of
    now is left out (so never trusted): a change in the same tick would not move it."""
    if mtime is not None and time.time() - mtime < _MTIME_SLACK:
        mtime = None
    return len(data), mtime, hashlib.sha256(data).hexdigest()


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(16) == b"SQLite format 3\x00"
