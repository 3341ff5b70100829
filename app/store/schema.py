"""The project file's tables and how a project of an older schema is brought up to this one.

``PRAGMA user_version`` is the schema version a project was last written with; each migration
takes it one step on, in its own transaction, so a project is never left between two versions.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from sqlite_utils import Database

from app.store.errors import ProjectError

SCHEMA_VERSION = 10

#: The statements that take a project from the version before each key to that version.
MIGRATIONS: dict[int, str] = {
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
    # Each reader's own choice where the recogniser listened (``Suggestion.readings``): JSON.
    6: """
    ALTER TABLE suggestions ADD COLUMN readings TEXT;
    """,
    # A project's own choices, kept for the commands run on it later (export's --rebreak).
    7: """
    CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    # No table changes: each word's measures may hold where it is heard to start (a fifth value in
    # gap_measures), and decisions may cut the cues again ("recut"). A Punctum of schema 7 would
    # misread both, so it is made to refuse the project in one line instead.
    8: """
    SELECT 1;
    """,
    # What the model's readers said at every gap (``core.gap_readings``), so that a person's
    # decisions can teach the house style and the rest be read again with it; decisions may hold
    # that re-reading ("restyle"), which a Punctum of schema 8 would not know.
    9: """
    ALTER TABLE files ADD COLUMN gap_readings TEXT;
    """,
    # A file's state at one of its decisions (``checkpoints.py``), so that opening it replays only
    # the decisions after that one.
    10: """
    CREATE TABLE checkpoints (
        file_id INTEGER PRIMARY KEY REFERENCES files(id),
        through INTEGER NOT NULL,
        fingerprint TEXT NOT NULL,
        state BLOB NOT NULL
    );
    """,
}


def schema_version(db: Database, path: Path) -> int:
    """The schema version of the project at ``path``; one made by a newer Punctum is refused."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise ProjectError(
            f"{path}: made by a newer Punctum (schema {version}, this one reads {SCHEMA_VERSION})"
        )
    return version


def migrate(db: Database, path: Path) -> None:
    """Bring the project at ``path`` up to ``SCHEMA_VERSION``; one made by a newer Punctum is refused."""
    for target in range(schema_version(db, path) + 1, SCHEMA_VERSION + 1):
        with db.atomic():
            for statement in MIGRATIONS[target].split(";"):
                if statement.strip():
                    db.execute(statement)
            if target == 3:
                _fingerprint_stored(db)
            db.execute(f"PRAGMA user_version = {target}")


def _fingerprint_stored(db: Database) -> None:
    """Projects made before version 3 know their captions by their stored bytes."""
    for file_id, data in db.execute("SELECT id, captions_bytes FROM files").fetchall():
        if data:
            db.execute(
                "UPDATE files SET captions_size = ?, captions_sha256 = ? WHERE id = ?",
                [len(data), hashlib.sha256(data).hexdigest(), file_id],
            )
