"""A house style learnt from a person's decisions: a small adjustment on top of the model's reading.

Every gap a person decided is an example: what the readers said there (``GapReading``), the word
after it, and the class of mark the person left. Three parts are fitted from them, each with a
Gaussian prior that keeps it at its starting point (the model's own, or a style file's) until the
decisions say otherwise: a handful of decisions moves it a little, fifty move it clearly.

- **Whether a mark goes**: the chance of some mark at a gap, ``sigmoid(bias + scale * logit(1 -
  p_none) + word)``, where ``p_none`` is the combined reading's chance of none and ``word`` a bias for
  the word after the gap ("more marks before 'so'"). The model's own is bias 0, scale 1, no words.
  It is fitted apart where the model proposes a mark (the queue) and where it proposes none (only a
  person's own marks, and their answers on added ones, speak of those gaps).
- **Which mark**: among the marks, a bias per class on the log of the combined reading ("fewer
  commas where a mark goes").
- **How sure a proposal is**: the shipped calibration (``app.ml.confidence``) of what the readers
  said, its logit shifted per class and by whether the two readers agree (``CALIBRATION_INPUTS``),
  fitted on whether the person kept what would be proposed; a shift that raises a confidence is
  taken only as far as its posterior makes it certain (``CAUTION``).

The two readers' chance of a mark is fitted apart from which mark, because a person who turns a
comma down says no mark goes there, not that a full stop does; and because a queue of unsure gaps
is not the file: a single bias on every class would carry what the queue taught to gaps it never
saw. Fitting is a few Newton steps on at most a few thousand examples: milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from app.core.errors import PunctumError
from app.core.gap_readings import GapReading
from app.core.marks import MODEL_MARKS
from app.ml.confidence import (
    LOGIT_EDGE,
    READERS_DISAGREE_CAP,
    Confidence,
    logit,
    mark_inputs,
    readers_agree,
    readers_disagree,
    shipped_confidence,
    sigmoid,
)

CLASSES = len(MODEL_MARKS)
#: What a style's calibration shift reads of a proposal: its class, whether the recogniser heard
#: the gap and both readers chose this mark (or not), and the calibrated logit itself (a scale).
CALIBRATION_INPUTS = (
    "class_,",
    "class_.",
    "class_?",
    "class_other",
    "readers_agree",
    "readers_disagree",
    "logit",
)
#: Standard deviations of the calibration shift's posterior taken off a shift that raises a
#: confidence.
CAUTION = 1.0
#: A mark the model proposes is taken away only where the style makes no mark this likely: a
#: person who would have kept it is then left with a wrong gap, so it must be rare.
DROP_AT = 0.7
#: A mark the model does not propose is proposed only where the style makes it the likeliest
#: class and no mark at most this likely: each costs a person a decision.
ADD_AT = 0.5
#: What the style has learnt is said in words (``describe``) from this many decisions on, one
#: lesson for every ``DECISIONS_PER_LESSON`` of them: the style moves the proposals from the first
#: decision, but a lesson said after four answers says more than four answers show.
LESSONS_FROM = 5
DECISIONS_PER_LESSON = 3
NAMES = {1: "commas", 2: "full stops", 3: "question marks", 4: "exclamation marks", 5: "colons"}


class StyleError(PunctumError):
    pass


@dataclass(frozen=True)
class StyleExample:
    """One decided gap: what was read there, the word after it as the model reads it ("" at the
    end), the class of mark the captions had, the class the person left, and the class of the
    model's suggestion put to the person there (None where none was)."""

    reading: GapReading
    next_word: str
    original: int
    chosen: int
    language: str | None = None
    shown: int | None = None


@dataclass(frozen=True)
class Proposal:
    """What a gap is proposed under a style: the class, its chance of being right and the
    distribution after the style."""

    mark: int
    confidence: float
    distribution: tuple[float, ...]


def mark_logits(combined: np.ndarray) -> np.ndarray:
    """Per row, the logit of the model's chance that some mark goes there."""
    none = np.clip(combined[:, 0], LOGIT_EDGE, 1 - LOGIT_EDGE)
    return np.log((1 - none) / none)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class HouseStyle:
    """Whether a mark goes (``mark_bias``, ``mark_scale``, ``word_bias`` by the next word), which
    mark (``class_bias``, index 0 unused) and the calibration shift (``CALIBRATION_INPUTS``, with
    its posterior covariance row by row); ``decisions``: how many decided gaps it was fitted on,
    beside those of the style it started from (``inherited``)."""

    mark_bias: float = 0.0
    mark_scale: float = 1.0
    word_bias: dict[str, float] = field(default_factory=dict, hash=False, compare=True)
    class_bias: tuple[float, ...] = (0.0,) * CLASSES
    calibration: tuple[float, ...] = (0.0,) * len(CALIBRATION_INPUTS)
    calibration_spread: tuple[float, ...] = ()
    decisions: int = 0
    inherited: int = 0
    #: Whether a mark goes where the model proposes none: the same three, fitted only on the gaps
    #: there a person decided (a mark put in, an added one kept or turned down). The queue is made
    #: of proposed gaps, so what a person says of those says nothing of the others: agreeing with
    #: the model's proposals must not make it propose a mark at every gap.
    add_bias: float = 0.0
    add_scale: float = 1.0
    add_word_bias: dict[str, float] = field(default_factory=dict, hash=False, compare=True)

    @property
    def neutral(self) -> bool:
        """Whether it changes nothing the model proposes or how sure it is."""
        return (
            not self.mark_bias
            and self.mark_scale == 1.0
            and not any(self.word_bias.values())
            and not self.add_bias
            and self.add_scale == 1.0
            and not any(self.add_word_bias.values())
            and not any(self.class_bias)
            and not any(self.calibration)
        )

    # --- reading gaps -------------------------------------------------------------------------

    def distributions(
        self, readings: Sequence[GapReading], next_words: Sequence[str], combined: np.ndarray | None = None
    ) -> np.ndarray:
        """The combined distributions (one row a gap) as the style reads them (``combined``: the
        readings' combined distributions as a matrix, when the caller has made it)."""
        if combined is None:
            combined = _combined(readings)
        if self.neutral:
            return combined
        proposed = combined.argmax(axis=1) != 0
        logits = mark_logits(combined)
        score = np.where(
            proposed, self.mark_bias + self.mark_scale * logits, self.add_bias + self.add_scale * logits
        )
        if self.word_bias or self.add_word_bias:
            score += np.array(
                [
                    (self.word_bias if here else self.add_word_bias).get(word, 0.0)
                    for word, here in zip(next_words, proposed, strict=True)
                ]
            )
        some_mark = 1 / (1 + np.exp(-np.clip(score, -40, 40)))
        marks = np.log(np.clip(combined[:, 1:], 1e-9, 1.0)) + np.array(self.class_bias[1:])
        marks = np.exp(marks - marks.max(axis=1, keepdims=True))
        marks /= marks.sum(axis=1, keepdims=True)
        return np.column_stack([1 - some_mark, marks * some_mark[:, None]])

    def proposals(
        self,
        readings: Sequence[GapReading],
        next_words: Sequence[str],
        originals: Sequence[int],
        language: str | None,
        confidence: Confidence | None = None,
    ) -> list[Proposal | None]:
        """What each gap is proposed under this style (None where what the captions have stands).

        Where the model proposes a mark, the style's likeliest mark is proposed, unless the style
        makes no mark at all ``DROP_AT`` likely; where the model proposes none, a mark is proposed
        when the style makes one the likeliest class. The model's own style proposes what the
        model does. How sure a proposal is comes from the readers as they read, moved by the
        style's calibration alone."""
        if not readings:
            return []
        combined = _combined(readings)
        weights = self.distributions(readings, next_words, combined)
        model_best = combined.argmax(axis=1)
        best_mark = weights[:, 1:].argmax(axis=1) + 1
        keep = weights[:, 0] < DROP_AT
        add = (weights.argmax(axis=1) != 0) & (weights[:, 0] <= ADD_AT)
        best = np.where(model_best != 0, np.where(keep, best_mark, 0), np.where(add, best_mark, 0))
        calibration = confidence or shipped_confidence()
        marks = model_best if self.neutral else best
        proposed = np.flatnonzero(marks != np.asarray(originals)).tolist()
        chosen = marks[proposed].tolist()
        sure = self._sure(chosen, [readings[row] for row in proposed], language, calibration)
        shown = [readings[row].combined for row in proposed] if self.neutral else weights[proposed].tolist()
        found: list[Proposal | None] = [None] * len(readings)
        for row, mark, chance, distribution in zip(proposed, chosen, sure, shown, strict=True):
            found[row] = Proposal(mark, chance, tuple(distribution))
        return found

    def _sure(
        self,
        best: Sequence[int],
        readings: Sequence[GapReading],
        language: str | None,
        confidence: Confidence,
    ) -> list[float]:
        """The chance each proposal of class ``best[i]`` at a gap read ``readings[i]`` is right:
        the shipped calibration of what the readers said, shifted by the style's calibration."""
        read = [
            _read_once(mark, reading, language, confidence)
            for mark, reading in zip(best, readings, strict=True)
        ]
        sure = [once.sure for once in read]
        raised = [False] * len(read)
        if any(self.calibration) and sure:
            inputs = np.array([once.inputs for once in read])
            shift = inputs @ np.array(self.calibration)
            if self.calibration_spread:
                # Raised only by what the decisions make certain: the shift less one standard
                # deviation of its posterior, so that thin evidence never lifts a mark over a target.
                width = inputs.shape[1]
                spread = np.array(self.calibration_spread).reshape(width, width)
                deviation = np.sqrt(np.maximum(0.0, np.einsum("ij,jk,ik->i", inputs, spread, inputs)))
                shift = np.where(shift > 0, np.maximum(0.0, shift - CAUTION * deviation), shift)
            sure = [sigmoid(float(x)) for x in inputs[:, -1] + shift]
            raised = (shift > 0).tolist()
        # Where the readers disagree the shipped calibration over-promises (``READERS_DISAGREE_CAP``),
        # unless this project's decisions, taken as cautiously as above, say such marks hold.
        return [
            min(p, READERS_DISAGREE_CAP) if once.disagree and not up else p
            for p, once, up in zip(sure, read, raised, strict=True)
        ]

    # --- what it has learnt --------------------------------------------------------------------

    def describe(self) -> list[str]:
        """What the style has learnt, in words, largest first ("fewer of the model's marks", "more
        marks before 'so'"); empty when it has learnt nothing to speak of."""
        said: list[tuple[float, str]] = []
        if self.mark_bias <= -0.4:  # a raise keeps what the model proposes, which shows nothing
            said.append((-self.mark_bias, "fewer of the model's marks"))
        if abs(self.add_bias) >= 0.4:
            said.append((abs(self.add_bias), f"{_more(self.add_bias)} marks where the model proposes none"))
        for k in range(1, CLASSES):
            if abs(self.class_bias[k]) >= 0.4:
                said.append(
                    (abs(self.class_bias[k]), f"{_more(self.class_bias[k])} {NAMES[k]} where a mark goes")
                )
        for word, bias in {**self.add_word_bias, **self.word_bias}.items():
            if abs(bias) >= 0.5:
                said.append((abs(bias), f"{_more(bias)} marks before '{word}'" if word else ""))
        for position, name in enumerate(("commas", "full stops", "question marks")):
            shift = self.calibration[position]
            if abs(shift) >= 0.4:
                said.append((abs(shift), f"{'surer' if shift > 0 else 'less sure'} of the model's {name}"))
        # Said once the decisions bear it out: nothing before ``LESSONS_FROM`` of them, and at most
        # one lesson for every ``DECISIONS_PER_LESSON`` (four lessons from four answers say more
        # than the answers do).
        count = self.decisions + self.inherited
        told = 0 if count < LESSONS_FROM else count // DECISIONS_PER_LESSON
        return [text for _, text in sorted(said, key=lambda pair: -pair[0]) if text][:told]

    def summary(self) -> str:
        """One line: how many decisions it rests on and what it has learnt."""
        count = self.decisions + self.inherited
        if not count:
            return "house style: nothing learnt yet (no decisions)"
        learnt = self.describe()
        noun = "decision" if count == 1 else "decisions"
        inherited = f" ({self.inherited} from a style file)" if self.inherited else ""
        if count < LESSONS_FROM:
            return f"house style from {count} {noun}{inherited}: too few yet to say what it has learnt"
        return f"house style from {count} {noun}{inherited}: " + (
            "; ".join(learnt[:4]) if learnt else "the model's default so far"
        )


#: How the readers stood on a suggestion, as the person is told it ("full stops both readers chose").
READER_KINDS = {
    "agree": "both readers chose",
    "disagree": "the two readers disagreed on",
    "heard": "heard against both readers",
    "text": "read from the text alone",
}


def reader_kind(mark: int, reading: GapReading) -> str:
    """``READER_KINDS``' key of a suggestion of class ``mark`` at a gap read so."""
    if reading.heard is None:
        return "text"
    if readers_agree(mark, reading.read, reading.heard):
        return "agree"
    return "disagree" if readers_disagree(reading.read, reading.heard) else "heard"


def answer_tally(examples: Sequence[StyleExample]) -> dict[tuple[int, str], tuple[int, int]]:
    """By the class of the suggestion put to the person and how its readers stood
    (``reader_kind``): how many such suggestions the person kept, of how many answered."""
    tally: dict[tuple[int, str], tuple[int, int]] = {}
    for example in examples:
        if example.shown is None:
            continue
        key = (example.shown, reader_kind(example.shown, example.reading))
        kept, answered = tally.get(key, (0, 0))
        tally[key] = (kept + (example.chosen == example.shown), answered + 1)
    return tally


def tally_text(mark: int, kind: str, tally: dict[tuple[int, str], tuple[int, int]]) -> str:
    """ "you kept 40 of 44 full stops both readers chose" ("" before any such answer)."""
    kept, answered = tally.get((mark, kind), (0, 0))
    if not answered:
        return ""
    name = NAMES.get(mark, "suggestions to take a mark out")
    return f"in this project you kept {kept} of {answered} {name} {READER_KINDS[kind]}"


def _combined(readings: Sequence[GapReading]) -> np.ndarray:
    """The readings' combined distributions, one row a gap."""
    return np.array([r.combined for r in readings], dtype=float).reshape(-1, CLASSES)


@dataclass(frozen=True)
class _ReadOnce:
    """What a proposal of one class at one gap is before any style: how sure the shipped
    calibration is of it, its ``calibration_inputs`` and whether the readers disagree there."""

    sure: float
    inputs: tuple[float, ...]
    disagree: bool


#: ``_ReadOnce`` by the reading's identity (with the reading, so that the identity stays its own),
#: the class, the language and the calibration's identity: a long file's every gap is read again
#: after every decision, and hashing each reading's numbers cost more than reading it.
_READ_ONCE: dict[tuple[int, int, str | None, int], tuple[GapReading, Confidence, _ReadOnce]] = {}


def _read_once(mark: int, reading: GapReading, language: str | None, confidence: Confidence) -> _ReadOnce:
    key = (id(reading), mark, language, id(confidence))
    found = _READ_ONCE.get(key)
    if found is not None and found[0] is reading and found[1] is confidence:
        return found[2]
    if len(_READ_ONCE) >= 1 << 17:
        _READ_ONCE.clear()
    sure = _calibrated(mark, reading, language, confidence)
    once = _ReadOnce(
        sure, tuple(calibration_inputs(mark, reading, sure)), readers_disagree(reading.read, reading.heard)
    )
    _READ_ONCE[key] = (reading, confidence, once)
    return once


def shipped_sure(mark: int, reading: GapReading, language: str | None, confidence: Confidence) -> float:
    """How sure the shipped calibration is of a proposal of class ``mark`` at a gap read so,
    before any style (and before the cap where the readers disagree)."""
    return _read_once(mark, reading, language, confidence).sure


def _calibrated(mark: int, reading: GapReading, language: str | None, confidence: Confidence) -> float:
    """The shipped calibration of a proposal of class ``mark`` at a gap read so."""
    inputs = mark_inputs(
        mark, reading.combined, reading.read, reading.heard, reading.pause, reading.cue_end, language
    )
    return confidence.marks(inputs)


def _more(bias: float) -> str:
    return "more" if bias > 0 else "fewer"


def calibration_inputs(mark: int, reading: GapReading, sure: float) -> list[float]:
    """``CALIBRATION_INPUTS`` of a proposal of class ``mark`` that the shipped calibration gives
    ``sure``."""
    agree = readers_agree(mark, reading.read, reading.heard)
    symbol = MODEL_MARKS[mark]
    return [
        float(symbol == ","),
        float(symbol == "."),
        float(symbol == "?"),
        float(symbol not in ",.?"),
        float(agree),
        float(reading.heard is not None and not agree),
        logit(sure),
    ]
