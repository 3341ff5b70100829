"""Checkpoints of a file's review (``app.store.checkpoints``): where one is taken, what it holds,
and a document started from one.

A checkpoint is taken some way behind the last decision, so that a file opened again can still
undo its last ``UNDO_KEPT`` decisions one by one: the decisions after the checkpoint are replayed
through the history as before; those up to it are in the state it holds. While a file is under
review, the collector is kept from walking its long history over and over (``collect_less``).
"""

from __future__ import annotations

import gc
import itertools
from collections.abc import Sequence

from app.core.history import History, SuggestionEdit, WordEdit
from app.core.model import Document, Suggestion, Word
from app.store.checkpoints import Checkpoint
from app.store.errors import DatabaseError
from app.store.project import Project, ProjectError

#: A person's decisions a file opened again can still undo one by one: the checkpoint is taken
#: behind them, and they are replayed on opening (about 8 ms each, with the re-reading after each,
#: on a 44-minute call).
UNDO_KEPT = 50
#: Decisions after which the review in progress takes a checkpoint, beside the one it takes when
#: the file is closed: a crash costs no more than these replayed on opening.
CHECKPOINT_EVERY = 100

_ENDLESS = 1 << 62


def _safe_rows(outline: Sequence[tuple[int, str, bool]]) -> tuple[list[int], list[int]]:
    """The decision rows a checkpoint may be taken at, and the rows of the steps in effect that
    are a person's own (not joined to the one before), oldest first.

    The decisions are followed as the history takes them (``undo`` takes back a step and those
    joined to it, ``redo`` puts them back): a checkpoint may not fall between a step and an undo or
    redo of it (the history after the checkpoint would not hold it), nor after a re-cut still in
    effect or a step that can still be redone, nor between a step and the re-reading joined to it.
    """
    done: list[tuple[int, bool]] = []
    undone: list[tuple[int, bool]] = []
    spans: list[tuple[int, int]] = []
    recuts: set[int] = set()
    for row, action, joins in outline:
        if action == "undo":
            while done:
                step = done.pop()
                undone.append(step)
                spans.append((step[0], row))
                if not step[1]:
                    break
        elif action == "redo":
            if undone:
                step = undone.pop()
                done.append(step)
                spans.append((step[0], row))
                while undone and undone[-1][1]:
                    step = undone.pop()
                    done.append(step)
                    spans.append((step[0], row))
        else:
            done.append((row, joins))
            undone.clear()
            if action == "recut":
                recuts.add(row)
    spans += [(row, _ENDLESS) for row, _ in undone]
    spans += [(row, _ENDLESS) for row, _ in done if row in recuts]
    rows = [row for row, _, _ in outline]
    joined_next = {row for (row, _, _), (_, _, joins) in itertools.pairwise(outline) if joins}
    safe = [r for r in rows if r not in joined_next and not any(lo <= r < hi for lo, hi in spans)]
    return safe, [row for row, joins in done if not joins]


def checkpoint_at(document: Document, history: History, through: int) -> Checkpoint | None:
    """The file's state as of decision row ``through``: the steps in effect after it taken back
    (on copies: the document is left as it is). None where the history does not reach back there."""
    later = [step for step in history.done if step.row is None or step.row > through]
    if any(step.row is None for step in later):
        return None
    suggestions: dict[int, Suggestion | None] = {s.id: s for s in document.suggestions}
    first = history.first_word_edits()
    words: dict[int, Word] = {index: document.word(index) for index in first}
    for step in reversed(later):
        for edit in reversed(step.edits):
            if isinstance(edit, SuggestionEdit):
                suggestions[edit.suggestion_id] = edit.before
            elif isinstance(edit, WordEdit):
                words[edit.index] = edit.before
    last = {n: (step.by, step.row) for n, step in history.last_changes(through).items()}
    return Checkpoint(
        through,
        sorted((s for s in suggestions.values() if s is not None), key=lambda s: s.id),
        {index: word for index, word in words.items() if word != first[index].before},
        last,
    )


def save_checkpoint(
    project: Project, file_id: int, document: Document, history: History, kept: int = UNDO_KEPT
) -> bool:
    """Take a checkpoint of the file, ``kept`` of a person's decisions behind the last, when there
    is a newer one to take; whether one was taken."""
    if project.read_only:
        return False
    try:
        outline = project.decision_outline(file_id)
    except (ProjectError, DatabaseError):  # a cache: the decisions are what counts, and they are kept
        return False
    safe, steps = _safe_rows(outline)
    if len(steps) <= kept:
        return False
    behind = steps[-kept - 1]
    # Only the steps after the checkpoint the history began at can be taken back from here.
    usable = [row for row in safe if history.begins_after < row <= behind]
    if not usable:
        return False
    checkpoint = checkpoint_at(document, history, max(usable))
    if checkpoint is None:
        return False
    project.keep_checkpoint(file_id, checkpoint)
    return True


def start_from(document: Document, history: History, checkpoint: Checkpoint) -> None:
    """``document`` (the captions as added, no suggestions yet) and its new ``history`` as
    ``checkpoint`` left them."""
    edits = {}
    for index, word in checkpoint.words.items():
        edits[index] = WordEdit(index, document.word(index), word)
        document.put_word(index, word)
    document.suggestions = list(checkpoint.suggestions)
    history.start_from(checkpoint.through, checkpoint.last, edits)


#: The collector's thresholds while a file is under review (Python's default is 700, 10, 10). A
#: review keeps every step it took, each with what it changed (a long call's history holds hundreds
#: of thousands of suggestions), and the collector at its default walks them over and over: on a
#: 44-minute call a decision took about 90 ms by its 300th, 47 ms with these.
COLLECTOR_THRESHOLDS = (50_000, 20, 100)


def collect_less() -> None:
    """Raise the collector's thresholds to ``COLLECTOR_THRESHOLDS`` (never lower them)."""
    gc.set_threshold(
        *(max(now, wanted) for now, wanted in zip(gc.get_threshold(), COLLECTOR_THRESHOLDS, strict=True))
    )
