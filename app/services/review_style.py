"""The house style of a review session: what the person's decisions taught (``services.restyle``)
and the rest of the file read again with it after each of them. Part of ``ReviewSession``."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from app.core.gap_readings import GapReading
from app.core.history import Decider, History, Step
from app.core.marks import model_class
from app.core.model import Document, Suggestion
from app.core.triage import TriagePolicy
from app.ml.house_style import HouseStyle, StyleExample, answer_tally, reader_kind, tally_text
from app.ml.style_fit import Priors
from app.services.learnt_capitals import CapitalCount, learnt_line, merged, taught_capitals
from app.services.restyle import (
    Decided,
    decided,
    file_examples,
    give_style,
    project_style,
    reset_at,
    reset_style,
    restyle,
)
from app.store.project import DONE, Project

if TYPE_CHECKING:
    from app.core.decisions import Decision


def project_teaching(
    project: Project, without: int | None = None
) -> tuple[list[StyleExample], dict[str, CapitalCount]]:
    """What every processed file of a project (but file ``without``) teaches, each replayed once:
    its examples for the house style, and the capitals its answers gave or kept from words."""
    from app.services.projects import load_document

    examples: list[StyleExample] = []
    capitals: list[dict[str, CapitalCount]] = []
    for entry in project.files():
        if entry.id == without or entry.state != DONE or not project.decided_by_person(entry.id):
            continue
        document, history = load_document(project, entry.id)
        state = decided(document, history)
        examples += file_examples(project, entry.id, document, history, None, state)
        capitals.append(taught_capitals(document, history, reset_at(project)))
    return examples, merged(*capitals)


#: What the re-reading after a reset or a style given is called (in the Edit menu's Undo): it takes
#: back the re-reading; the reset or the style given stays until the person changes it again.
RESET_NAME = "Re-read after the house style was reset"
GIVEN_NAME = "Re-read with the house style given"


class SessionStyle:
    """The house-style part of a ``ReviewSession``."""

    project: Project
    file_id: int
    document: Document
    history: History
    #: The triage policy the rule last settled by: after each decision the rest is re-read with
    #: the house style and settled by it again (None: what the rule settled stays as it is).
    policy: TriagePolicy | None
    #: Whether decisions teach the house style and re-read the rest.
    learns: bool
    #: How far the decisions may move the style (``style_fit.PRIORS`` as shipped).
    priors: Priors
    _readings: list[GapReading] | None
    _other_examples: list[StyleExample] | None
    #: What the project's other files' answers say of words' capitals (read with their examples).
    _other_capitals: dict[str, CapitalCount]
    #: The style last fitted, with the last step not the rule's when it was: the rule's re-reading
    #: decides nothing a style learns from, so the editor asking again after it costs no new fit.
    _fitted: tuple[Step | None, HouseStyle] | None
    #: What the answers kept, by kind of suggestion (``answer_tally``), as of the style fitted
    #: (set with ``_fitted``).
    _tally: dict[tuple[int, str], tuple[int, int]]

    @property
    def has_reference(self) -> bool:
        raise NotImplementedError

    def _do(self, decision: Decision, by: Decider = Decider.PERSON) -> Step | None:
        raise NotImplementedError

    def decided_by_you(self) -> int:
        """How many gaps of this file a person decided the mark of (what the house style learns
        from; the editor's header and ``punctum status`` count the same)."""
        return len(decided(self.document, self.history).taught_at)

    def readings(self) -> list[GapReading]:
        """What the model's readers said at each gap at the last analysis (read once)."""
        if self._readings is None:
            self._readings = self.project.gap_readings(self.file_id) or []
        return self._readings

    def style(self, state: Decided | None = None) -> HouseStyle:
        """The project's house style as this file's decisions and its other files' leave it
        (``state``: what this file's history says, when the caller has read it)."""
        last = next((step for step in reversed(self.history.done) if step.by is not Decider.RULE), None)
        if self._fitted is not None and self._fitted[0] is last:
            return self._fitted[1]
        others, _ = self._other_files()
        mine = file_examples(self.project, self.file_id, self.document, self.history, self.readings(), state)
        style = project_style(self.project, [*others, *mine], self.priors)
        self._fitted = (last, style)
        self._tally = answer_tally([*others, *mine])
        return style

    def answers_like(self, suggestion: Suggestion) -> str:
        """What this project's answers said of suggestions like this mark suggestion ("in this
        project you kept 40 of 44 full stops both readers chose"; "" before any), as the style
        was last fitted."""
        readings = self.readings()
        if suggestion.gap >= len(readings) or suggestion.casing is not None:
            return ""
        self.style()
        mark = model_class(suggestion.mark)
        return tally_text(mark, reader_kind(mark, readings[suggestion.gap]), self._tally)

    def capitals_line(self) -> str:
        """What the answers in this project taught of capitals, for the style's line ("" for none)."""
        return learnt_line(self._capitals())

    def _capitals(self) -> dict[str, CapitalCount]:
        """What the answers in this project (since any reset) taught of words' capitals."""
        mine = taught_capitals(self.document, self.history, reset_at(self.project))
        return merged(self._other_files()[1], mine)

    def _other_files(self) -> tuple[list[StyleExample], dict[str, CapitalCount]]:
        """What the project's other files teach (read once a session, and after a reset)."""
        if self._other_examples is None:
            self._other_examples, self._other_capitals = project_teaching(self.project, without=self.file_id)
        return self._other_examples, self._other_capitals

    def _style_changed(self, named: str) -> Step | None:
        """What was read of the project's style forgotten (read again when next asked), and the
        undecided gaps read again with the style as it now stands, as a step ``named``."""
        self._other_examples = None
        self._fitted = None
        return self._reread(alone=named)

    def reset_style(self) -> Step | None:
        """Forget what the decisions so far taught (and any style the project was given), and
        read the undecided gaps again as the model does."""
        reset_style(self.project)
        return self._style_changed(RESET_NAME)

    def give_style(self, style: HouseStyle | None) -> Step | None:
        """Start the project's style from ``style`` (a team's style file) and read the rest again."""
        give_style(self.project, style)
        return self._style_changed(GIVEN_NAME)

    def _reread(self, alone: str | None = None, style: HouseStyle | None = None) -> Step | None:
        """The undecided gaps read again with the style as it stands (``style`` when the caller
        has it), as a step of the rule undone with the person's decision before it, or, ``alone``,
        a step of its own of that name."""
        if not self.learns:
            return None
        state = decided(self.document, self.history)  # read once for the style and the re-reading
        style = style or self.style(state)
        # A name capitalised in another file of the project is proposed so here too.
        state = dataclasses.replace(state, capitals=self._capitals())
        change = restyle(self.document, state, self.readings(), style, self.policy, self.has_reference, alone)
        return self._do(change, by=Decider.RULE) if change is not None else None
