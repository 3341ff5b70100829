"""How well a suggestion's confidence says whether it is right, and how much triage can settle by it;
prints JSON.

Data: every gap of the development sets (``dev_readings``: LJSpeech and ``audio/real`` with the
listener, the Earnings-22 dev calls with their word timings). A suggestion is a gap whose combined
reading chooses a mark (the captions have none), or a capital the casing head asks for; it is right
when the reference has that mark there (that capital on the word).

Cross-fitted: each recording's cues are split by parity; the readers' combination
(``bench_listener.fit``) and the calibration (a logistic model, ``app.ml.confidence``) are fitted on
one half of every recording and scored on the other, then the other way round, and the held-out
halves pooled. Reported per set and pooled: expected calibration error (15 bins), the share of
suggestions Punctum settles at the target (97%: per file, the surest first while their mean
confidence holds 0.97), how many of those are right and how many it expected wrong, the largest
share its ranking could settle at >= 97% right (surest first, all files pooled), the same with the
raw combined probability as the confidence, F1, and a reliability diagram (PNG).

``--fit`` fits the calibration on every gap and writes ``models/confidence/confidence.json``.
Run: `.venv/bin/python -m tests.benchmarks.bench_confidence [--fit] [--png FILE]`
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from app.core.bundled import confidence_dir
from app.core.marks import MODEL_MARKS, SENTENCE_END_CLASSES, mark_class
from app.core.metrics import punctuation_scores
from app.core.triage import surest_within
from app.ml.combination import Combination, shipped_combination
from app.ml.confidence import CAPITAL_INPUTS, MARK_INPUTS, Confidence, Logistic, capital_inputs, mark_inputs
from app.services.suggestions import CAPITAL_PROBABILITY
from tests.benchmarks import cpu_flags
from tests.benchmarks.bench_listener import fit as fit_combination
from tests.benchmarks.dev_readings import load_dev_readings

TARGET = 0.97
SENTENCE_ENDS = {k for k, mark in enumerate(MODEL_MARKS) if mark_class(mark) in SENTENCE_END_CLASSES}


def fit_logistic(inputs: np.ndarray, right: np.ndarray, l2: float = 1e-2) -> Logistic:
    """Weights and bias of most likely ``right`` (0/1) given ``inputs``, by Newton's method with a
    small L2 penalty on the weights (not the bias)."""
    x = np.hstack([inputs, np.ones((len(inputs), 1))])
    w = np.zeros(x.shape[1])
    penalty = np.full(x.shape[1], l2 * len(x) / 1000)
    penalty[-1] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(x @ w, -40, 40)))
        gradient = x.T @ (p - right) + penalty * w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + np.diag(penalty) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return Logistic(tuple(float(v) for v in w[:-1]), float(w[-1]))


def expected_calibration_error(p: np.ndarray, right: np.ndarray, bins: int = 15) -> float:
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    return float(
        sum(
            abs(p[which == b].mean() - right[which == b].mean()) * (which == b).sum()
            for b in range(bins)
            if (which == b).any()
        )
        / max(1, len(p))
    )


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
    parser.add_argument("--fit", action="store_true", help="fit on every gap and write the shipped file")
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
    heard = np.asarray(data["heard"], dtype=np.float64)
    known = ~np.isnan(heard).any(axis=1)
    parity = np.asarray(data["cue"]) % 2
    folds = [parity == 0, parity == 1]
    fitted: list[dict[str, object]] = []
    rows = np.flatnonzero(known)
    if args.fit:  # the combination Punctum ships
        combined[rows] = shipped_combination().combine_heard(data["read"][rows], heard[rows].tolist())
    else:  # the readers' combination fitted on the other half of the heard recordings
        for fold in folds:
            combination = _fit_combination(data, recordings, known, fold)
            fitted.append(combination.as_json())
            rows = np.flatnonzero(~fold & known)
            combined[rows] = combination.combine_heard(data["read"][rows], heard[rows].tolist())
    marks = _mark_rows(data, combined, heard, known)
    capitals = _capital_rows(data, combined)
    results: dict[str, object] = {"cpu_flags": cpu_flags(), "target": TARGET}
    if args.fit:
        shipped = Confidence(
            fit_logistic(marks["inputs"], marks["right"]), fit_logistic(capitals["inputs"], capitals["right"])
        )
        path = confidence_dir() / "confidence.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(shipped.as_json(), indent=2) + "\n", encoding="utf-8")
        print(json.dumps({"fitted_on": "every development gap", **shipped.as_json()}, indent=2))
        return 0
    for kind, rows in (("marks", marks), ("capitals", capitals)):
        p = np.zeros(len(rows["right"]))
        for fold in folds:
            train, test = fold[rows["gap"]], ~fold[rows["gap"]]
            model = fit_logistic(rows["inputs"][train], rows["right"][train])
            p[test] = [model(x) for x in rows["inputs"][test]]
        rows["p"] = p
        by_set: dict[str, object] = {}
        for name in [*sorted(set(rows["set"].tolist())), "pooled"]:
            chosen = rows["set"] == name if name != "pooled" else np.ones(len(p), dtype=bool)
            right = rows["right"][chosen]
            by_set[name] = {
                "suggestions": int(chosen.sum()),
                "right": round(100 * float(right.mean()), 1),
                "ece": round(expected_calibration_error(p[chosen], right), 4),
                "calibrated": settle(p[chosen], right, rows["file"][chosen]),
                "raw": settle(rows["raw"][chosen], right, rows["file"][chosen]),
            }
        results[kind] = by_set
    results["f1"] = _f1(data, combined)
    results["combinations_fitted"] = fitted
    if args.png:
        _draw(marks, capitals, Path(args.png))
    print(json.dumps(results, indent=2))
    return 0


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
    marks = _mark_rows(data, combined, heard, np.zeros(len(combined), dtype=bool))
    shipped = Confidence.from_json(
        json.loads((confidence_dir() / "confidence.json").read_text(encoding="utf-8"))
    )
    p = np.asarray([shipped.mark_right(x) for x in marks["inputs"]])
    return {
        "set": "Earnings-22 test calls, text and timings",
        "words": len(combined),
        "suggestions": len(p),
        "right": round(100 * float(marks["right"].mean()), 1),
        "ece": round(expected_calibration_error(p, marks["right"]), 4),
        "calibrated": settle(p, marks["right"], marks["file"]),
        "raw": settle(marks["raw"], marks["right"], marks["file"]),
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
            SimpleNamespace(
                text=data["read"][rows],
                first=[h.tolist() for h in heard],
                recording=SimpleNamespace(gold=np.asarray(data["gold"][rows])),
            )
        )
        keep.append(np.flatnonzero(fold[rows]))
    return fit_combination(readings, keep)  # type: ignore[arg-type]


def _mark_rows(
    data: dict[str, np.ndarray], combined: np.ndarray, heard: np.ndarray, known: np.ndarray
) -> dict[str, np.ndarray]:
    chosen = combined.argmax(1)
    gaps = np.flatnonzero(chosen != 0)
    inputs = [
        mark_inputs(
            int(chosen[g]),
            combined[g],
            data["read"][g],
            heard[g] if known[g] else None,
            _pause_feature(data, g),
            bool(data["cue_end"][g]),
            str(data["language"][g]),
        )
        for g in gaps
    ]
    return {
        "gap": gaps,
        "set": np.asarray(data["set"])[gaps],
        "file": np.asarray(data["recording"])[gaps],
        "inputs": np.asarray(inputs, dtype=np.float64).reshape(-1, len(MARK_INPUTS)),
        "right": (np.asarray(data["gold"])[gaps] == chosen[gaps]).astype(np.float64),
        "raw": combined[gaps, chosen[gaps]],
    }


def _pause_feature(data: dict[str, np.ndarray], gap: int) -> float | None:
    """The gap's pause as the model's gap vector encodes it (``app.audio.gap_features``)."""
    if not data["timed"][gap] or np.isnan(data["pause"][gap]):
        return None
    return float(np.log1p(10 * max(0.0, float(data["pause"][gap]))) / 3)


def _capital_rows(data: dict[str, np.ndarray], combined: np.ndarray) -> dict[str, np.ndarray]:
    casing = np.asarray(data["casing"], dtype=np.float64)
    capital = casing[:, 1] + casing[:, 2]
    same = np.asarray(data["recording"])[1:] == np.asarray(data["recording"])[:-1]
    after_end = np.zeros(len(capital), dtype=bool)  # export capitalises these: no suggestion
    after_end[1:] = same & np.isin(combined[:-1].argmax(1), list(SENTENCE_ENDS))
    first = np.ones(len(capital), dtype=bool)
    first[1:] = ~same
    known = np.asarray(data["word_capital"]) >= 0
    words = np.flatnonzero((capital > CAPITAL_PROBABILITY) & ~after_end & ~first & known)
    cue_start = np.zeros(len(capital), dtype=bool)
    cue_start[1:] = np.asarray(data["cue_end"])[:-1]
    inputs = [capital_inputs(float(capital[w]), bool(cue_start[w]), str(data["language"][w])) for w in words]
    return {
        "gap": words,
        "set": np.asarray(data["set"])[words],
        "file": np.asarray(data["recording"])[words],
        "inputs": np.asarray(inputs, dtype=np.float64).reshape(-1, len(CAPITAL_INPUTS)),
        "right": (np.asarray(data["word_capital"])[words] == 1).astype(np.float64),
        "raw": capital[words],
    }


def _f1(data: dict[str, np.ndarray], combined: np.ndarray) -> dict[str, float]:
    out = {}
    for name in sorted(set(data["set"].tolist())):
        rows = data["set"] == name
        gold = [mark_class(MODEL_MARKS[g]) for g in data["gold"][rows]]
        for what, probs in (("text", data["read"][rows]), ("combined", combined[rows])):
            scores = punctuation_scores(gold, [mark_class(MODEL_MARKS[k]) for k in probs.argmax(1)])
            out[f"{name}_{what}"] = float(scores["overall"]["f1"])  # type: ignore[index]
    return out


def _draw(marks: dict[str, np.ndarray], capitals: dict[str, np.ndarray], target: Path) -> None:
    """The reliability diagram: per bin of confidence, the share right, marks and capitals."""
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
    for number, (name, rows) in enumerate((("marks", marks), ("capitals", capitals))):
        colour = QColor(["#1f3a5f", "#f2a541"][number])
        painter.setPen(QPen(colour, 2))
        p, right = rows["p"], rows["right"]
        edges = np.linspace(0, 1, 11)
        which = np.clip(np.digitize(p, edges[1:-1]), 0, 9)
        points = [
            at(float(p[which == b].mean()), float(right[which == b].mean()))
            for b in range(10)
            if (which == b).sum() >= 5
        ]
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
