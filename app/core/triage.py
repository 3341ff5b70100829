"""Review by exception: the suggestions of a file as one row per gap, and the one rule that
settles some gaps by itself and queues the rest for a person.

A *gap* is the place after a word. Its candidates are the marks proposed for it (by the reference
transcript, the model or the editor); a capital the reference proposes for the next word goes
with the sentence mark that causes it. A capital proposed on its own (a name) is a gap of its own,
at the word it capitalises.

Where the reference and the model propose the same mark, they agree, and the gap settles itself.
Where only the model speaks (no reference for the file), the surest of its suggestions settle, as
many as keep the expected share right of those settled at the policy's precision target; a
suggestion's confidence is the calibrated probability that it is right (``app.ml.confidence``:
what both of the model's readers said, whether they agree, the mark, the pause). Everything else
goes to a person: disagreements first, then the least sure first. Batch, the command line and the
editor all use this rule.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from app.core.history import Decider, History
from app.core.marks import SENTENCE_END_CLASSES, model_class
from app.core.model import Document, Source, Status, Suggestion


@dataclass(frozen=True)
class ReviewRow:
    """One row of review: the gap after word ``index`` and what was proposed for it."""

    index: int
    marks: tuple[Suggestion, ...] = ()
    #: Capitals of the next word that the sentence marks here call for (or, when ``marks`` is
    #: empty, a capital proposed on its own for word ``index``).
    capitals: tuple[Suggestion, ...] = ()

    @property
    def suggestions(self) -> tuple[Suggestion, ...]:
        return self.marks + self.capitals

    @property
    def pending(self) -> bool:
        return any(s.status is Status.PENDING for s in self.suggestions)

    def by(self, source: Source, pending: bool = True) -> Suggestion | None:
        """The surest candidate of ``source`` (marks first; capitals for a capital row), among the
        pending ones or, with ``pending`` False, whatever has been decided since."""
        own = [
            s
            for s in (self.marks or self.capitals)
            if s.source is source and (not pending or s.status is Status.PENDING)
        ]
        return max(own, key=lambda s: s.confidence, default=None)

    def _disagree(self, pending: bool) -> bool:
        reference, model = self.by(Source.REFERENCE, pending), self.by(Source.MODEL, pending)
        return reference is not None and model is not None and not _same(reference, model)

    @property
    def disagreement(self) -> bool:
        """The reference and the model both proposed something here, and not the same thing."""
        return self._disagree(pending=True)

    @property
    def confidence(self) -> float:
        """How sure the surest pending candidate is."""
        return max((s.confidence for s in self.suggestions if s.status is Status.PENDING), default=1.0)

    @property
    def lead(self) -> Suggestion:
        """The candidate a person's "accept" takes: the reference's (a person wrote it), else the
        surest; pending ones before decided ones."""
        candidates = self.marks or self.capitals
        return max(
            candidates,
            key=lambda s: (s.status is Status.PENDING, s.source is Source.REFERENCE, s.confidence, -s.id),
        )

    @property
    def queue_key(self) -> tuple[bool, float, int]:
        """Where the gap stands in the review queue, whatever has been decided since: disagreements
        first, then the least sure first (over every candidate the reference and model made)."""
        disagree = self._disagree(pending=False)
        confidence = max(
            (s.confidence for s in self.suggestions if s.source is not Source.EDITOR), default=1.0
        )
        return (not disagree, confidence, self.index)


def _same(one: Suggestion, other: Suggestion) -> bool:
    if one.casing is not None or other.casing is not None:
        return one.casing == other.casing
    return model_class(one.mark) == model_class(other.mark)


def gaps_of(suggestions: Iterable[Suggestion]) -> list[ReviewRow]:
    """The suggestions grouped into review rows, in document order."""
    marks: dict[int, list[Suggestion]] = {}
    capitals: dict[int, list[Suggestion]] = {}  # by the word they capitalise
    for suggestion in suggestions:
        (marks if suggestion.casing is None else capitals).setdefault(suggestion.gap, []).append(suggestion)
    rows: dict[int, ReviewRow] = {}
    for index, proposed in marks.items():
        ends_sentence = any(model_class(s.mark) in SENTENCE_END_CLASSES for s in proposed)
        following = capitals.pop(index + 1, []) if ends_sentence else []
        rows[index] = ReviewRow(index, tuple(proposed), tuple(following))
    for word, proposed in capitals.items():
        # A capital on its own shares the row key space with gaps: keep both when they collide.
        key = word if word not in rows else -word - 1
        rows[key] = ReviewRow(word, (), tuple(proposed))
    return [rows[key] for key in sorted(rows, key=lambda k: (rows[k].index, k < 0))]


#: The precision target: of what the model settles alone, about 3 in 100 may be wrong
#: (``tests/benchmarks/bench_confidence.py``).
PRECISION_TARGET = 0.97
#: The targets a person may choose (the triage policy dialog, ``--min-confidence``).
TARGET_RANGE = (0.90, 0.99)
#: How often a gap settled by agreement (the reference and the model propose the same mark) is
#: right: 97.3% of 2,175 gaps on IWSLT2011 test2011asr with its reference transcript
#: (``tests.benchmarks.review_effort``; the README's review-effort table).
AGREEMENT_PRECISION = 0.973


def about_wrong(suggestions: Iterable[Suggestion], accepted: Iterable[int]) -> float:
    """How many of the gaps settled by the ``accepted`` suggestions may be wrong: for a mark the
    model settled alone, its chance of being wrong; for a gap where the reference's accepted mark
    is the model's too, the measured share of agreements that are wrong (``AGREEMENT_PRECISION``).
    A capital settled with its sentence mark counts with it. No rate was measured for a capital
    settled on its own (a name) nor for a reference's mark the model does not propose (accepted by
    a person, or by ``--apply all``): they count nothing."""
    chosen = set(accepted)
    marks = [s for s in suggestions if s.casing is None]
    by_reference = {s.gap: s for s in marks if s.id in chosen and s.source is Source.REFERENCE}
    alone = sum(
        1 - s.confidence
        for s in marks
        if s.id in chosen and s.source is Source.MODEL and s.gap not in by_reference
    )
    agreed = {
        s.gap
        for s in marks
        if s.source is Source.MODEL and s.gap in by_reference and _same(by_reference[s.gap], s)
    }
    return alone + len(agreed) * (1 - AGREEMENT_PRECISION)


def gaps_settled(suggestions: Iterable[Suggestion], accepted: Iterable[int]) -> int:
    """How many gaps (places in the text, as ``gaps_of`` makes the rows) the ``accepted``
    suggestions settle: a gap's mark, the model's mark agreeing with it and the capital its
    sentence mark calls for count once (``punctum batch`` and ``status`` count these)."""
    chosen = set(accepted)
    return len(gaps_of(s for s in suggestions if s.id in chosen))


def last_by_rule(history: History) -> dict[int, bool]:
    """Per suggestion id: whether the last step in effect that changed it was the rule's."""
    return {suggestion_id: step.by is Decider.RULE for suggestion_id, step in history.last_changes().items()}


def settled_by_rule(document: Document, history: History, last: dict[int, bool] | None = None) -> set[int]:
    """Suggestions the triage rule accepted that still stand: not undone, and on a gap no person
    has touched since (a person's decision there is theirs, whatever the rule did). ``last``:
    ``last_by_rule(history)`` when the caller has it."""
    last_by_rule_ = last_by_rule(history) if last is None else last
    touched = {
        (s.gap, s.casing is not None)
        for s in document.suggestions
        if s.source is Source.EDITOR or last_by_rule_.get(s.id) is False
    }
    return {
        s.id
        for s in document.suggestions
        if last_by_rule_.get(s.id)
        and s.status is Status.ACCEPTED
        and (s.gap, s.casing is not None) not in touched
    }


@dataclass(frozen=True)
class TriagePolicy:
    """Which gaps settle by themselves. ``agreement``: where the reference and the model propose
    the same; ``precision_target``: the share of the model's own settled
    suggestions (no reference) expected right (None: the model alone settles nothing)."""

    agreement: bool = True
    precision_target: float | None = PRECISION_TARGET

    def __post_init__(self) -> None:
        if self.precision_target is not None and not 0.0 <= self.precision_target <= 1.0:
            raise ValueError("the precision target must be between 0 and 1")


@dataclass
class Triage:
    """What the rule did with a file: the suggestions it accepts, and the gaps left to a person
    in the order to review them."""

    accepted: list[int] = field(default_factory=list)
    queue: list[ReviewRow] = field(default_factory=list)


def triage(suggestions: Sequence[Suggestion], policy: TriagePolicy, has_reference: bool) -> Triage:
    """Settle what ``policy`` allows; queue the rest, disagreements first, then least sure first.

    Where the reference and the model agree, the gap settles. Of the gaps only the model speaks for
    (a file without a reference), the surest settle first, as many as keep the expected share right
    of those settled at or above the policy's target: with a target of 0.97, about 3 in 100 of
    them may be wrong (``about_wrong`` says how many). ``has_reference``: whether the file had a
    reference transcript; then a proposal of the model alone is one the reference does not make,
    which is a disagreement for a person to settle.
    """
    result = Triage()
    settled: list[tuple[ReviewRow, Suggestion]] = []
    alone: list[tuple[ReviewRow, Suggestion]] = []
    for gap in gaps_of(suggestions):
        if not gap.pending:
            continue
        reference, model = gap.by(Source.REFERENCE), gap.by(Source.MODEL)
        if reference is not None and model is not None and policy.agreement and _same(reference, model):
            settled.append((gap, reference))
        elif (
            reference is None
            and model is not None
            and not has_reference
            and policy.precision_target is not None
        ):
            alone.append((gap, model))
        else:
            result.queue.append(gap)
    alone.sort(key=lambda pair: -pair[1].confidence)
    target = policy.precision_target
    taken = surest_within([s.confidence for _, s in alone], target) if target is not None else 0
    settled += alone[:taken]
    result.queue += [gap for gap, _ in alone[taken:]]
    for gap, chosen in sorted(settled, key=lambda pair: pair[0].index):
        result.accepted.append(chosen.id)
        if gap.marks and model_class(chosen.mark) in SENTENCE_END_CLASSES:
            # The capital its sentence mark calls for comes with it: one per word, the
            # reference's before the model's; never with a mark that ends no sentence.
            pending = [s for s in gap.capitals if s.status is Status.PENDING]
            if pending:
                surest = max(pending, key=lambda s: (s.source is Source.REFERENCE, s.confidence))
                result.accepted.append(surest.id)
    result.queue.sort(key=lambda g: g.queue_key)
    return result


def surest_within(confidences: Sequence[float], target: float) -> int:
    """How many of ``confidences`` (surest first) settle with their mean (the expected share right,
    the confidence being calibrated) at or above ``target``."""
    totals = enumerate(itertools.accumulate(confidences), 1)
    return max((count for count, total in totals if total / count >= target), default=0)


def proposed_gaps(suggestions: Iterable[Suggestion]) -> list[ReviewRow]:
    """The gaps with a candidate from the reference or the model, in reading order (a mark the
    editor set on their own is no row of review)."""
    return [g for g in gaps_of(suggestions) if any(s.source is not Source.EDITOR for s in g.suggestions)]


def review_queue(suggestions: Sequence[Suggestion], settled_by_rule: set[int]) -> list[ReviewRow]:
    """The gaps a person goes through, in queue order: every gap with a proposal, except those a
    rule settled (``settled_by_rule``: ids it accepted that still stand). Gaps decided already stay
    in it, so that a person can step back to them."""
    rows = [g for g in proposed_gaps(suggestions) if not any(s.id in settled_by_rule for s in g.suggestions)]
    return sorted(rows, key=lambda g: g.queue_key)


def gaps_to_review(suggestions: Iterable[Suggestion]) -> int:
    """How many rows of review are still open: gaps (not suggestions) with a pending candidate."""
    return sum(gap.pending for gap in gaps_of(suggestions))
