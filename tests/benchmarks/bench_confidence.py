"""How well a suggestion's confidence says whether it is right, and how much triage can settle by it;
prints JSON.

Data: every gap of the development sets (``dev_readings``: LJSpeech and ``audio/real`` with the
listener, the Earnings-22 dev calls with their word timings). A suggestion is a gap whose combined
reading chooses a mark (the captions have none), or a capital the casing head asks for; it is right
when the reference has that mark there (that capital on the word).

Cross-fitted: each recording's cues are split by parity; the readers' combination
(``app.training.combination_fit``) and the calibration (the logistic models of ``app.ml.confidence``, fitted
as ``app.training.confidence_fit`` fits what ships) are fitted on one half of every recording and
scored on the other, then the other way round, and the held-out halves pooled. Reported per set and
pooled: expected calibration error (``app.training.reliability``, 15 bins), the share of
suggestions Punctum settles at the target (97%: per file, the surest first while their mean
confidence holds 0.97), how many of those are right and how many it expected wrong, the largest
share its ranking could settle at >= 97% right (surest first, all files pooled), the same with the
raw combined probability as the confidence, F1, and a reliability diagram (PNG).

This only measures: ``punctum fit-confidence`` fits the shipped ``models/confidence/confidence.json``
on every gap.
Run: `.venv/bin/python -m tests.benchmarks.bench_confidence [--png FILE] [--test-calls]`
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

from app.core.marks import MODEL_MARKS, mark_class
from app.core.metrics import punctuation_scores
from app.core.triage import surest_within
from app.ml.combination import Combination
from app.ml.confidence import shipped_confidence
from app.training.combination_fit import RecordingReadings
from app.training.combination_fit import fit as fit_combination
from app.training.confidence_fit import (
    Suggestions,
    capital_suggestions,
    fit_logistic,
    heard_gaps,
    mark_suggestions,
)
from app.training.reliability import expected_calibration_error, reliability_bins
from tests.benchmarks import cpu_flags
from tests.benchmarks.dev_readings import load_dev_readings

TARGET = 0.97


def settle(p: np.ndarray, right: np.ndarray, files: np.ndarray, target: float = TARGET) -> dict[str, float]:
    """Punctum's own settling, file by file as ``app.core.triage`` does it (the surest first while
    their mean confidence holds the target), and the most a ranking by ``p`` could settle."""
    mine = np.zeros(len(p), dtype=bool)
    for name in set(files.tolist()):
        rows = np.flatnonzero(files == name)
        order = rows[np.argsort(-p[rows], kind="stable")]
        mine[order[: surest_within(p[order].tolist(), target)]] = True
    order = np.argsort(-p, kind="stable")
    running = np.cumsum(right[order]) / np.arange(1, len(order) + 1)
    reachable = max((n + 1 for n in range(len(order)) if running[n] >= target), default=0)
    return {
        "settled_share": round(100 * float(mine.mean()), 1),
        "settled_right": round(100 * float(right[mine].mean()), 1) if mine.any() else None,  # type: ignore[dict-item]
        "about_wrong": round(float((1 - p[mine]).sum()), 1),
        "actually_wrong": int((~right[mine].astype(bool)).sum()),
        "ranking_could_settle_share": round(100 * reachable / max(1, len(order)), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--png", metavar="FILE", help="draw the reliability diagram there")
    parser.add_argument(
        "--test-calls",
        action="store_true",
        help="measure the shipped calibration on the Earnings-22 test calls",
    )
    args = parser.parse_args()
    if args.test_calls:
        print(json.dumps({"cpu_flags": cpu_flags(), **_test_calls()}, indent=2))
        return 0
    data = load_dev_readings()
    recordings = sorted(set(data["recording"].tolist()))
    combined = np.asarray(data["read"], dtype=np.float64).copy()
    heard, known = heard_gaps(data)
    parity = np.asarray(data["cue"]) % 2
    folds = [parity == 0, parity == 1]
    fitted: list[dict[str, object]] = []
    for fold in folds:  # the readers' combination fitted on the other half of the heard recordings
        combination = _fit_combination(data, recordings, known, fold)
        fitted.append(combination.as_json())
        rows = np.flatnonzero(~fold & known)
        combined[rows] = combination.combine_heard(data["read"][rows], heard[rows].tolist())
    marks = mark_suggestions(data, combined, heard, known)
    capitals = capital_suggestions(data, combined)
    results: dict[str, object] = {"cpu_flags": cpu_flags(), "target": TARGET}
    held_out = {}
    for kind, suggestions in (("marks", marks), ("capitals", capitals)):
        p = np.zeros(len(suggestions.right))
        for fold in folds:
            train, test = fold[suggestions.at], ~fold[suggestions.at]
            model = fit_logistic(suggestions.inputs[train], suggestions.right[train])
            p[test] = [model(x) for x in suggestions.inputs[test]]
        held_out[kind] = p
        results[kind] = _by_set(suggestions, p)
    results["f1"] = _f1(data, combined)
    results["combinations_fitted"] = fitted
    if args.png:
        _draw(
            [("marks", marks.right, held_out["marks"]), ("capitals", capitals.right, held_out["capitals"])],
            Path(args.png),
        )
    print(json.dumps(results, indent=2))
    return 0


def _by_set(suggestions: Suggestions, p: np.ndarray) -> dict[str, object]:
    """Per set and pooled: how many, how many right, the ECE, and what triage settles by ``p``
    against by the readers' own probability."""
    by_set: dict[str, object] = {}
    for name in [*sorted(set(suggestions.set.tolist())), "pooled"]:
        chosen = suggestions.set == name if name != "pooled" else np.ones(len(p), dtype=bool)
        right, files = suggestions.right[chosen], suggestions.file[chosen]
        by_set[name] = {
            "suggestions": int(chosen.sum()),
            "right": round(100 * float(right.mean()), 1),
            "ece": round(expected_calibration_error(p[chosen], right), 4),
            "calibrated": settle(p[chosen], right, files),
            "raw": settle(suggestions.raw[chosen], right, files),
        }
    return by_set


def _test_calls() -> dict[str, object]:
    """The held-out Earnings-22 test calls, text and timings (no reference): what triage settles
    there with the shipped calibration, file by file, and how right it is."""
    from app.services.model import Punctuator
    from tests.benchmarks.dev_readings import earnings_dev, read

    punctuator = Punctuator()
    parts = [read(recording, punctuator, None) for recording in earnings_dev(part="test")]
    data = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    heard = np.full_like(data["read"], np.nan, dtype=np.float64)
    combined = np.asarray(data["read"], dtype=np.float64)
    marks = mark_suggestions(data, combined, heard, np.zeros(len(combined), dtype=bool))
    shipped = shipped_confidence()
    p = np.asarray([shipped.marks(x) for x in marks.inputs])
    return {
        "set": "Earnings-22 test calls, text and timings",
        "words": len(combined),
        "suggestions": len(p),
        "right": round(100 * float(marks.right.mean()), 1),
        "ece": round(expected_calibration_error(p, marks.right), 4),
        "calibrated": settle(p, marks.right, marks.file),
        "raw": settle(marks.raw, marks.right, marks.file),
    }


def _fit_combination(
    data: dict[str, np.ndarray], recordings: list[str], known: np.ndarray, fold: np.ndarray
) -> Combination:
    readings, keep = [], []
    for name in recordings:
        rows = np.flatnonzero((data["recording"] == name) & known)
        if len(rows) == 0:
            continue
        heard = data["heard"][rows]
        readings.append(
            RecordingReadings(data["read"][rows], [h.tolist() for h in heard], np.asarray(data["gold"][rows]))
        )
        keep.append(np.flatnonzero(fold[rows]))
    return fit_combination(readings, keep)


def _f1(data: dict[str, np.ndarray], combined: np.ndarray) -> dict[str, float]:
    out = {}
    for name in sorted(set(data["set"].tolist())):
        rows = data["set"] == name
        gold = [mark_class(MODEL_MARKS[g]) for g in data["gold"][rows]]
        for what, probs in (("text", data["read"][rows]), ("combined", combined[rows])):
            scores = punctuation_scores(gold, [mark_class(MODEL_MARKS[k]) for k in probs.argmax(1)])
            out[f"{name}_{what}"] = float(scores["overall"]["f1"])  # type: ignore[index]
    return out


def _draw(kinds: list[tuple[str, np.ndarray, np.ndarray]], target: Path) -> None:
    """The reliability diagram: per tenth of confidence holding five or more, the share right, of
    each kind (its name, right or not, the confidence held out)."""
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QPointF, QRectF, Qt
    from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QPainter, QPen

    app = QGuiApplication.instance() or QGuiApplication([])
    size, margin = 560, 60
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    plot = QRectF(margin, 20, size - margin - 20, size - margin - 20)

    def at(x: float, y: float) -> QPointF:
        return QPointF(plot.left() + plot.width() * x, plot.bottom() - plot.height() * y)

    painter.setPen(QPen(QColor("#333"), 1))
    painter.drawRect(plot)
    painter.setPen(QPen(QColor("#aaa"), 1, Qt.PenStyle.DashLine))
    painter.drawLine(at(0, 0), at(1, 1))
    painter.setFont(QFont("Sans", 9))
    painter.setPen(QPen(QColor("#333"), 1))
    for step in range(6):
        painter.drawText(at(step / 5, 0) + QPointF(-8, 16), f"{step / 5:.1f}")
        painter.drawText(at(0, step / 5) + QPointF(-30, 4), f"{step / 5:.1f}")
    painter.drawText(
        QRectF(0, size - 28, size, 20), Qt.AlignmentFlag.AlignCenter, "confidence (cross-fitted)"
    )
    for number, (name, right, p) in enumerate(kinds):
        colour = QColor(["#1f3a5f", "#f2a541"][number])
        painter.setPen(QPen(colour, 2))
        points = [at(b.confidence, b.right) for b in reliability_bins(p, right, bins=10) if b.count >= 5]
        for start, end in itertools.pairwise(points):
            painter.drawLine(start, end)
        for point in points:
            painter.drawEllipse(point, 3, 3)
        painter.drawText(QPointF(plot.left() + 10, plot.top() + 18 + 16 * number), f"{name}: share right")
    painter.end()
    target.parent.mkdir(parents=True, exist_ok=True)
    image.save(str(target))
    del app


if __name__ == "__main__":
    sys.exit(main())
