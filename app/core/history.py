"""Undoable edits of a document.

Each step records, for every value it touches, the value before and after, so undo and redo are
plain assignments and cannot drift from what was done. Several changes made by one user action
(accepting a whole selection) form one step and undo together.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.core.model import Cue, Document, Suggestion, Word


@dataclass(frozen=True)
class WordEdit:
    index: int
    before: Word
    after: Word


@dataclass(frozen=True)
class SuggestionEdit:
    """``before`` None adds the suggestion; ``after`` None removes it."""

    suggestion_id: int
    before: Suggestion | None
    after: Suggestion | None


@dataclass(frozen=True)
class CueEdit:
    """The cues cut again: the whole list before and after. The words stay the same and in order,
    so every word index (and every suggestion's gap) means what it meant."""

    before: tuple[Cue, ...]
    after: tuple[Cue, ...]


Edit = WordEdit | SuggestionEdit | CueEdit


class Decider(enum.StrEnum):
    """Who took a step, from the project's decision rows to the history and the house style: only
    a person's decisions teach the style, and a gap anyone decided is never read again."""

    PERSON = "editor"
    #: The triage rule: its settlement is reopened and settled again when the policy changes.
    RULE = "rule"
    #: A program that is not the rule (batch's ``--apply confident``, ``all``).
    BATCH = "batch"


@dataclass(frozen=True)
class Step:
    description: str
    edits: tuple[Edit, ...]
    by: Decider = Decider.PERSON
    #: The project's row of the decision it stands for (None: not recorded), so that what a reset
    #: of the house style forgot is known by decision, not by gap.
    row: int | None = None
    #: Undone and redone with the step before it: the rule's re-reading after a person's decision
    #: is part of that decision.
    joins_previous: bool = False


Listener = Callable[[Step, bool], None]


def _push_or_pop(stack: list[Any], item: object, forward: bool) -> None:
    if forward:
        stack.append(item)
    else:
        stack.pop()


def _apply(document: Document, edit: Edit, forward: bool) -> None:
    if isinstance(edit, CueEdit):
        document.cues = list(edit.after if forward else edit.before)
        document.reindex()
        return
    if isinstance(edit, WordEdit):
        document.put_word(edit.index, edit.after if forward else edit.before)
        return
    new = edit.after if forward else edit.before
    old = edit.before if forward else edit.after
    if old is None and new is not None:
        document.insert_suggestion(new)
    elif new is None:
        document.remove_suggestion(edit.suggestion_id)
    else:
        document.put_suggestion(new)


class History:
    """The undo and redo stacks of one document."""

    # Every step in effect is kept by default: the triage rule and the house style read from them
    # which gaps a person decided, so a long review must not forget its first decisions.
    def __init__(self, document: Document, limit: int = 100_000) -> None:
        self.document = document
        self.limit = limit
        self._done: list[Step] = []
        self._undone: list[Step] = []
        #: Per suggestion, the steps in effect that changed it, and per word its edits in effect,
        #: oldest first: who last decided a gap, and what a word was before any decision, are then
        #: read without going through every step of a long review.
        self._changed: dict[int, list[Step]] = {}
        self._word_edits: dict[int, list[WordEdit]] = {}
        #: The project's decision row the history begins after (``start_from``; 0: the captions).
        self.begins_after = 0
        #: Called with (step, undone) after every change, so views can refresh what it touched.
        self.listeners: list[Listener] = []

    def do(self, step: Step) -> bool:
        """Apply ``step``; a step that changes nothing is dropped. Returns whether it changed anything."""
        if not step.edits:
            return False
        for edit in step.edits:
            _apply(self.document, edit, forward=True)
        self._track(step, forward=True)
        self._done.append(step)
        del self._done[: -self.limit]
        self._undone.clear()
        self.document.changes_since_save += 1
        self._notify(step, undone=False)
        return True

    def undo(self) -> Step | None:
        """Undo the last step (and the step it joins); returns the person's step undone."""
        step = self._move(forward=False)
        while step is not None and step.joins_previous and self._done:
            step = self._move(forward=False)
        return step

    def redo(self) -> Step | None:
        """Redo the last undone step and the steps that join it; returns the first."""
        step = self._move(forward=True)
        while step is not None and self._undone and self._undone[-1].joins_previous:
            self._move(forward=True)
        return step

    def _move(self, forward: bool) -> Step | None:
        """The last undone step redone (``forward``), or the last step done undone, and moved to
        the other stack."""
        source, target = (self._undone, self._done) if forward else (self._done, self._undone)
        if not source:
            return None
        step = source.pop()
        for edit in step.edits if forward else reversed(step.edits):
            _apply(self.document, edit, forward)
        self._track(step, forward)
        target.append(step)
        self.document.changes_since_save += 1 if forward else -1
        self._notify(step, undone=not forward)
        return step

    def _track(self, step: Step, forward: bool) -> None:
        """Keep ``_changed`` and ``_word_edits`` as the step done (``forward``) or undone leaves them."""
        for edit in step.edits if forward else reversed(step.edits):
            if isinstance(edit, SuggestionEdit):
                _push_or_pop(self._changed.setdefault(edit.suggestion_id, []), step, forward)
            elif isinstance(edit, WordEdit):
                _push_or_pop(self._word_edits.setdefault(edit.index, []), edit, forward)

    def start_from(
        self, through: int, last: dict[int, tuple[Decider, int | None]], words: dict[int, WordEdit]
    ) -> None:
        """Begin a new history where a checkpoint of the project through decision row ``through``
        left the document: per suggestion, who changed it last and in which decision row, and per
        word its edit since the captions. What came before cannot be undone; who decided what is
        known as before."""
        assert not self._done and not self._undone, "a history starts from a checkpoint only when new"
        self.begins_after = through
        earlier: dict[tuple[Decider, int | None], Step] = {}
        for suggestion_id, (by, row) in last.items():
            step = earlier.setdefault((by, row), Step("", (), by=by, row=row))
            self._changed[suggestion_id] = [step]
        self._word_edits = {index: [edit] for index, edit in words.items()}

    def last_changes(self, through: int | None = None) -> dict[int, Step]:
        """Per suggestion a step in effect changed, the last such step (``through``: the last as
        of decision row ``through``, among those it includes)."""
        if through is None:
            return {suggestion_id: steps[-1] for suggestion_id, steps in self._changed.items() if steps}
        found = {}
        for suggestion_id, steps in self._changed.items():
            step = next((s for s in reversed(steps) if s.row is None or s.row <= through), None)
            if step is not None:
                found[suggestion_id] = step
        return found

    def first_word_edits(self) -> dict[int, WordEdit]:
        """Per word a step in effect changed, the first such edit: its ``before`` is the word as
        it was before any decision."""
        return {index: edits[0] for index, edits in self._word_edits.items() if edits}

    @property
    def done(self) -> tuple[Step, ...]:
        """The steps in effect, oldest first."""
        return tuple(self._done)

    @property
    def step_counts(self) -> tuple[int, int]:
        """How many steps are in effect, and how many undone (to redo)."""
        return len(self._done), len(self._undone)

    @property
    def can_undo(self) -> bool:
        return bool(self._done)

    @property
    def can_redo(self) -> bool:
        return bool(self._undone)

    @property
    def undo_description(self) -> str | None:
        """What undo takes back: the person's step, not the rule's re-reading that joins it."""
        for step in reversed(self._done):
            if not step.joins_previous:
                return step.description
        return self._done[-1].description if self._done else None

    @property
    def redo_description(self) -> str | None:
        return self._undone[-1].description if self._undone else None

    def _notify(self, step: Step, undone: bool) -> None:
        for listener in list(self.listeners):
            listener(step, undone)
