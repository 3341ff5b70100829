"""What the editor says about triage and the review, in one unit: gaps (places in the text).

The status line after triage, the heading over the review list and the counts under it say the
numbers ``punctum status`` and ``punctum batch`` say: the gaps still to review
(``triage.gaps_to_review``), the gaps the triage rule settled that still stand
(``triage.gaps_settled``) and about how many of those may be wrong (``triage.about_wrong``);
besides, the gaps a person decided. The list of what triage settled (S) is ordered by, and says,
how sure each of its gaps is and why it settled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from app.core.history import Decider, Step, SuggestionEdit
from app.core.model import Source, Suggestion
from app.core.triage import AGREEMENT_PRECISION, ReviewRow, TriagePolicy, about_wrong, gaps_of, gaps_settled

if TYPE_CHECKING:
    from PySide6.QtWidgets import QLabel

    from app.services.review import ReviewSession


def gaps(count: int) -> str:
    """ "1 gap", "12 gaps"."""
    return f"{count} gap" if count == 1 else f"{count} gaps"


@dataclass(frozen=True)
class GapCounts:
    """Where the review of a file stands, in gaps."""

    to_review: int
    settled: int  # by the triage rule, still standing
    may_be_wrong: float  # about how many of the settled ones
    decided: int  # by a person
    #: Where nothing stands settled: why, and what it would take.
    why_none: str = ""

    @property
    def wrong(self) -> str:
        return f"{self.may_be_wrong:.0f}"


def gap_counts(session: ReviewSession, settled: set[int] | None = None) -> GapCounts:
    """The counts of ``session``; ``settled``: ``session.settled_by_rule()`` when the caller has it.
    The file's gaps are grouped once (on a long call, every decision counts them again): those to
    review are ``triage.gaps_to_review``'s; those decided, the gaps whose mark a person decided
    (what the house style learns from, as ``punctum status`` counts them)."""
    suggestions = session.document.suggestions
    standing = session.settled_by_rule() if settled is None else settled
    rows = gaps_of(suggestions)
    count = gaps_settled(suggestions, standing)
    return GapCounts(
        sum(gap.pending for gap in rows),
        count,
        about_wrong(suggestions, standing),
        session.decided_by_you(),
        "" if count else why_none_settled(session),
    )


def why_none_settled(session: ReviewSession) -> str:
    """Why the rule settled nothing in the file, and what would let it."""
    policy = session.policy or TriagePolicy()
    told = []
    if policy.precision_target is None:
        told.append("the policy lets the model settle nothing alone")
    else:
        surest = max(
            (
                s.confidence
                for s in session.document.suggestions
                if s.source is Source.MODEL and s.casing is None
            ),
            default=None,
        )
        told.append(
            f"the model settles alone only what it expects {policy.precision_target:.0%} right"
            + (f", and its surest mark here is {surest:.2f}" if surest is not None else "")
        )
    if policy.agreement:
        told.append(
            "where a reference transcript agrees with the model it settles too (File ▸ Open reference)"
            if not session.has_reference
            else "the reference and the model agree on no gap left"
        )
    return "; ".join(told)


def counts_text(counts: GapCounts) -> str:
    """The line under the list's heading, there all the time."""
    return (
        f"{gaps(counts.to_review)} to review · {counts.settled} settled by triage (about"
        f" {counts.wrong} may be wrong) · {counts.decided} decided by you"
    )


def triage_text(counts: GapCounts) -> str:
    """What the status line says when triage has settled a file."""
    return (
        f"Triage settled {gaps(counts.settled)} by itself, about {counts.wrong} of them may be wrong;"
        f" {gaps(counts.to_review)} left to you"
    )


def settled_heading(counts: GapCounts) -> str:
    if not counts.settled and counts.why_none:
        return f"Settled by triage: no gap, as {counts.why_none}."
    return (
        f"Settled by triage: {gaps(counts.settled)}, about {counts.wrong} of them may be wrong; the"
        " least sure first. X takes a wrong one back."
    )


def list_heading(counts: GapCounts, queue_only: bool, lowest_first: bool, settled_only: bool) -> str:
    """What the review list holds and in which order, over it while it holds that."""
    if settled_only:
        return settled_heading(counts)
    order = "the least sure first" if lowest_first else None
    if queue_only:
        return f"The queue, the gaps left to you: {order or 'disagreements first, then the least sure'}"
    return f"Every gap: {order or 'in reading order'}"


class ReviewList(Protocol):
    """What the review list shows (``models.GapModel``)."""

    queue_only: bool
    lowest_first: bool
    settled_only: bool
    settled: set[int]


def show_counts(
    heading: QLabel, label: QLabel, session: ReviewSession | None, model: ReviewList | None
) -> None:
    """The list's heading and the counts under it, as the file stands now."""
    if session is None or model is None:
        heading.setText("")
        label.setText("")
        return
    counts = gap_counts(session, model.settled)
    heading.setText(list_heading(counts, model.queue_only, model.lowest_first, model.settled_only))
    label.setText(counts_text(counts))


# --- the list of what triage settled ------------------------------------------------------------


def _settled_lead(gap: ReviewRow, settled: set[int]) -> Suggestion | None:
    """The candidate the rule accepted for the gap: its mark (a capital on a capital's own row),
    the reference's before the model's."""
    own = [s for s in gap.marks or gap.capitals if s.id in settled] or [
        s for s in gap.suggestions if s.id in settled
    ]
    return max(own, key=lambda s: s.source is Source.REFERENCE, default=None)


def settled_sureness(gap: ReviewRow, settled: set[int]) -> float:
    """How sure a settled gap is, as its Model column shows it: the model's confidence in its mark
    (in its capital, on a capital's row); the accepted candidate's where the model proposed none."""
    model = gap.by(Source.MODEL, pending=False)
    if model is not None:
        return model.confidence
    lead = _settled_lead(gap, settled)
    return lead.confidence if lead is not None else 1.0


def settled_reason(gap: ReviewRow, settled: set[int]) -> tuple[str, str]:
    """Why the rule settled the gap: a few words for the list, and a sentence for its tooltip."""
    lead = _settled_lead(gap, settled)
    if lead is None:
        return "", ""
    if lead.source is Source.REFERENCE:
        return (
            "reference and model agree",
            "The reference and the model propose the same here; such agreements are right"
            f" {AGREEMENT_PRECISION:.1%} of the time",
        )
    return (
        f"model alone, {lead.confidence:.2f} sure",
        f"No reference speaks here: the model is {lead.confidence:.2f} sure (the calibrated chance that"
        " it is right), among its surest that together keep the triage target",
    )


def rereading_told(done: Sequence[Step], session: ReviewSession, current: int | None) -> str:
    """What the house style's re-reading among the steps just ``done`` changed, to say in the
    status bar ("" when it changed no proposal): proposals added (and how many of them above the
    ``current`` suggestion's gap, where the person has been), taken away, given another mark, and
    confidences moved; all one Ctrl+Z away with the answer."""
    added = above = dropped = remarked = moved = 0
    try:
        here = session.document.suggestion(current).gap if current is not None else None
    except KeyError:
        here = None
    for step in done:
        if step.by is not Decider.RULE or not step.joins_previous:
            continue  # the re-reading joins the person's answer it follows
        for edit in step.edits:
            if not isinstance(edit, SuggestionEdit):
                continue
            if edit.before is None:
                added += 1
                above += here is not None and edit.after is not None and edit.after.gap < here
            elif edit.after is None:
                dropped += 1
            elif edit.after.mark != edit.before.mark:
                remarked += 1
            elif edit.after.confidence != edit.before.confidence:
                moved += 1
    parts = []
    if added:
        parts.append(f"{added} new {_proposals(added)}" + (f" ({above} above this gap)" if above else ""))
    if dropped:
        parts.append(f"{dropped} taken away")
    if remarked:
        parts.append(f"{remarked} now another mark")
    if moved:
        parts.append(f"{moved} surer or less sure")
    if not parts:
        return ""
    return "Read again with the house style: " + ", ".join(parts) + " (Ctrl+Z takes it back with your answer)"


def _proposals(count: int) -> str:
    return "proposal" if count == 1 else "proposals"


def steps_between(before: tuple[Step, ...], after: tuple[Step, ...]) -> list[Step]:
    """The steps done since ``before`` (a decision, a redo) or undone since (an undo): those in one
    of the two histories and not in the other."""
    then, now = {id(step) for step in before}, {id(step) for step in after}
    return [step for step in after if id(step) not in then] + [step for step in before if id(step) not in now]


def style_told(now: tuple[list[str], str] | None, decided: int) -> str:
    """What Review ▸ What the house style has learnt says: the style's summary, every lesson, and
    the gaps of this file decided by you (``now``: its lessons and summary; None where the file's
    decisions teach none)."""
    if now is None:
        return "This file's decisions do not teach a house style (or the project's cannot be read)."
    learnt, summary = now
    lines = [summary[:1].upper() + summary[1:] + ".", *(f"• {lesson}" for lesson in learnt)]
    return "\n".join([*lines, f"In this file, {gaps(decided)} decided by you."])
