"""The caption files a project holds: one row each, with the captions' bytes as added, where the
captions, media, reference and word timings are, the file's processing state and its version.

Captions are kept as their original bytes, so a project file copied to another machine still
opens; paths are stored relative to the project's folder where possible, and can be relinked.
Each file's size, modification time and SHA-256 are kept, so captions edited on disk after they
were added are found (``captions_changed``) and can be added again as a new version, the old
one (bytes, suggestions, decisions) kept aside.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from app.core.digest import file_sha256
from app.core.model import Document, Suggestion
from app.store.checkpoints import forget_checkpoint
from app.store.errors import ProjectError, damaged
from app.store.suggestions import suggestion_from_row, suggestion_row

#: File states: waiting, being processed, processed, failed with a reason.
PENDING, RUNNING, DONE, FAILED = "pending", "running", "done", "failed"
#: What a file left running by a process that has died is (it is pending for the next batch).
INTERRUPTED = "interrupted"
#: Modification times this close to the moment they were read are not trusted to tell a later
#: change (file systems with coarse times): such captions are compared by their hash.
_MTIME_SLACK = 2.0


@dataclass(frozen=True)
class CaptionsRead:
    """Captions as read from disk: ``data``, their bytes, kept as they are; ``document``, the
    caller's parse of them, which gives their format; ``mtime``, the file's modification time taken
    before ``data`` was read (None: unknown, and the captions are compared by their hash)."""

    data: bytes
    document: Document
    mtime: float | None = None


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


class FileTable:
    """A project's files and what was added with them (part of ``Project``, which opens the
    database)."""

    db: Database
    path: Path
    #: The files and suggestions tables' columns: a project of an older schema, opened
    #: read-only, lacks some (read as NULL).
    _columns: set[str]
    _suggestion_columns: set[str]

    @property
    def folder(self) -> Path:
        return self.path.parent

    def add_file(
        self,
        stem: str,
        captions: Path,
        media: Path | None = None,
        reference: Path | None = None,
        language: str | None = None,
        timings: Path | None = None,
        *,
        read: CaptionsRead,
    ) -> int:
        """Register a caption file, ``read`` from ``captions``, with its media, reference and word
        timings."""
        with self.db.atomic():
            cursor = self.db.execute(
                "INSERT INTO files (stem, captions_path, captions_format, captions_bytes, media_path,"
                " reference_path, language, added_at, timings_path, captions_size, captions_mtime,"
                " captions_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    stem,
                    self._stored_path(captions),
                    read.document.format,
                    read.data,
                    self._stored_path(media) if media else None,
                    self._stored_path(reference) if reference else None,
                    language,
                    time.time(),
                    self._stored_path(timings) if timings else None,
                    *_fingerprint(read.data, read.mtime),
                ],
            )
            file_id = int(cursor.lastrowid or 0)
        return file_id

    def new_version(
        self,
        file_id: int,
        captions: Path,
        read: CaptionsRead,
        carried: Sequence[dict[str, Any]] = (),
    ) -> int:
        """The file's captions changed on disk: keep the current version aside (``analyse_again``)
        and make those ``read`` from ``captions`` the file's, to be processed again. ``carried``: the previous version's decisions that still apply, replayed when it is
        processed (``finish``). Returns the new version's number."""
        with self.db.atomic():
            version = self.analyse_again(file_id, carried)
            self.db.execute(
                "UPDATE files SET captions_path = ?, captions_format = ?, captions_bytes = ?,"
                " captions_size = ?, captions_mtime = ?, captions_sha256 = ? WHERE id = ?",
                [
                    self._stored_path(captions),
                    read.document.format,
                    read.data,
                    *_fingerprint(read.data, read.mtime),
                    file_id,
                ],
            )
        return version

    def analyse_again(self, file_id: int, carried: Sequence[dict[str, Any]] = ()) -> int:
        """The file to be analysed again on the captions it holds (its media is heard only now):
        the current version (captions, suggestions and decisions) kept aside, ``carried`` its
        decisions to replay on the new analysis. Returns the new version's number."""
        version = self._version(file_id) + 1
        with self.db.atomic():
            self._set_aside(file_id)
            self.db.execute(
                "UPDATE files SET state = ?, reason = NULL, report = NULL, processed_at = NULL, version = ?,"
                " carried = ? WHERE id = ?",
                [
                    PENDING,
                    version,
                    json.dumps(list(carried), ensure_ascii=False) if carried else None,
                    file_id,
                ],
            )
            self.db.execute("DELETE FROM suggestions WHERE file_id = ?", [file_id])
            forget_checkpoint(self.db, file_id)
        return version

    def _set_aside(self, file_id: int) -> None:
        """The file's current version (its captions and suggestions) into the versions table."""
        self.db.execute(
            "INSERT INTO versions (file_id, version, captions_bytes, suggestions, replaced_at)"
            " SELECT id, version, captions_bytes, ?, ? FROM files WHERE id = ?",
            [
                json.dumps([suggestion_row(s) for s in self.suggestions(file_id)], ensure_ascii=False),
                time.time(),
                file_id,
            ],
        )

    def carried(self, file_id: int) -> list[dict[str, Any]]:
        """Decisions of the previous version still to be replayed (``new_version``)."""
        if "carried" not in self._columns:
            return []
        row = self.db.execute("SELECT carried FROM files WHERE id = ?", [file_id]).fetchone()
        if not row or not row[0]:
            return []
        try:
            carried = json.loads(row[0])
            if not isinstance(carried, list) or not all(isinstance(c, dict) and "gap" in c for c in carried):
                raise ValueError("not a list of decisions by gap")
        except ValueError as error:
            raise damaged(self.db, self.path, file_id, "decisions to carry over", error) from None
        return carried

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
        """Register a caption file that could not be read (or made: ``captions`` need not exist),
        with the reason, so status lists it (and, by its fingerprint, finds it changed once it has
        been mended or made)."""
        fingerprint: tuple[int | None, float | None, str | None] = (None, None, None)
        if not Path(captions).exists():
            # Captions still to be made (media that could not be transcribed): found changed once
            # they exist.
            fingerprint = (0, None, hashlib.sha256(b"").hexdigest())
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

    def has_captions(self, file_id: int) -> bool:
        """Whether the file's captions were read when added (``add_file_failed`` keeps none)."""
        row = self.db.execute("SELECT length(captions_bytes) FROM files WHERE id = ?", [file_id]).fetchone()
        return bool(row and row[0])

    def captions_bytes(self, file_id: int) -> bytes:
        """The captions as they were added, byte for byte (checked against their SHA-256)."""
        return self.stored_captions(file_id)[0]

    def language(self, file_id: int) -> str:
        """The file's language as given, or as its analysis detected it ("en" if neither says)."""
        entry = self.file(file_id)
        if entry.language:
            return entry.language
        return str(self.report(file_id).get("language") or "en")

    def report(self, file_id: int) -> dict[str, Any]:
        """What the file's last analysis reported (its language, evidence, warnings), or {}."""
        row = self.db.execute("SELECT report FROM files WHERE id = ?", [file_id]).fetchone()
        if not row or not row[0]:
            return {}
        try:
            report = json.loads(row[0])
            if not isinstance(report, dict):
                raise ValueError("not a JSON object")
        except ValueError as error:
            raise damaged(self.db, self.path, file_id, "analysis report", error) from None
        return report

    def relink_media(self, file_id: int, media: Path) -> None:
        with self.db.atomic():
            self.db.execute(
                "UPDATE files SET media_path = ? WHERE id = ?", [self._stored_path(media), file_id]
            )

    def set_reference(self, file_id: int, reference: Path) -> None:
        with self.db.atomic():
            self.db.execute(
                "UPDATE files SET reference_path = ? WHERE id = ?", [self._stored_path(reference), file_id]
            )

    def _stored_path(self, path: Path) -> str:
        return stored_path(self.folder, path)

    def _resolved(self, stored: str) -> Path:
        path = Path(stored)
        return path if path.is_absolute() else (self.folder / path).resolve()

    # --- documents --------------------------------------------------------------------------

    def stored_captions(self, file_id: int) -> tuple[bytes, str, Path]:
        """The captions as added: their bytes, their format and where they came from. Bytes that
        no longer match the SHA-256 kept with them are refused: they were changed outside Punctum,
        and exporting them would write what nobody reviewed."""
        digest = "captions_sha256" if "captions_sha256" in self._columns else "NULL"
        row = self.db.execute(
            f"SELECT captions_bytes, captions_format, captions_path, {digest}, stem FROM files WHERE id = ?",
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
        readings = "readings" if "readings" in self._suggestion_columns else "NULL"
        rows = self.db.execute(
            f"SELECT id, gap, mark, confidence, source, evidence, casing, probabilities, {readings}"
            " FROM suggestions WHERE file_id = ? ORDER BY id",
            [file_id],
        ).fetchall()
        try:
            return [suggestion_from_row(r) for r in rows]
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as error:
            raise damaged(self.db, self.path, file_id, "suggestions", error) from None


def stored_path(folder: Path, path: Path) -> str:
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
