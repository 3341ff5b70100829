"""How likely a suggestion is to be right: a small logistic model over what its readers said.

A mark suggestion's probability of being right is ``sigmoid(w . x + b)`` over a few plain inputs
(``mark_inputs``): how sure the combined reading is of the mark, how sure the text model is, whether
the recogniser heard the gap, how sure it is and whether both readers chose this mark, which mark
it is, whether the gap has timings, whether it ends a cue, and whether the text is English (the
listener hears English best). A capital's (``capital_inputs``) reads the text model's probability of
the capital and the same language and cue flags. The weights live in ``models/confidence``, fitted on
the development sets (``punctum fit-confidence``, ``app/training/confidence_fit.py``) and measured
cross-fitted there (``tests/benchmarks/bench_confidence.py``; the model card says on what and how
well).

Triage settles a suggestion when this probability reaches the user's precision target, so "97%"
means about three in a hundred of the settled marks may be wrong, whatever the readers were.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from app.core.bundled import confidence_dir
from app.core.errors import PunctumError
from app.core.json_files import read_json_object
from app.core.marks import MODEL_MARKS

#: The mark classes with an input of their own; the rest (none, "!", ":") share the intercept.
OWN_CLASSES = (",", ".", "?")

LOGIT_EDGE = 1e-4  # probabilities are clipped this far from 0 and 1 before their logit


class ConfidenceError(PunctumError):
    pass


def logit(p: float) -> float:
    """The logit of ``p``, clipped ``LOGIT_EDGE`` from 0 and 1."""
    p = min(1 - LOGIT_EDGE, max(LOGIT_EDGE, p))
    return math.log(p / (1 - p))


class _Gap(NamedTuple):
    """What a mark suggestion's inputs are read from: ``mark_inputs``'s arguments, with the mark's
    symbol and the logit of the combined reading's probability of it."""

    mark: int
    symbol: str
    sure: float
    combined: Sequence[float]
    read: Sequence[float]
    heard: Sequence[float] | None
    pause: float | None
    cue_end: bool
    language: str | None


def _is_mark(symbol: str) -> Callable[[_Gap], float]:
    return lambda gap: float(gap.symbol == symbol)


def _margin(gap: _Gap) -> float:
    """How far the mark leads the runner-up (logits)."""
    return gap.sure - logit(max(p for k, p in enumerate(gap.combined) if k != gap.mark))


#: A mark suggestion's inputs in their order, each named beside how it is read: the names
#: (``MARK_INPUTS``, what the shipped file records) and the values (``mark_inputs``) both come from
#: here, so they cannot drift apart.
_MARK_COLUMNS: tuple[tuple[str, Callable[[_Gap], float]], ...] = (
    ("logit_combined", lambda gap: gap.sure),
    ("logit_read", lambda gap: logit(gap.read[gap.mark])),
    ("heard", lambda gap: float(gap.heard is not None)),
    ("logit_heard", lambda gap: logit(gap.heard[gap.mark]) if gap.heard is not None else 0.0),
    ("readers_agree", lambda gap: float(readers_agree(gap.mark, gap.read, gap.heard))),
    *((f"class_{own}", _is_mark(own)) for own in OWN_CLASSES),
    ("timed", lambda gap: float(gap.pause is not None)),
    ("cue_end", lambda gap: float(gap.cue_end)),
    ("english", lambda gap: float(gap.language == "en")),
    ("margin", _margin),
    ("logit_none", lambda gap: logit(gap.combined[0])),
    # The gap's pause as the model reads it (log1p(10 s) / 3), 0 without timing; and for a full stop.
    ("pause", lambda gap: gap.pause or 0.0),
    ("pause_full_stop", lambda gap: (gap.pause or 0.0) * (gap.symbol == ".")),
    # logit_combined for a comma, else 0; for a full stop; its square / 10.
    ("logit_comma", lambda gap: gap.sure * (gap.symbol == ",")),
    ("logit_full_stop", lambda gap: gap.sure * (gap.symbol == ".")),
    ("logit_combined_squared", lambda gap: gap.sure * gap.sure / 10),
)
MARK_INPUTS = tuple(name for name, _ in _MARK_COLUMNS)


def mark_inputs(
    mark: int,
    combined: Sequence[float],
    read: Sequence[float],
    heard: Sequence[float] | None,
    pause: float | None,
    cue_end: bool,
    language: str | None,
) -> list[float]:
    """The inputs (``MARK_INPUTS`` order) of a suggestion of ``MODEL_MARKS[mark]`` at a gap: the
    combined, text and heard distributions there (``heard`` None where the gap was not heard), and
    the gap's pause as the model's gap vector gives it (None without timing)."""
    gap = _Gap(
        mark, MODEL_MARKS[mark], logit(combined[mark]), combined, read, heard, pause, cue_end, language
    )
    return [value(gap) for _, value in _MARK_COLUMNS]


#: The most a mark may be trusted where the recogniser heard its gap and the two readers chose
#: differently: below every triage target, so the model alone never settles such a gap. The
#: development speech is 13 minutes; on held-out calls such commas were right half the time (49.8%)
#: while the calibration promised more, so a person decides them.
READERS_DISAGREE_CAP = 0.85


def readers_disagree(read: Sequence[float], heard: Sequence[float] | None) -> bool:
    """Whether the recogniser heard the gap and chose another mark than the text model read."""
    return heard is not None and _first(read) != _first(heard)


class _Word(NamedTuple):
    """What a capital suggestion's inputs are read from: ``capital_inputs``'s arguments."""

    capital: float
    cue_start: bool
    language: str | None


#: A capital suggestion's inputs in their order, named beside how each is read (as ``_MARK_COLUMNS``).
_CAPITAL_COLUMNS: tuple[tuple[str, Callable[[_Word], float]], ...] = (
    ("logit_capital", lambda word: logit(word.capital)),
    ("cue_start", lambda word: float(word.cue_start)),
    ("english", lambda word: float(word.language == "en")),
)
CAPITAL_INPUTS = tuple(name for name, _ in _CAPITAL_COLUMNS)


def capital_inputs(capital: float, cue_start: bool, language: str | None) -> list[float]:
    """The inputs (``CAPITAL_INPUTS`` order) of a capital the text model gives ``capital``."""
    word = _Word(capital, cue_start, language)
    return [value(word) for _, value in _CAPITAL_COLUMNS]


def readers_agree(mark: int, read: Sequence[float], heard: Sequence[float] | None) -> bool:
    """Whether the recogniser heard the gap and both readers chose ``MODEL_MARKS[mark]``."""
    return heard is not None and _first(read) == mark == _first(heard)


def sigmoid(score: float) -> float:
    return 1 / (1 + math.exp(-max(-40.0, min(40.0, score))))


def _first(distribution: Sequence[float]) -> int:
    return max(range(len(distribution)), key=lambda k: distribution[k])


@dataclass(frozen=True)
class Logistic:
    """``sigmoid(weights . inputs + bias)``."""

    weights: tuple[float, ...]
    bias: float

    def __call__(self, inputs: Sequence[float]) -> float:
        if len(inputs) != len(self.weights):
            raise ConfidenceError(f"{len(inputs)} inputs for {len(self.weights)} weights")
        score = self.bias + sum(w * x for w, x in zip(self.weights, inputs, strict=True))
        return sigmoid(score)


@dataclass(frozen=True)
class Confidence:
    """The probability that a mark suggestion, or a capital one, is right."""

    marks: Logistic
    capitals: Logistic

    def mark_promise(self, inputs: Sequence[float], disagree: bool) -> float:
        """The chance a mark suggestion is right as promised to a person and to triage:
        ``marks`` of its inputs, held below every target where its readers ``disagree``
        (``READERS_DISAGREE_CAP``)."""
        sure = self.marks(inputs)
        return min(sure, READERS_DISAGREE_CAP) if disagree else sure

    def as_json(self) -> dict[str, object]:
        return {
            part: {"inputs": list(names), "weights": list(model.weights), "bias": model.bias}
            for part, names, model in (
                ("marks", MARK_INPUTS, self.marks),
                ("capitals", CAPITAL_INPUTS, self.capitals),
            )
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Confidence:
        def part(name: str, inputs: tuple[str, ...]) -> Logistic:
            try:
                content = data[name]
                assert isinstance(content, dict)
                if tuple(content["inputs"]) != inputs:
                    raise ConfidenceError(
                        f"its {name} read {content['inputs']}, this Punctum gives {list(inputs)}"
                    )
                return Logistic(tuple(float(w) for w in content["weights"]), float(content["bias"]))
            except (KeyError, TypeError, ValueError, AssertionError) as error:
                raise ConfidenceError(f"a confidence file is malformed ({error})") from None

        marks, capitals = part("marks", MARK_INPUTS), part("capitals", CAPITAL_INPUTS)
        for name, model, inputs in (("marks", marks, MARK_INPUTS), ("capitals", capitals, CAPITAL_INPUTS)):
            if len(model.weights) != len(inputs):
                raise ConfidenceError(f"a confidence file gives {len(model.weights)} {name} weights")
        return cls(marks, capitals)


@functools.cache
def shipped_confidence(path: Path | None = None) -> Confidence:
    """The calibration Punctum ships (``models/confidence/confidence.json``), or the one at ``path``."""
    path = path or confidence_dir() / "confidence.json"
    data = read_json_object(path, ConfidenceError, "the suggestions' calibration")
    try:
        return Confidence.from_json(data)
    except ConfidenceError as error:
        raise ConfidenceError(f"{path}: {error}") from None
