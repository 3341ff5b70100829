"""A file's state as its decisions left it at one of them, so that opening the file replays only
the decisions after it rather than every one (a reviewed hour-long call holds hundreds, each
re-reading the rest of the file).

A checkpoint is a cache: the decision log stays the record. It names the last decision row it
includes and a fingerprint of what it was made from (the file's version, its decisions up to that
row, its stored suggestions); one that no longer matches, or cannot be read, is passed over and
the decisions are replayed from the start, as without it.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from app.core.history import Decider
from app.core.model import Casing, Source, Status, Suggestion, Word

_WORD_FIELDS = [f.name for f in dataclasses.fields(Word)]


@dataclass(frozen=True)
class Checkpoint:
    """A file's state up to and including decision row ``through``."""

    through: int
    #: Every suggestion as the decisions left it, in id order.
    suggestions: list[Suggestion]
    #: The words the decisions changed, as they left them (by word index).
    words: dict[int, Word]
    #: Per suggestion a decision changed: who changed it last, and in which decision row.
    last: dict[int, tuple[Decider, int | None]]


def _suggestion_json(s: Suggestion) -> list[Any]:
    casing = s.casing.value if s.casing else None
    readings = {k: list(v) for k, v in s.readings.items()}
    return [
        s.id,
        s.gap,
        s.mark,
        s.confidence,
        s.source.value,
        s.evidence,
        casing,
        s.probabilities,
        readings,
        s.status.value,
    ]


def _suggestion_of(row: list[Any]) -> Suggestion:
    number, gap, mark, confidence, source, evidence, casing, probabilities, readings, status = row
    return Suggestion(
        int(number),
        int(gap),
        str(mark),
        float(confidence),
        Source(source),
        {str(k): float(v) for k, v in probabilities.items()},
        Status(status),
        Casing(casing) if casing else None,
        str(evidence),
        {str(k): (str(v[0]), float(v[1])) for k, v in readings.items()},
    )


def checkpoint_bytes(checkpoint: Checkpoint) -> bytes:
    state = {
        "suggestions": [_suggestion_json(s) for s in checkpoint.suggestions],
        "words": [[index, *dataclasses.astuple(word)] for index, word in sorted(checkpoint.words.items())],
        "last": [[number, by.value, row] for number, (by, row) in sorted(checkpoint.last.items())],
    }
    return zlib.compress(json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode(), 6)


def checkpoint_of(through: int, data: bytes) -> Checkpoint:
    """The checkpoint ``checkpoint_bytes`` wrote; a ``ValueError`` (or ``KeyError``, ``TypeError``)
    for anything else."""
    state = json.loads(zlib.decompress(data))
    return Checkpoint(
        through,
        [_suggestion_of(row) for row in state["suggestions"]],
        {int(row[0]): Word(**dict(zip(_WORD_FIELDS, row[1:], strict=True))) for row in state["words"]},
        {int(n): (Decider(by), None if row is None else int(row)) for n, by, row in state["last"]},
    )


class Checkpoints:
    """A project's checkpoints (part of ``Project``, which opens the database)."""

    db: Database
    path: Path

    def _fingerprint(self, file_id: int, through: int) -> str:
        """What a checkpoint through row ``through`` was made from: the file's version, how many of
        its decisions reach that row, and its stored suggestions."""
        version, decisions, suggestions, last = self.db.execute(
            "SELECT version,"
            " (SELECT COUNT(*) FROM decisions d WHERE d.file_id = f.id AND d.version = f.version AND d.id <= ?),"
            " (SELECT COUNT(*) FROM suggestions s WHERE s.file_id = f.id),"
            " (SELECT MAX(id) FROM suggestions s WHERE s.file_id = f.id)"
            " FROM files f WHERE f.id = ?",
            [through, file_id],
        ).fetchone()
        return f"{version}:{decisions}:{suggestions}:{last}"

    def checkpoint(self, file_id: int) -> Checkpoint | None:
        """The file's checkpoint, if it has one that still matches what it was made from."""
        if "checkpoints" not in self.db.table_names():
            return None  # an older project, opened read-only
        row = self.db.execute(
            "SELECT through, fingerprint, state FROM checkpoints WHERE file_id = ?", [file_id]
        ).fetchone()
        if row is None or row[1] != self._fingerprint(file_id, row[0]):
            return None
        try:
            return checkpoint_of(int(row[0]), row[2])
        except (ValueError, KeyError, TypeError, zlib.error):
            return None  # a damaged cache: the decisions are replayed from the start

    def keep_checkpoint(self, file_id: int, checkpoint: Checkpoint) -> None:
        """Keep ``checkpoint`` as the file's (in place of any other); quietly not where the project
        cannot be written just now (it is a cache)."""
        try:
            with self.db.atomic():
                self.db.execute(
                    "INSERT OR REPLACE INTO checkpoints (file_id, through, fingerprint, state) VALUES (?, ?, ?, ?)",
                    [
                        file_id,
                        checkpoint.through,
                        self._fingerprint(file_id, checkpoint.through),
                        checkpoint_bytes(checkpoint),
                    ],
                )
        except sqlite3.Error:
            pass


def forget_checkpoint(db: Database, file_id: int) -> None:
    """Drop the file's checkpoint: what it was made from is about to change (inside the caller's
    transaction)."""
    if "checkpoints" in db.table_names():
        db.execute("DELETE FROM checkpoints WHERE file_id = ?", [file_id])
