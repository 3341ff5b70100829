"""What an editor can do to a document, each as an undoable ``Step`` for ``History.do``.

Builders only read the document; nothing changes until the history applies the step.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from app.core.errors import PunctumError
from app.core.history import CueEdit, Decider, Edit, History, Step, SuggestionEdit, WordEdit
from app.core.marks import same_mark
from app.core.marks import set_mark as written_with
from app.core.model import Cue, Document, Source, Status, Suggestion, apply_casing
from app.core.recut_cues import CueCut, RecordedCutError, cut_as
from app.core.resegment import resegment
from app.core.triage import PRECISION_TARGET, TriagePolicy, triage


class EditError(PunctumError):
    """An edit the document cannot take, such as an empty word."""


def _decide(
    document: Document,
    suggestion_id: int,
    status: Status,
    by_gap: dict[int, list[Suggestion]] | None = None,
) -> list[Edit]:
    """``by_gap``: the document's suggestions by gap, when many are decided at once (``_by_gap``)."""
    suggestion = document.suggestion(suggestion_id)
    edits: list[Edit] = []
    word = document.word(suggestion.gap)
    was_accepted = suggestion.status is Status.ACCEPTED
    if suggestion.casing is not None:
        wanted = apply_casing(word.text, suggestion.casing)
        if status is Status.ACCEPTED:
            new_word = replace(word, text=wanted)
        elif was_accepted and word.text == wanted:
            # Rejecting what was accepted undoes it: captions come lowercase.
            new_word = replace(word, text=word.text.lower())
        else:
            new_word = word
    elif status is Status.ACCEPTED:
        new_word = replace(word, mark=written_with(word.mark, suggestion.mark, document.language))
    elif was_accepted and same_mark(word.mark, suggestion.mark):
        # Rejecting what was accepted takes the mark away again: captions come unpunctuated.
        new_word = replace(word, mark=written_with(word.mark, "", document.language))
    else:
        new_word = word
    if new_word != word:
        edits.append(WordEdit(suggestion.gap, word, new_word))
    if suggestion.status is not status:
        edits.append(SuggestionEdit(suggestion.id, suggestion, replace(suggestion, status=status)))
    if status is Status.ACCEPTED:
        rivals = document.suggestions if by_gap is None else by_gap.get(suggestion.gap, [])
        edits.extend(_settle_rivals(rivals, suggestion))
    return edits


def _by_gap(document: Document) -> dict[int, list[Suggestion]]:
    """The document's suggestions by gap: accepting every suggestion of a long file otherwise
    searches all of them for each one's rivals (6 s for 330 real caption files)."""
    gaps: dict[int, list[Suggestion]] = {}
    for suggestion in document.suggestions:
        gaps.setdefault(suggestion.gap, []).append(suggestion)
    return gaps


def _settle_rivals(candidates: Iterable[Suggestion], chosen: Suggestion) -> list[Edit]:
    """Other proposals for the same gap (the reference's and the model's) are decided with the
    chosen one: agreeing ones accepted, the rest turned down, so the editor is not asked twice."""
    edits: list[Edit] = []
    for other in candidates:
        if (
            other.id == chosen.id
            or other.gap != chosen.gap
            or (other.casing is None) != (chosen.casing is None)
            or other.source is Source.EDITOR
        ):
            continue
        agrees = other.casing == chosen.casing if chosen.casing is not None else other.mark == chosen.mark
        status = Status.ACCEPTED if agrees else Status.REJECTED
        if other.status is not status:
            edits.append(SuggestionEdit(other.id, other, replace(other, status=status)))
    return edits


def accept(document: Document, suggestion_id: int) -> Step:
    """Write the suggested mark into its gap."""
    return Step("Accept suggestion", tuple(_decide(document, suggestion_id, Status.ACCEPTED)))


def reject(document: Document, suggestion_id: int) -> Step:
    """Turn a suggestion down; if it had been accepted, its mark is removed again."""
    return Step("Reject suggestion", tuple(_decide(document, suggestion_id, Status.REJECTED)))


def accept_many(document: Document, suggestion_ids: Iterable[int]) -> Step:
    """Accept several suggestions as one step, undone together."""
    edits: list[Edit] = []
    ids = list(dict.fromkeys(suggestion_ids))
    seen_gaps: dict[tuple[int, bool], int] = {}  # one mark and one casing per word
    by_gap = _by_gap(document)  # a builder only reads: the document stays as it is meanwhile
    for suggestion_id in ids:
        suggestion = document.suggestion(suggestion_id)
        gap = (suggestion.gap, suggestion.casing is not None)
        if gap in seen_gaps:
            raise EditError(
                f"suggestions {seen_gaps[gap]} and {suggestion_id} are for the same gap; accept one"
            )
        seen_gaps[gap] = suggestion_id
        edits.extend(_decide(document, suggestion_id, Status.ACCEPTED, by_gap))
    return Step(f"Accept {len(ids)} suggestions", _merged(edits))


def reject_many(document: Document, suggestion_ids: Iterable[int]) -> Step:
    """Turn several suggestions down as one step (a gap's every proposal, say)."""
    ids = list(dict.fromkeys(suggestion_ids))
    edits = [edit for sid in ids for edit in _decide(document, sid, Status.REJECTED)]
    return Step(f"Reject {len(ids)} suggestions" if len(ids) > 1 else "Reject suggestion", _merged(edits))


def settle(document: Document, reopen: Iterable[int], accept: Iterable[int]) -> Step:
    """The triage rule's decision as one step: the suggestions in ``reopen`` go back to pending
    (what an earlier rule accepted for them taken out again), then those in ``accept`` are accepted
    with what they call for. Undone as one."""
    return restyle(document, reopen, (), (), accept, alone=SETTLE_NAME)


#: The rule's settlement on its own (a policy given) as the Edit menu names it.
SETTLE_NAME = "Settle by triage"


def restyle(
    document: Document,
    reopen: Iterable[int],
    put: Iterable[Suggestion],
    drop: Iterable[int],
    accept: Iterable[int],
    recalibrate: Iterable[tuple[int, float]] = (),
    alone: str | None = None,
) -> Step:
    """The gaps nobody has decided, read again with the house style, as one step of the rule that
    undoes with the person's decision it follows: ``reopen`` goes back to pending (as ``settle``),
    then each of ``put`` replaces the suggestion of its id (or is added), ``drop`` is taken out, and
    ``accept`` is accepted as the triage rule settles it; ``recalibrate`` gives suggestions a new
    confidence. ``alone``: the name of a step of its own (a policy, a style given or reset); None
    for one undone with the step before."""
    reopened = [edit for sid in dict.fromkeys(reopen) for edit in _decide(document, sid, Status.PENDING)]
    # Each change is built against the document as the ones before it leave it, without applying
    # them: a long call's re-reading recalibrates hundreds of gaps, and a project replays them all.
    now = {
        e.suggestion_id: e.after for e in reopened if isinstance(e, SuggestionEdit) and e.after is not None
    }
    known = {s.id for s in document.suggestions}

    def current(suggestion_id: int) -> Suggestion:
        return now.get(suggestion_id) or document.suggestion(suggestion_id)

    changed: list[Edit] = [SuggestionEdit(s.id, current(s.id) if s.id in known else None, s) for s in put]
    changed += [SuggestionEdit(i, current(i), None) for i in dict.fromkeys(drop)]
    confidences = dict(recalibrate)
    for suggestion_id, confidence in confidences.items():
        before = current(suggestion_id)
        changed.append(SuggestionEdit(suggestion_id, before, before.recalibrated(confidence)))
    accepted = _accepted_after(document, reopened, changed[: len(changed) - len(confidences)], accept)
    # A suggestion accepted after its confidence moved keeps the moved confidence.
    accepted = [
        SuggestionEdit(e.suggestion_id, e.before, e.after.recalibrated(confidences[e.suggestion_id]))
        if isinstance(e, SuggestionEdit) and e.after is not None and e.suggestion_id in confidences
        else e
        for e in accepted
    ]
    edits = _merged(reopened + changed + accepted)
    description = "Re-read with the house style" if alone is None else alone
    return Step(description, edits, by=Decider.RULE, joins_previous=alone is None)


def _accepted_after(
    document: Document, reopened: list[Edit], changed: list[Edit], accept: Iterable[int]
) -> list[Edit]:
    """What accepting ``accept`` takes once ``reopened`` and ``changed`` are in (tried on the
    document and taken back: an accept reads the marks and rivals they leave)."""
    ids = list(accept)
    if not ids:
        return []
    trial = History(document)
    trial.do(Step("reopen", _merged(reopened)))
    try:
        trial.do(Step("re-read", tuple(changed)))
        return list(accept_many(document, ids).edits)
    finally:
        while trial.undo() is not None:
            pass


def surest_per_gap(
    suggestions: Iterable[Suggestion], min_confidence: float = 0.0, reference_first: bool = False
) -> list[int]:
    """Ids of the surest suggestion for each gap (a mark and a casing count apart) that is at least
    ``min_confidence`` sure; with ``reference_first`` the reference's outrank the model's."""
    best: dict[tuple[int, bool], tuple[tuple[bool, float], int]] = {}
    for suggestion in suggestions:
        if suggestion.confidence < min_confidence:
            continue
        slot = (suggestion.gap, suggestion.casing is not None)
        rank = (reference_first and suggestion.source is Source.REFERENCE, suggestion.confidence)
        if slot not in best or rank > best[slot][0]:
            best[slot] = (rank, suggestion.id)
    return sorted(sid for _, sid in best.values())


class Apply(enum.StrEnum):
    """How suggestions are settled without a person: every one, the confident ones, none, or by
    triage (where the reference and the model agree, or the model's surest meet the precision
    target; ``app.core.triage``)."""

    ALL = "all"
    CONFIDENT = "confident"
    NONE = "none"
    TRIAGE = "triage"


APPLY_CHOICES = tuple(Apply)
#: ``confident``'s bar unless another is given: a mark more likely right than wrong (confidences are
#: calibrated chances of being right), so a file nobody reviews gets its likeliest reading.
MORE_LIKELY_RIGHT = 0.5


@dataclass(frozen=True)
class ApplyPolicy:
    """Which suggestions are accepted without review (``accept_confident``)."""

    how: Apply = Apply.CONFIDENT
    #: ``confident``: the chance of being right each suggestion accepted needs.
    min_confidence: float = MORE_LIKELY_RIGHT
    #: ``triage``: the share of what the model alone settles that is expected right.
    precision_target: float = PRECISION_TARGET

    def __post_init__(self) -> None:
        if self.how not in APPLY_CHOICES:
            raise EditError(f"unknown apply policy {self.how!r}: use one of {', '.join(APPLY_CHOICES)}")
        object.__setattr__(self, "how", Apply(self.how))  # given as its name, kept as its kind
        if not 0.0 <= self.min_confidence <= 1.0:
            raise EditError("the minimum confidence must be between 0 and 1")
        if not 0.0 <= self.precision_target <= 1.0:
            raise EditError("the precision target must be between 0 and 1")


def has_reference(suggestions: Iterable[Suggestion], reference_given: bool) -> bool:
    """Whether a file is triaged as one with a reference transcript, where the model alone settles
    nothing (``triage.triage``): it was given one (``reference_given``: its reference path is set,
    even if the reference made no suggestion), or some of its suggestions are a reference's. The
    one answer for batch, the command line and the editor, so that none triages a file otherwise."""
    return reference_given or any(s.source is Source.REFERENCE for s in suggestions)


def accept_confident(
    suggestions: Iterable[Suggestion], policy: ApplyPolicy, reference_given: bool = False
) -> list[int]:
    """The one rule by which the command line, batch and the editor accept without review: per
    gap (a mark and a casing count apart), the surest pending suggestion at least as sure as the
    policy asks, the reference transcript's before the model's (a person wrote it). Triage treats
    the file as one with a reference as ``has_reference`` says (``reference_given``: whether the
    file was given one)."""
    if policy.how is Apply.NONE:
        return []
    if policy.how is Apply.TRIAGE:
        listed = list(suggestions)
        with_reference = has_reference(listed, reference_given)
        return sorted(
            triage(listed, TriagePolicy(precision_target=policy.precision_target), with_reference).accepted
        )
    threshold = 0.0 if policy.how is Apply.ALL else policy.min_confidence
    pending = (s for s in suggestions if s.status is Status.PENDING)
    return surest_per_gap(pending, threshold, reference_first=True)


def set_mark(document: Document, word_index: int, mark: str) -> Step:
    """The editor's own mark after a word; recorded as an accepted suggestion from the editor."""
    if any(char.isspace() for char in mark.strip(" ")) or any(c.isalnum() for c in mark):
        raise EditError(f"{mark!r} is not a punctuation mark")
    word = document.word(word_index)
    if same_mark(word.mark, mark):
        return Step("Set mark", ())
    suggestion = Suggestion(
        id=document.next_suggestion_id(),
        gap=word_index,
        mark=mark,
        confidence=1.0,
        source=Source.EDITOR,
        status=Status.ACCEPTED,
    )
    return Step(
        "Set mark",
        (
            WordEdit(word_index, word, replace(word, mark=written_with(word.mark, mark, document.language))),
            SuggestionEdit(suggestion.id, None, suggestion),
        ),
    )


def edit_word(document: Document, word_index: int, text: str) -> Step:
    """Correct a word's spelling; its mark, timing and styling stay."""
    if not text or any(char.isspace() for char in text):
        raise EditError("a word must be non-empty and have no spaces; edit one word at a time")
    word = document.word(word_index)
    if word.text == text:
        return Step("Edit word", ())
    return Step("Edit word", (WordEdit(word_index, word, replace(word, text=text)),))


def change_mark(document: Document, suggestion_id: int, mark: str) -> Step:
    """The editor puts another mark where a suggestion proposed one: the suggestion is turned down
    and the editor's mark written, as one step."""
    suggestion = document.suggestion(suggestion_id)
    if suggestion.casing is not None:
        raise EditError("a casing suggestion has no mark to change; accept or reject it")
    if mark == suggestion.mark:
        return Step("Change mark", accept(document, suggestion_id).edits)
    word = document.word(suggestion.gap)
    edits: list[Edit] = []
    if suggestion.status is not Status.REJECTED:
        edits.append(SuggestionEdit(suggestion.id, suggestion, replace(suggestion, status=Status.REJECTED)))
    edits.extend(set_mark(document, suggestion.gap, mark).edits)
    if same_mark(word.mark, mark) and not edits:
        return Step("Change mark", ())
    return Step(f"Change mark to {mark.strip() or 'none'}", _merged(edits))


_WORD_FIELDS = ("text", "mark", "prefix", "start", "end")


def recut(document: Document, times: Sequence[tuple[int, int] | None] | None = None) -> Step:
    """The cues cut again at sentence ends (``core.resegment``, by the words' ``times`` as heard,
    in ms, where known, within the style guides' limits) as one step; no edit when the cut would
    be the same. (Projects of earlier versions recorded a re-cut so.)"""
    return _cut_step(document, resegment(document, times or None).document.cues)


def recut_as(document: Document, cut: Sequence[CueCut]) -> Step:
    """The cues as ``cut`` records them (a re-cut as approved) as one step; an ``EditError`` when
    the cut does not fit the words (they changed since)."""
    try:
        cues = cut_as(document, cut)
    except RecordedCutError as error:
        raise EditError(f"the recorded re-cut does not fit the captions: {error}") from None
    return _cut_step(document, cues)


def _cut_step(document: Document, cues: Sequence[Cue]) -> Step:
    same = [_cut_of(cue) for cue in cues] == [_cut_of(cue) for cue in document.cues]
    return Step("Re-cut cues at sentence ends", () if same else (CueEdit(tuple(document.cues), tuple(cues)),))


def _cut_of(cue: Cue) -> tuple[object, ...]:
    return cue.start, cue.end, tuple(cue.words), tuple(cue.layout), cue.index


def _merged(edits: list[Edit]) -> tuple[Edit, ...]:
    """One edit per word and per suggestion: edits built from the same starting document (a
    word's mark and its casing accepted together) each change a different part, and all the parts
    must survive; a suggestion changed twice (reopened, then accepted) keeps its first ``before``
    and last ``after``. Edits that end where they began are dropped."""
    merged: dict[tuple[str, int], Edit] = {}  # in the order each word and suggestion came first
    for edit in edits:
        assert not isinstance(edit, CueEdit), "a re-cut is a step of its own, never merged"
        if isinstance(edit, SuggestionEdit):
            key = ("suggestion", edit.suggestion_id)
            earlier = merged.get(key)
            if isinstance(earlier, SuggestionEdit):
                edit = SuggestionEdit(edit.suggestion_id, earlier.before, edit.after)
        else:
            key = ("word", edit.index)
            earlier = merged.get(key)
            if isinstance(earlier, WordEdit):
                changed = {
                    name: getattr(edit.after, name)
                    for name in _WORD_FIELDS
                    if getattr(edit.after, name) != getattr(edit.before, name)
                }
                edit = WordEdit(edit.index, earlier.before, replace(earlier.after, **changed))
        merged[key] = edit
    return tuple(e for e in merged.values() if e.before != e.after)
