"""Temperature scaling of the mark probabilities on dev data, and expected calibration error.

The editor ranks and colours suggestions by confidence, so a "90%" should be right nine times in
ten. One temperature, fitted by minimising the negative log-likelihood on dev words, divides the
logits; it changes no decision, only how sure the model says it is.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch

BINS = 15


def expected_calibration_error(probabilities: torch.Tensor, labels: torch.Tensor, bins: int = BINS) -> float:
    """Gap between confidence and accuracy, averaged over equal-width confidence bins."""
    confidence, predicted = probabilities.max(dim=-1)
    correct = (predicted == labels).float()
    total = 0.0
    edges = torch.linspace(0, 1, bins + 1)
    for low, high in itertools.pairwise(edges):
        chosen = (confidence > low) & (confidence <= high)
        if chosen.any():
            total += float(chosen.float().mean()) * abs(
                float(confidence[chosen].mean()) - float(correct[chosen].mean())
            )
    return total


def fit_temperature(log_probabilities: torch.Tensor, labels: torch.Tensor) -> float:
    """The temperature minimising dev negative log-likelihood (a 1-D search: robust and exact enough)."""
    best_temperature, best_loss = 1.0, math.inf
    for temperature in torch.exp(torch.linspace(math.log(0.3), math.log(5.0), 120)).tolist():
        loss = float(torch.nn.functional.cross_entropy(log_probabilities / temperature, labels))
        if loss < best_loss:
            best_temperature, best_loss = temperature, loss
    return best_temperature


def calibrate(probabilities: Sequence[torch.Tensor], labels: Sequence[Sequence[int]]) -> dict[str, float]:
    """Temperature and ECE before and after, from uncalibrated per-word probabilities."""
    stacked = torch.cat(list(probabilities))
    gold = torch.tensor([label for document in labels for label in document])
    log_probabilities = torch.log(stacked.clamp_min(1e-9))
    temperature = fit_temperature(log_probabilities, gold)
    calibrated = torch.softmax(log_probabilities / temperature, dim=-1)
    return {
        "temperature": round(temperature, 4),
        "ece_before": round(expected_calibration_error(stacked, gold), 4),
        "ece_after": round(expected_calibration_error(calibrated, gold), 4),
        "dev_words": int(gold.numel()),
    }
