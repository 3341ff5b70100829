"""The gap evidence vector: what the audio layer computes for each gap between words and the model
reads. Its features, in order, are defined here, below both."""

from __future__ import annotations

from collections.abc import Sequence

FEATURES = ("pause", "long_pause", "rate_change", "energy", "pitch_slope", "heard")
SIZE = len(FEATURES)
# What word timings alone give; loudness and pitch need heard (or synthesised) audio in training.
TIMING_FEATURES = FEATURES[:3]

GapVectors = list[list[float] | None]  # per word: its gap's features, or None when nothing is known


def restrict(vectors: GapVectors | None, names: Sequence[str] | None) -> GapVectors | None:
    """Only the features a model was trained with (``gap_inputs`` in its settings); the others are
    zeroed, as in its training data, rather than shown values it never learned to read."""
    if vectors is None or names is None:
        return vectors
    keep = [name in names for name in FEATURES]
    if all(keep):
        return vectors
    return [None if v is None else [x if k else 0.0 for x, k in zip(v, keep, strict=True)] for v in vectors]
