"""How well stated probabilities keep their word: the reliability bins and the expected calibration
error (ECE), the one way Punctum measures it (the model's mark probabilities in ``calibrate``, the
suggestions' confidence in ``confidence_fit`` and ``tests/benchmarks/bench_confidence.py``).

Confidences fall into equal-width bins over [0, 1] (each bin holds its lower edge; the last one holds
1 too); the ECE is the gap between a bin's mean confidence and its share right, averaged over the
bins by how many confidences each holds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

BINS = 15


@dataclass(frozen=True)
class Bin:
    """One bin of confidence that holds any: their mean, the share of them right, and how many."""

    confidence: float
    right: float
    count: int


def reliability_bins(confidence: npt.ArrayLike, right: npt.ArrayLike, bins: int = BINS) -> list[Bin]:
    """The bins (of ``bins`` equal widths, lowest first) that hold any of ``confidence``, each with
    the share of ``right`` (1 or True when right) among them."""
    p = np.asarray(confidence, dtype=np.float64).reshape(-1)
    hit = np.asarray(right, dtype=np.float64).reshape(-1)
    if len(p) != len(hit):
        raise ValueError(f"{len(p)} confidences for {len(hit)} outcomes")
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    return [
        Bin(float(p[chosen].mean()), float(hit[chosen].mean()), int(chosen.sum()))
        for chosen in (which == b for b in range(bins))
        if chosen.any()
    ]


def expected_calibration_error(confidence: npt.ArrayLike, right: npt.ArrayLike, bins: int = BINS) -> float:
    """The gap between confidence and the share right, averaged over ``reliability_bins`` by their
    counts; 0 with nothing to measure."""
    measured = reliability_bins(confidence, right, bins)
    total = sum(b.count for b in measured)
    return float(sum(abs(b.confidence - b.right) * b.count for b in measured) / max(1, total))
