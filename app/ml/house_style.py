"""A house style learnt from a person's decisions: a small adjustment on top of the model's reading.

Every gap a person decided is an example: what the readers said there (``GapReading``), the word
after it, and the class of mark the person left. Two adjustments are fitted from them, each with a
Gaussian prior that keeps it at its starting point (zero, or a style file's) until the decisions say
otherwise: a handful of decisions moves it a little, fifty move it clearly.

- **What is proposed**: a bias per mark class added to the log of the combined distribution, and a
  bias per (class, next word) for words the decisions have seen ("more full stops before 'so'").
  The likeliest class after the biases is what a gap is proposed.
- **How sure a proposal is**: the shipped calibration (``app.ml.confidence``) gives the chance a
  proposal is right; the style shifts its logit per class and by whether the two readers agree
  (``CALIBRATION_INPUTS``), fitted on whether the person kept what would be proposed.

Fitting is a few Newton steps on at most a few thousand examples: milliseconds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.core.errors import PunctumError
from app.core.gap_readings import GapReading
from app.core.marks import MODEL_MARKS
from app.ml.confidence import (
    READERS_DISAGREE_CAP,
    Confidence,
    mark_inputs,
    readers_disagree,
    shipped_confidence,
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
#: Prior standard deviations (logits): how far the decisions may move each part.
CLASS_SPREAD = 1.0
WORD_SPREAD = 1.0
CALIBRATION_SPREAD = 1.0
#: Standard deviations of the calibration shift's posterior taken off a shift that raises a
#: confidence.
CAUTION = 1.0
#: A style file's format, written in it.
FORMAT = "punctum-style"
VERSION = 1
_EDGE = 1e-4
_NAMES = {1: "commas", 2: "full stops", 3: "question marks", 4: "exclamation marks", 5: "colons"}


class StyleError(PunctumError):
    pass


@dataclass(frozen=True)
class StyleExample:
    """One decided gap: what was read there, the word after it as the model reads it ("" at the
    end), the class of mark the captions had, and the class the person left."""

    reading: GapReading
    next_word: str
    original: int
    chosen: int
    language: str | None = None


@dataclass(frozen=True)
class Proposal:
    """What a gap is proposed under a style: the class, its chance of being right and the
    distribution after the style's biases."""

    mark: int
    confidence: float
    distribution: tuple[float, ...]


def _logit(p: float) -> float:
    p = min(1 - _EDGE, max(_EDGE, p))
    return math.log(p / (1 - p))


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-max(-40.0, min(40.0, x))))


@dataclass(frozen=True)
class HouseStyle:
    """Biases per class (none's is always 0), per (next word, class), and the calibration shift
    (``CALIBRATION_INPUTS``); ``decisions``: how many decided gaps it was fitted on, beside those
    of the style it started from (``inherited``)."""

    class_bias: tuple[float, ...] = (0.0,) * CLASSES
    word_bias: dict[tuple[str, int], float] = field(default_factory=dict, hash=False, compare=True)
    calibration: tuple[float, ...] = (0.0,) * len(CALIBRATION_INPUTS)
    decisions: int = 0
    inherited: int = 0
    #: The calibration's posterior covariance (row by row), how uncertain the shift still is.
    calibration_spread: tuple[float, ...] = ()

    @property
    def neutral(self) -> bool:
        """Whether it changes nothing the model proposes or how sure it is."""
        return (
            not any(self.class_bias)
            and not any(self.calibration)
            and not any(v for v in self.word_bias.values())
        )

    # --- reading a gap ----------------------------------------------------------------------

    def adjusted(self, reading: GapReading, next_word: str) -> tuple[float, ...]:
        """The combined distribution with the style's biases, renormalised."""
        if self.neutral:
            return reading.combined
        scores = [
            math.log(max(p, 1e-9)) + self.class_bias[k] + self.word_bias.get((next_word, k), 0.0)
            for k, p in enumerate(reading.combined)
        ]
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        total = sum(weights)
        return tuple(w / total for w in weights)

    def proposal(
        self,
        reading: GapReading,
        next_word: str,
        original: int,
        language: str | None,
        confidence: Confidence | None = None,
    ) -> Proposal | None:
        """What the gap is proposed under this style, or None where the likeliest class is the one
        the captions have."""
        distribution = self.adjusted(reading, next_word)
        best = max(range(CLASSES), key=distribution.__getitem__)
        if best == original:
            return None
        return self._proposed(best, distribution, reading, language, confidence)

    def proposals(
        self,
        readings: Sequence[GapReading],
        next_words: Sequence[str],
        originals: Sequence[int],
        language: str | None,
    ) -> list[Proposal | None]:
        """``proposal`` of many gaps at once (the biases applied to all of them together)."""
        if not readings:
            return []
        scores = np.log(np.clip(np.array([r.combined for r in readings], dtype=float), 1e-9, 1.0))
        scores += np.array(self.class_bias)
        if self.word_bias:
            for row, word in enumerate(next_words):
                for k in range(1, CLASSES):
                    scores[row, k] += self.word_bias.get((word, k), 0.0)
        scores -= scores.max(axis=1, keepdims=True)
        weights = np.exp(scores)
        weights /= weights.sum(axis=1, keepdims=True)
        best = weights.argmax(axis=1)
        confidence = shipped_confidence()
        found: list[Proposal | None] = []
        for row, reading in enumerate(readings):
            mark = int(best[row])
            if mark == originals[row]:
                found.append(None)
                continue
            distribution = reading.combined if self.neutral else tuple(float(w) for w in weights[row])
            found.append(self._proposed(mark, distribution, reading, language, confidence))
        return found

    def _proposed(
        self,
        best: int,
        distribution: tuple[float, ...],
        reading: GapReading,
        language: str | None,
        confidence: Confidence | None,
    ) -> Proposal:
        sure = (confidence or shipped_confidence()).mark_right(
            mark_inputs(
                best, distribution, reading.read, reading.heard, reading.pause, reading.cue_end, language
            )
        )
        if any(self.calibration):
            inputs = calibration_inputs(best, reading, sure)
            shift = sum(w * x for w, x in zip(self.calibration, inputs, strict=True))
            if shift > 0 and self.calibration_spread:
                # Raised only by what the decisions make certain: the shift less one standard
                # deviation of its posterior, so that thin evidence never lifts a mark over a target.
                spread = np.array(self.calibration_spread).reshape(len(inputs), len(inputs))
                x = np.array(inputs)
                shift = max(0.0, shift - CAUTION * math.sqrt(max(0.0, float(x @ spread @ x))))
            sure = _sigmoid(inputs[-1] + shift)
        if readers_disagree(reading.read, reading.heard):
            sure = min(sure, READERS_DISAGREE_CAP)
        return Proposal(best, sure, distribution)

    # --- what it has learnt --------------------------------------------------------------------

    def describe(self) -> list[str]:
        """What the style has learnt, in words, largest first ("fewer commas than the model's
        default", "more full stops before 'so'"); empty when it has learnt nothing to speak of."""
        said: list[tuple[float, str]] = []
        for k in range(1, CLASSES):
            bias = self.class_bias[k]
            if abs(bias) >= 0.4:
                said.append(
                    (abs(bias), f"{'more' if bias > 0 else 'fewer'} {_NAMES[k]} than the model's default")
                )
        for (word, k), bias in self.word_bias.items():
            if abs(bias) >= 0.5 and k:
                said.append((abs(bias), f"{'more' if bias > 0 else 'fewer'} {_NAMES[k]} before '{word}'"))
        for position, name in enumerate(("commas", "full stops", "question marks")):
            shift = self.calibration[position]
            if abs(shift) >= 0.4:
                said.append((abs(shift), f"{'surer' if shift > 0 else 'less sure'} of the model's {name}"))
        return [text for _, text in sorted(said, key=lambda pair: -pair[0])]

    def summary(self) -> str:
        """One line: how many decisions it rests on and what it has learnt."""
        count = self.decisions + self.inherited
        learnt = self.describe()
        if not count:
            return "house style: nothing learnt yet (no decisions)"
        noun = "decision" if count == 1 else "decisions"
        inherited = f" ({self.inherited} from a style file)" if self.inherited else ""
        return f"house style from {count} {noun}{inherited}: " + (
            "; ".join(learnt[:4]) if learnt else "the model's default so far"
        )

    # --- a style file ------------------------------------------------------------------------

    def as_json(self) -> dict[str, object]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "decisions": self.decisions + self.inherited,
            "class_bias": {MODEL_MARKS[k] or "none": round(self.class_bias[k], 4) for k in range(CLASSES)},
            "word_bias": [
                {"before": word, "mark": MODEL_MARKS[k] or "none", "bias": round(bias, 4)}
                for (word, k), bias in sorted(self.word_bias.items())
                if abs(bias) >= 1e-3
            ],
            "calibration": {
                name: round(w, 4) for name, w in zip(CALIBRATION_INPUTS, self.calibration, strict=True)
            },
            "calibration_spread": [round(v, 6) for v in self.calibration_spread],
        }

    @classmethod
    def from_json(cls, data: object) -> HouseStyle:
        classes = {(mark or "none"): k for k, mark in enumerate(MODEL_MARKS)}
        try:
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise StyleError("not a Punctum style file")
            if data.get("version") != VERSION:
                raise StyleError(
                    f"a style file of version {data.get('version')!r}; this Punctum reads {VERSION}"
                )
            bias = [0.0] * CLASSES
            for name, value in dict(data["class_bias"]).items():
                bias[classes[name]] = _finite(value)
            bias = [b - bias[0] for b in bias]
            words: dict[tuple[str, int], float] = {}
            for item in data.get("word_bias", []):
                words[(str(item["before"]), classes[item["mark"]])] = _finite(item["bias"])
            given = dict(data.get("calibration", {}))
            unknown = set(given) - set(CALIBRATION_INPUTS)
            if unknown:
                raise StyleError(f"unknown calibration inputs {sorted(unknown)}")
            calibration = tuple(_finite(given.get(name, 0.0)) for name in CALIBRATION_INPUTS)
            spread = tuple(_finite(v) for v in data.get("calibration_spread", []))
            if spread and len(spread) != len(CALIBRATION_INPUTS) ** 2:
                raise StyleError("a calibration spread of the wrong size")
            decisions = int(data.get("decisions", 0))
            if decisions < 0:
                raise StyleError("a negative count of decisions")
        except StyleError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise StyleError(f"a malformed style file ({error})") from None
        return cls(tuple(bias), words, calibration, 0, decisions, spread)


def _finite(value: object) -> float:
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number) or abs(number) > 20:
        raise ValueError(f"{value!r} is not a bias")
    return number


def read_style(path: Path) -> HouseStyle:
    """A style file; ``StyleError`` with one line for anything else."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise StyleError(
            f"{path}: cannot read the style file ({getattr(error, 'strerror', None) or error})"
        ) from None
    except ValueError:
        raise StyleError(f"{path}: not a Punctum style file (not JSON)") from None
    try:
        return HouseStyle.from_json(data)
    except StyleError as error:
        raise StyleError(f"{path}: {error}") from None


def style_text(style: HouseStyle) -> str:
    return json.dumps(style.as_json(), indent=2, ensure_ascii=False) + "\n"


def calibration_inputs(mark: int, reading: GapReading, sure: float) -> list[float]:
    """``CALIBRATION_INPUTS`` of a proposal of class ``mark`` that the shipped calibration gives
    ``sure``."""
    heard = reading.heard
    read_best = max(range(CLASSES), key=reading.read.__getitem__)
    agree = heard is not None and read_best == mark == max(range(CLASSES), key=heard.__getitem__)
    symbol = MODEL_MARKS[mark]
    return [
        float(symbol == ","),
        float(symbol == "."),
        float(symbol == "?"),
        float(symbol not in ",.?"),
        float(agree),
        float(heard is not None and not agree),
        _logit(sure),
    ]


# --- fitting ---------------------------------------------------------------------------------


def fit_style(
    examples: Sequence[StyleExample],
    base: HouseStyle | None = None,
    strength: float = 1.0,
    confidence: Confidence | None = None,
) -> HouseStyle:
    """The style ``examples`` teach, starting from ``base`` (the neutral style when None).
    ``strength`` scales how far decisions may move it (the priors' spread)."""
    base = base or HouseStyle()
    if not examples:
        return base
    confidence = confidence or shipped_confidence()
    logp = np.log(np.clip(np.array([e.reading.combined for e in examples], dtype=float), 1e-9, 1.0))
    chosen = np.array([e.chosen for e in examples])
    onehot = np.eye(CLASSES)[chosen]
    vocabulary = sorted({e.next_word for e in examples})
    word_of = np.array([vocabulary.index(e.next_word) for e in examples])
    class_bias = np.array(base.class_bias, dtype=float)
    word_base = np.array([[base.word_bias.get((w, k), 0.0) for k in range(CLASSES)] for w in vocabulary])
    word_bias = word_base.copy()
    class_precision = 1 / (CLASS_SPREAD * strength) ** 2
    word_precision = 1 / (WORD_SPREAD * strength) ** 2
    base_bias = np.array(base.class_bias, dtype=float)
    for _ in range(4):
        class_bias = _newton_bias(
            logp + word_bias[word_of], onehot, class_bias, base_bias, class_precision, steps=4
        )
        for number in range(len(vocabulary)):
            rows = word_of == number
            word_bias[number] = _newton_bias(
                logp[rows] + class_bias, onehot[rows], word_bias[number], word_base[number], word_precision, 2
            )
    words = {
        (word, k): float(word_bias[number, k] - word_bias[number, 0])
        for number, word in enumerate(vocabulary)
        for k in range(CLASSES)
        if k and abs(word_bias[number, k] - word_bias[number, 0]) >= 1e-3
    }
    words = {**{key: v for key, v in base.word_bias.items() if key[0] not in vocabulary}, **words}
    biased = HouseStyle(tuple(float(b - class_bias[0]) for b in class_bias), words, base.calibration)
    calibration, spread = _fit_calibration(examples, biased, base, strength, confidence)
    return HouseStyle(
        biased.class_bias, words, calibration, len(examples), base.decisions + base.inherited, spread
    )


def _newton_bias(
    scores: np.ndarray,
    onehot: np.ndarray,
    bias: np.ndarray,
    centre: np.ndarray,
    precision: float,
    steps: int,
) -> np.ndarray:
    """The MAP bias of a softmax over ``scores + bias`` (class 0 held at its centre)."""
    bias = bias.copy()
    if not len(scores):
        return bias
    for _ in range(steps):
        z = scores + bias
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        gradient = (onehot - p).sum(axis=0) - precision * (bias - centre)
        hessian = -(np.diag(p.sum(axis=0)) - p.T @ p) - precision * np.eye(CLASSES)
        free = slice(1, CLASSES)
        step = np.linalg.solve(hessian[free, free], gradient[free])
        norm = float(np.abs(step).max())
        if norm > 2.0:
            step *= 2.0 / norm
        bias[free] -= step
        if norm < 1e-6:
            break
    return bias


def _fit_calibration(
    examples: Sequence[StyleExample],
    biased: HouseStyle,
    base: HouseStyle,
    strength: float,
    confidence: Confidence,
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The calibration shift, fitted on whether each decided gap kept what ``biased`` proposes,
    and its posterior covariance (flattened)."""
    rows: list[list[float]] = []
    right: list[float] = []
    neutral_calibration = HouseStyle(biased.class_bias, biased.word_bias)
    for example in examples:
        proposal = neutral_calibration.proposal(
            example.reading, example.next_word, example.original, example.language, confidence
        )
        if proposal is None:
            continue
        rows.append(calibration_inputs(proposal.mark, example.reading, proposal.confidence))
        right.append(float(example.chosen == proposal.mark))
    centre = np.array(base.calibration, dtype=float)
    if not rows:
        return tuple(float(w) for w in centre), base.calibration_spread
    x = np.array(rows)
    y = np.array(right)
    offset = x[:, -1]
    weights = centre.copy()
    precision = 1 / (CALIBRATION_SPREAD * strength) ** 2
    for _ in range(8):
        p = 1 / (1 + np.exp(-np.clip(offset + x @ weights, -40, 40)))
        gradient = x.T @ (y - p) - precision * (weights - centre)
        hessian = -(x.T * (p * (1 - p))) @ x - precision * np.eye(len(weights))
        step = np.linalg.solve(hessian, gradient)
        norm = float(np.abs(step).max())
        if norm > 2.0:
            step *= 2.0 / norm
        weights -= step
        if norm < 1e-6:
            break
    p = 1 / (1 + np.exp(-np.clip(offset + x @ weights, -40, 40)))
    covariance = np.linalg.inv((x.T * (p * (1 - p))) @ x + precision * np.eye(len(weights)))
    return tuple(float(w) for w in weights), tuple(float(v) for v in covariance.ravel())
