"""How likely a suggestion is to be right: a small logistic model over what its readers said.

A mark suggestion's probability of being right is ``sigmoid(w . x + b)`` over a few plain inputs
(``mark_inputs``): how sure the combined reading is of the mark, how sure the text model is, whether
the recogniser heard the gap, how sure it is and whether both readers chose this mark, which mark
it is, whether the gap has timings, whether it ends a cue, and whether the text is English (the
listener hears English best). A capital's (``capital_inputs``) reads the text model's probability of
the capital and the same language and cue flags. The weights live in ``models/confidence``, fitted on
the development sets and cross-fitted there (``tests/benchmarks/bench_confidence.py``; its model
card says on what and how well).

Triage settles a suggestion when this probability reaches the user's precision target, so "97%"
means about three in a hundred of the settled marks may be wrong, whatever the readers were.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from app.core.bundled import confidence_dir
from app.core.errors import PunctumError
from app.core.marks import MODEL_MARKS

#: The mark classes with an input of their own; the rest (none, "!", ":") share the intercept.
OWN_CLASSES = (",", ".", "?")

MARK_INPUTS = (
    "logit_combined",
    "logit_read",
    "heard",
    "logit_heard",
    "readers_agree",
    *(f"class_{mark}" for mark in OWN_CLASSES),
    "timed",
    "cue_end",
    "english",
    "margin",  # how far the mark leads the runner-up (logits)
    "logit_none",
    "pause",  # the gap's pause as the model reads it (log1p(10 s) / 3), 0 without timing
    "pause_full_stop",
    "logit_comma",  # logit_combined for a comma, else 0
    "logit_full_stop",
    "logit_combined_squared",  # / 10
)
CAPITAL_INPUTS = ("logit_capital", "cue_start", "english")

LOGIT_EDGE = 1e-4  # probabilities are clipped this far from 0 and 1 before their logit


class ConfidenceError(PunctumError):
    pass


def logit(p: float) -> float:
    """The logit of ``p``, clipped ``LOGIT_EDGE`` from 0 and 1."""
    p = min(1 - LOGIT_EDGE, max(LOGIT_EDGE, p))
    return math.log(p / (1 - p))


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
    agree = readers_agree(mark, read, heard)
    sure = logit(combined[mark])
    runner_up = max(p for k, p in enumerate(combined) if k != mark)
    symbol = MODEL_MARKS[mark]
    return [
        sure,
        logit(read[mark]),
        float(heard is not None),
        logit(heard[mark]) if heard is not None else 0.0,
        float(agree),
        *(float(symbol == own) for own in OWN_CLASSES),
        float(pause is not None),
        float(cue_end),
        float(language == "en"),
        sure - logit(runner_up),
        logit(combined[0]),
        pause or 0.0,
        (pause or 0.0) * (symbol == "."),
        sure * (symbol == ","),
        sure * (symbol == "."),
        sure * sure / 10,
    ]


#: The most a mark may be trusted where the recogniser heard its gap and the two readers chose
#: differently: below every triage target, so the model alone never settles such a gap. The
#: development speech is 13 minutes; on held-out calls such commas were right half the time (49.8%)
#: while the calibration promised more, so a person decides them.
READERS_DISAGREE_CAP = 0.85


def readers_disagree(read: Sequence[float], heard: Sequence[float] | None) -> bool:
    """Whether the recogniser heard the gap and chose another mark than the text model read."""
    return heard is not None and _first(read) != _first(heard)


def capital_inputs(capital: float, cue_start: bool, language: str | None) -> list[float]:
    """The inputs (``CAPITAL_INPUTS`` order) of a capital the text model gives ``capital``."""
    return [logit(capital), float(cue_start), float(language == "en")]


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

    def mark_right(self, inputs: Sequence[float]) -> float:
        return self.marks(inputs)

    def mark_promise(self, inputs: Sequence[float], disagree: bool) -> float:
        """The chance a mark suggestion is right as promised to a person and to triage:
        ``mark_right`` of its inputs, held below every target where its readers ``disagree``
        (``READERS_DISAGREE_CAP``)."""
        sure = self.mark_right(inputs)
        return min(sure, READERS_DISAGREE_CAP) if disagree else sure

    def capital_right(self, inputs: Sequence[float]) -> float:
        return self.capitals(inputs)

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
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfidenceError(f"{path}: cannot read the suggestions' calibration ({error})") from None
    if not isinstance(data, dict):
        raise ConfidenceError(f"{path}: a confidence file is malformed")
    try:
        return Confidence.from_json(data)
    except ConfidenceError as error:
        raise ConfidenceError(f"{path}: {error}") from None
