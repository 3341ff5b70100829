"""Decision biases and temperature scaling of the mark probabilities on dev data, and their expected
calibration error (``reliability``).

Training down-weights the "none" class, which leaves the model too eager; one additive bias per
mark, chosen to maximise dev F1, puts the decision boundaries back. The editor then ranks and
colours suggestions by confidence, so a "90%" should be right nine times in ten: one temperature,
fitted by minimising the negative log-likelihood on dev words, divides the biased log-probabilities.
It changes no decision, only how sure the model says it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from app.core.marks import MODEL_MARKS, mark_class
from app.training import reliability

BIAS_GRID = [step / 4 for step in range(-12, 13)]
#: The evaluated class (0 none, 1 comma, 2 period, 3 question) of each model class.
_EVALUATED = torch.tensor(
    [("", ",", ".", "?").index(mark_class(mark)) for mark in MODEL_MARKS], dtype=torch.long
)


_TUNED = [MODEL_MARKS.index(mark) for mark in (",", ".", "?")]


def micro_f1(log_probabilities: torch.Tensor, gold: torch.Tensor, bias: torch.Tensor) -> float:
    """Overall F1 over comma, period and question of the biased decisions."""
    predicted = _EVALUATED[(log_probabilities + bias).argmax(dim=-1)]
    expected = _EVALUATED[gold]
    hits = int(((predicted == expected) & (expected > 0)).sum())
    proposed, wanted = int((predicted > 0).sum()), int((expected > 0).sum())
    return 2 * hits / (proposed + wanted) if proposed + wanted else 0.0


#: A bias moves only for at least this much dev F1 (0.2 points). Dev F1 is flat near its best, so
#: chasing smaller gains fits noise: two models with the same text path got French comma biases of
#: -0.25 and -1.0 that way.
MIN_BIAS_GAIN = 0.002


def fit_bias(
    log_probabilities: torch.Tensor,
    gold: torch.Tensor,
    rounds: int = 3,
    start: Sequence[float] | None = None,
    min_gain: float = MIN_BIAS_GAIN,
) -> list[float]:
    """Additive log-probability bias per mark (none fixed at 0) maximising dev F1, by coordinate
    ascent; each move must gain at least ``min_gain``."""
    bias = torch.tensor(list(start)) if start is not None else torch.zeros(log_probabilities.size(-1))
    best = micro_f1(log_probabilities, gold, bias)
    for _ in range(rounds):
        improved = False
        # Only the evaluated marks: boosting "!" or ":" would score as period or comma while
        # showing editors marks the model did not choose.
        for mark in _TUNED:
            scores = []
            for value in BIAS_GRID:
                trial = bias.clone()
                trial[mark] = value
                scores.append((micro_f1(log_probabilities, gold, trial), trial))
            score, trial = max(scores, key=lambda pair: pair[0])
            if score >= best + min_gain:
                best, bias, improved = score, trial, True
        if not improved:
            break
    return [round(float(value), 2) for value in bias]


def expected_calibration_error(
    probabilities: torch.Tensor, labels: torch.Tensor, bins: int = reliability.BINS
) -> float:
    """The ECE (``reliability.expected_calibration_error``) of each word's most likely mark: its
    probability as the confidence, right when it is the label."""
    confidence, predicted = probabilities.max(dim=-1)
    right = predicted == labels
    return reliability.expected_calibration_error(confidence.detach().double().numpy(), right.numpy(), bins)


def fit_temperature(log_probabilities: torch.Tensor, labels: torch.Tensor) -> float:
    """The temperature minimising dev negative log-likelihood (a 1-D search: robust and exact enough)."""
    best_temperature, best_loss = 1.0, math.inf
    for temperature in torch.exp(torch.linspace(math.log(0.3), math.log(5.0), 120)).tolist():
        loss = float(torch.nn.functional.cross_entropy(log_probabilities / temperature, labels))
        if loss < best_loss:
            best_temperature, best_loss = temperature, loss
    return best_temperature


def calibrate(
    probabilities: Sequence[np.ndarray] | Sequence[torch.Tensor],
    labels: Sequence[Sequence[int]],
    languages: Sequence[str] | None = None,
    min_language_words: int = 8000,
) -> dict[str, Any]:
    """Mark biases (overall, and per language with enough dev words), temperature, and dev F1 and
    ECE before and after, from raw per-word probabilities. Languages place their marks
    differently often enough (English TED asks more questions than German parliament) that one
    bias for all leaves some of them over- or under-marked."""
    stacked = torch.cat([torch.as_tensor(p) for p in probabilities])
    gold = torch.tensor([label for document in labels for label in document])
    language_of = [
        lang for lang, doc in zip(languages or [""] * len(labels), labels, strict=True) for _ in doc
    ]
    known = gold >= 0
    stacked, gold = stacked[known], gold[known]
    language_of = [lang for lang, keep in zip(language_of, known.tolist(), strict=True) if keep]
    log_probabilities = torch.log(stacked.clamp_min(1e-9))
    bias = fit_bias(log_probabilities, gold)
    by_language: dict[str, list[float]] = {}
    per_word_bias = torch.tensor(bias).expand_as(log_probabilities).clone()
    for language in sorted(set(language_of) - {""}):
        chosen = torch.tensor([lang == language for lang in language_of])
        if int(chosen.sum()) < min_language_words:
            continue
        by_language[language] = fit_bias(log_probabilities[chosen], gold[chosen], start=bias)
        per_word_bias[chosen] = torch.tensor(by_language[language])
    biased = log_probabilities + per_word_bias
    temperature = fit_temperature(biased, gold)
    calibrated = torch.softmax(biased / temperature, dim=-1)
    zero = torch.zeros(len(bias))
    return {
        "temperature": round(temperature, 4),
        "mark_bias": bias,
        "mark_bias_by_language": by_language,
        "f1_before": round(100 * micro_f1(log_probabilities, gold, zero), 1),
        "f1_after": round(100 * micro_f1(biased, gold, zero), 1),
        "ece_before": round(expected_calibration_error(stacked, gold), 4),
        "ece_after": round(expected_calibration_error(calibrated, gold), 4),
        "dev_words": int(gold.numel()),
    }
