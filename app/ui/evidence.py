"""The evidence beside the gap under review: the words on both sides, what the reference and the
model proposed, and what the voice did there (the pause, the pitch over the last word)."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget

from app.core.gap_features import GapMeasure
from app.core.model import Source
from app.core.triage import ReviewRow
from app.services.learnt_capitals import CAPITALISED_KEY, LOWERED_KEY
from app.services.model import READERS_DISAGREE_CAP
from app.services.review import ReviewSession
from app.ui.models import proposal_text

CONTEXT_WORDS = 6  # words shown on each side of the gap
#: A movement this small over a word (semitones) is heard as level: about a semitone is the
#: smallest pitch step a listener reliably hears in speech.
LEVEL_PITCH = 1.0
#: A movement larger than this over one word (an octave) is the pitch tracker's error, not the
#: voice: it took a harmonic, or a frame of other sound, for the pitch (on the sample, "flat" reads
#: as 95 Hz falling to 92 Hz, then 361 Hz: "rising 30.0 semitones"). Such a word's pitch is unclear.
MAX_PITCH_CHANGE = 12.0


def pause_text(measure: GapMeasure | None) -> str:
    if measure is None or measure.pause_ms is None:
        return "not measured"
    return f"{measure.pause_ms} ms"


def pitch_text(measure: GapMeasure | None) -> str:
    """How the pitch moved over the word, in semitones: what an ear can judge."""
    if measure is None or measure.end_ms is None:
        return "not measured"
    change = measure.pitch_change
    if change is None:
        if measure.pitch_slope is None:
            return "too little voiced sound in the word to tell"
        # Measured by an earlier version, which kept only the slope.
        return "rising" if measure.pitch_slope > 0 else "falling"
    if abs(change) < LEVEL_PITCH:
        return f"level (within {LEVEL_PITCH:g} semitone)"
    if abs(change) > MAX_PITCH_CHANGE:
        jump = f"{abs(change):.0f} semitones"
        return f"pitch unclear (the tracker's reading jumps more than an octave, {jump})"
    return f"{'rising' if change > 0 else 'falling'} {abs(change):.1f} semitones over the word"


def _shown(mark: str) -> str:
    return mark.strip() or "no mark"


def heard_and_read(gap: ReviewRow) -> str:
    """What each reader chose where the recogniser listened, and how the model's suggestion came
    of the two: "heard , 0.91 / read . 0.55; combined: , 0.80 (...)"."""
    model = gap.by(Source.MODEL, pending=False)
    if model is None or not model.readings:
        return ""
    each = " / ".join(
        f"{name} {_shown(model.readings[name][0])} {model.readings[name][1]:.2f}"
        for name in ("heard", "read")
        if name in model.readings
    )
    how = (
        "each mark's chances from the two readers weighed together, then calibrated to the chance"
        " that it is right"
    )
    heard, read = model.readings.get("heard"), model.readings.get("read")
    if heard is not None and read is not None and heard[0] != read[0]:
        how += f"; as the readers disagree, held at {READERS_DISAGREE_CAP:.2f} or below, for a person"
        how += " to decide"
    return f"{each}; combined: {_shown(model.mark)} {model.confidence:.2f} ({how})"


def taught_text(gap: ReviewRow, word: str) -> str:
    """Why a capital is proposed where the person's answers taught it ("" where they did not)."""
    model = gap.by(Source.MODEL, pending=False)
    if model is None or CAPITALISED_KEY not in model.probabilities:
        return ""
    given = int(model.probabilities[CAPITALISED_KEY])
    kept = int(model.probabilities.get(LOWERED_KEY, 0))

    def times(count: int) -> str:
        return f"{count} time{'' if count == 1 else 's'}"

    return (
        f"in this project you gave “{word.lower()}” a capital {times(given)}, kept it lowercase {times(kept)}"
    )


def answers_text(session: ReviewSession, gap: ReviewRow) -> str:
    """What the project's answers said of suggestions like the model's at a gap, and whether the
    triage rule settled it ("settled by the triage rule at 0.98; in this project you kept 40 of 44
    full stops both readers chose"); "" where neither has anything to say."""
    model = gap.by(Source.MODEL, pending=False)
    if model is None:
        return ""
    said = [session.answers_like(model)]
    if model.id in session.settled_by_rule():
        said.insert(0, f"settled by the triage rule at {model.confidence:.2f}")
    return "; ".join(text for text in said if text)


def evidence_html(session: ReviewSession, gap: ReviewRow) -> str:
    document = session.document
    capital_row = not gap.marks
    # A capital on its own is about the word itself; a mark about the gap after it.
    last = gap.index - 1 if capital_row else gap.index
    before = [document.word(i).rendered() for i in range(max(0, last - CONTEXT_WORDS + 1), last + 1)]
    after = [
        document.word(i).rendered()
        for i in range(last + 1, min(document.word_count, last + 1 + CONTEXT_WORDS))
    ]
    measure = session.gap_measure(gap.index) if not capital_row else None
    reference = proposal_text(gap, Source.REFERENCE) or (
        "no mark here" if session.has_reference else "no reference"
    )
    model = proposal_text(gap, Source.MODEL) or "no proposal"
    rows = [
        ("Words", f"{html.escape(' '.join(before))} <b>‖</b> {html.escape(' '.join(after))}"),
        ("Reference", html.escape(reference)),
        ("Model", html.escape(model)),
    ]
    readings = heard_and_read(gap)
    if readings:
        rows.append(("Readers", html.escape(readings)))
    if capital_row and (taught := taught_text(gap, document.word(gap.index).text)):
        rows.append(("Your answers", html.escape(taught)))
    if not capital_row and (answered := answers_text(session, gap)):
        rows.append(("Your answers", html.escape(answered)))
    if not capital_row:
        word = html.escape(document.word(gap.index).text)
        rows += [("Pause", pause_text(measure)), (f"Pitch over “{word}”", pitch_text(measure))]
    if gap.disagreement:
        rows.append(("", "<span style='color:#a33'>The reference and the model disagree</span>"))
    cells = "".join(f"<tr><td><b>{name}</b>&nbsp;</td><td>{value}</td></tr>" for name, value in rows)
    return f"<table>{cells}</table><p style='color:#666'>P plays the 3 seconds around the gap</p>"


class EvidencePanel(QLabel):
    """What is known about the selected gap, in a person's units."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("evidencePanel")
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.setMargin(6)
        self.show_gap(None, None)

    def show_gap(self, session: ReviewSession | None, gap: ReviewRow | None) -> None:
        if session is None or gap is None:
            self.setText("<p style='color:#666'>Select a gap to see its evidence.</p>")
            return
        self.setText(evidence_html(session, gap))
