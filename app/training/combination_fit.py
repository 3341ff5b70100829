"""Fitting the readers' combination (``app.ml.combination``, ``models/listener/combination.json``):
how the text model's and the listener's mark distributions are weighed into the one suggested from.

A search over a grid for the combination under which the reference's marks are most likely.
Likelihood, not F1: F1 over a few hundred gaps jumps with single marks, and a combination fitted to
it on one half of the recordings did not carry to the other. ``tests/benchmarks/bench_listener.py``
measures it cross-fitted (and with ``--fit`` writes the shipped file from every gap);
``bench_confidence`` fits it the same way before it calibrates.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.ml.combination import Combination

WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
BIASES = (-0.5, -0.25, 0.0, 0.25, 0.5)
TEMPERATURES = (0.6, 0.8, 1.0, 1.2, 1.5, 2.0)


@dataclass(frozen=True)
class RecordingReadings:
    """One recording's gaps: the text model's mark distributions (gaps x marks), the listener's
    (None where it did not hear the gap) and the reference's marks (indices into ``MODEL_MARKS``)."""

    text: np.ndarray
    heard: Sequence[list[float] | None]
    gold: np.ndarray


def combination_of(
    comma: float, stop: float, none_bias: float, comma_bias: float, temperature: float = 1.0
) -> Combination:
    """The listener's weight for commas (and colons) and for sentence marks, the mean of the two for
    no mark; a bias for no mark and one for commas (and colons)."""
    weights = ((comma + stop) / 2, comma, stop, stop, stop, comma)  # none , . ? ! :
    return Combination(weights, (none_bias, comma_bias, 0.0, 0.0, 0.0, comma_bias), temperature)


def fit(recordings: Sequence[RecordingReadings], keep: Sequence[np.ndarray]) -> Combination:
    """The combination under which the reference's marks at the kept gaps of every recording
    (pooled) are most likely: weights and biases on the grid, then the temperature."""
    candidates = (
        combination_of(comma, stop, none_bias, comma_bias)
        for comma, stop, none_bias, comma_bias in itertools.product(WEIGHTS, WEIGHTS, BIASES, BIASES)
    )
    loss = functools.partial(_log_loss, recordings, keep)
    best = min(candidates, key=loss)
    return min((Combination(best.weights, best.biases, t) for t in TEMPERATURES), key=loss)


def _log_loss(
    recordings: Sequence[RecordingReadings], keep: Sequence[np.ndarray], combination: Combination
) -> float:
    total = 0.0
    for recording, kept in zip(recordings, keep, strict=True):
        probs = combination.combine_heard(recording.text, recording.heard)[kept]
        gold = recording.gold[kept]
        total -= float(np.log(np.maximum(probs[np.arange(len(gold)), gold], 1e-9)).sum())
    return total
