"""The gap feature vector: what the audio layer computes for each gap between words and the model
reads. Its features, in order, are defined here, below both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

FEATURES = ("pause", "long_pause", "rate_change", "energy", "pitch_slope", "heard")
SIZE = len(FEATURES)
# What word timings alone give; loudness and pitch need heard (or synthesised) audio in training.
TIMING_FEATURES = FEATURES[:3]

GapVectors = list[list[float] | None]


@dataclass(frozen=True)
class GapMeasure:
    """What was measured at the gap after one word, in a person's units, for the review's
    evidence panel; None where it could not be measured."""

    pause_ms: int | None = None  # silence before the next word
    pitch_slope: float | None = None  # semitones per second over the word's voiced frames
    end_ms: int | None = None  # when the word ends in the media
    #: Semitones the pitch moved from the first voiced frame of the word to its last (the fitted
    #: line's rise): what an ear judges, where a slope over a 0.1 s word reads as a leap.
    pitch_change: float | None = None
    #: When the word starts in the media; with ``end_ms`` the recogniser's times where it heard
    #: the word (the captions' own word times where they give them).
    start_ms: int | None = None


def restrict(vectors: GapVectors | None, names: Sequence[str] | None) -> GapVectors | None:
    """Only the features a model was trained with (``gap_inputs`` in its settings); the others are
    zeroed, as in its training data, rather than shown values it never learned to read."""
    if vectors is None or names is None:
        return vectors
    keep = [name in names for name in FEATURES]
    if all(keep):
        return vectors
    return [None if v is None else [x if k else 0.0 for x, k in zip(v, keep, strict=True)] for v in vectors]
