"""Precision, recall and F1 per punctuation class and overall, and slot error rate, as the
punctuation literature reports them (overall = micro-average over the non-empty classes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.core.marks import CLASS_NAMES, COMMA, PERIOD, QUESTION


@dataclass(frozen=True)
class Score:
    precision: float
    recall: float
    f1: float
    support: int

    def as_dict(self, digits: int = 1) -> dict[str, float | int]:
        rates = {name: round(100 * getattr(self, name), digits) for name in ("precision", "recall", "f1")}
        return rates | {"support": self.support}


def _score(true_positive: int, predicted: int, actual: int) -> Score:
    precision = true_positive / predicted if predicted else 0.0
    recall = true_positive / actual if actual else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Score(precision, recall, f1, actual)


def mark_counts(
    gold: Sequence[str], predicted: Sequence[str], classes: Sequence[str] = (COMMA, PERIOD, QUESTION)
) -> tuple[int, int, int]:
    """Marks of ``classes`` right, proposed, and in the reference."""
    right = sum(1 for g, p in zip(gold, predicted, strict=True) if g == p and g in classes)
    return right, sum(1 for p in predicted if p in classes), sum(1 for g in gold if g in classes)


def punctuation_scores(
    gold: Sequence[str],
    predicted: Sequence[str],
    classes: Sequence[str] = (COMMA, PERIOD, QUESTION),
    digits: int = 1,
) -> dict[str, object]:
    """Per-class and overall scores of predicted against gold classes (one per word gap)."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predictions")
    result: dict[str, object] = {
        CLASS_NAMES[mark]: _score(*mark_counts(gold, predicted, (mark,))).as_dict(digits) for mark in classes
    }
    right, proposed, total_gold = mark_counts(gold, predicted, classes)
    result["overall"] = _score(right, proposed, total_gold).as_dict(digits)
    # Slot error rate: substitutions, deletions and insertions of marks over the gold marks.
    errors = sum(1 for g, p in zip(gold, predicted, strict=True) if g != p and (g in classes or p in classes))
    result["SER"] = round(100 * errors / total_gold, digits) if total_gold else 0.0
    return result
