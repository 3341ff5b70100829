"""A Punctum project: one SQLite file (WAL) with the captions as loaded, the suggestions made for
them, every decision taken and the processing jobs. ``Project`` opens it (checked, locked and
migrated) and is the one way in; its parts live beside it:

- ``schema``: the tables and the migrations from older projects;
- ``files``: the caption files, their bytes, paths, versions and suggestions as stored;
- ``processing``: a file's job and the results it stores, or why it failed;
- ``decisions``: the decision log;
- ``checkpoints``: a file's state at one of its decisions, so that opening it replays those after.

A document's current state is the captions as loaded, the suggestions, then the decisions replayed
in order through the same commands and history the editor uses (undo and redo included), from the
file's checkpoint on where it has one. A decision is one row, committed before ``record`` returns,
so a crash a millisecond later loses nothing.

One process writes a project at a time (``app.store.lock``); any number may read it. Opened
``read_only`` (``punctum status`` and ``export``), a project is read through a read-only SQLite
connection that never migrates it or changes its journal mode, and opens on read-only media too.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from pathlib import Path

from sqlite_utils import Database

from app.store import lock
from app.store.checkpoints import Checkpoints
from app.store.errors import ProjectError, write_refused
from app.store.files import DONE, FAILED, INTERRUPTED, PENDING, RUNNING, FileEntry, FileTable, stored_path
from app.store.lock import Holder, ProjectLockedError
from app.store.processing import FileResults, Processing
from app.store.schema import SCHEMA_VERSION, migrate, schema_version

__all__ = [
    "DONE",
    "FAILED",
    "INTERRUPTED",
    "PENDING",
    "RUNNING",
    "SCHEMA_VERSION",
    "FileEntry",
    "FileResults",
    "Holder",
    "Project",
    "ProjectError",
    "ProjectLockedError",
]


class Project(FileTable, Processing, Checkpoints):
    """An open project file. Use as a context manager or call ``close``.

    Opened for writing (the default), the project is locked for this process: another process
    that opens it for writing gets ``ProjectLockedError`` naming ``holder`` (what this process
    is, such as "punctum batch"). ``read_only`` takes no lock and writes nothing at all.

    Opening and closing are here; what a project holds is read and written through the methods
    of ``FileTable`` (files), ``Processing`` (jobs and results) and ``DecisionLog`` (decisions).
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
                migrate(self.db, self.path)
            self._columns = self._table_columns("files")
            self._suggestion_columns = self._table_columns("suggestions")
        except sqlite3.DatabaseError as error:
            self.close()
            if write_refused(error):  # read-only file or media, or a full disk: not a damaged file
                raise ProjectError(f"{self.path}: cannot be written ({error})") from None
            raise ProjectError(f"{self.path}: not a readable project file ({error})") from None
        except BaseException:
            self.close()
            raise

    def _connect(self) -> sqlite3.Connection:
        # The editor opens a project on a worker thread and then uses it on the UI thread,
        # one thread at a time; Python's same-thread check would refuse that hand-over.
        def connect(target: str, uri: bool = False) -> sqlite3.Connection:
            return sqlite3.connect(target, timeout=30, isolation_level=None, check_same_thread=False, uri=uri)

        if not self.read_only:
            return connect(str(self.path))
        uri = "file:" + urllib.parse.quote(str(self.path))
        if not Path(f"{self.path}-wal").exists() and lock.holder(self.path) is None:
            # Closed cleanly and nobody writing: read as it stands. A read-only connection to a WAL
            # file would make -wal and -shm files beside it that it cannot remove (a reader such
            # as ``punctum status`` would leave them behind).
            return connect(f"{uri}?mode=ro&immutable=1", uri=True)
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

    def _table_columns(self, table: str) -> set[str]:
        return {row[1] for row in self.db.execute(f"PRAGMA table_info({table})").fetchall()}

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
        if schema_version(self.db, self.path) == 0 or not self.db["files"].exists():
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
        if hasattr(self, "db"):  # not when opening failed before the database was
            self.db.close()
        if self._locked:
            lock.release(self.path)
            self._locked = False

    def setting(self, name: str) -> str | None:
        """A choice kept in the project (None: never made, or a project older than the table)."""
        try:
            row = self.db.execute("SELECT value FROM settings WHERE name = ?", [name]).fetchone()
        except sqlite3.OperationalError:  # read-only, not yet migrated
            return None
        return None if row is None else str(row[0])

    def set_setting(self, name: str, value: str) -> None:
        with self.db.atomic():
            self.db.execute("INSERT OR REPLACE INTO settings (name, value) VALUES (?, ?)", [name, value])

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
                paths = (entry.captions_path, entry.media_path, entry.reference_path, entry.timings_path)
                target.execute(
                    "UPDATE files SET captions_path = ?, media_path = ?, reference_path = ?, timings_path = ?"
                    " WHERE id = ?",
                    [*(stored_path(folder, path) if path else None for path in paths), entry.id],
                )
            target.commit()
            target.execute("PRAGMA journal_mode=DELETE")
        finally:
            target.close()


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(16) == b"SQLite format 3\x00"
