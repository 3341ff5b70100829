"""Review effort under the triage rule (``app.core.triage``): how much a person is left to review,
and how right the gaps settled without them are. Prints JSON, and draws the curve as a PNG with ``--png``.

Sets: the held-out Earnings-22 test calls, with their word timings (no reference transcript: the
model alone), and IWSLT2011 test2011asr, the ASR words of TED talks, once with its human
transcript as the reference and once without. For each policy and precision target:
- ``settled_share``: of the gaps with any proposal, the share settled without a person;
- ``settled_error``: the share of those whose mark class (none, comma, period, question) is wrong;
- ``review_per_1000_words``: gaps left to a person per 1,000 words;
- ``residual_errors_per_1000_words``: what stays wrong after the person has reviewed the queue
  (settled wrongly, or a mark that no source proposed), per 1,000 words.
The operating point of a set is the lowest threshold whose settled gaps are at least 97% right.

Run: `.venv/bin/python -m tests.benchmarks.review_effort [--png resources/docs/review-effort.png]`
(the PNG is drawn only when ``--png`` names it: a run leaves the tracked copy alone unless asked).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from app.align.transfer import transfer
from app.core.marks import MODEL_MARKS, mark_class
from app.core.model import Source, Suggestion
from app.core.triage import TriagePolicy, gaps_of, triage
from app.formats.corpora import read_iwslt_xml, read_token_tags
from app.services.analysis import AudioUse
from app.services.model import Punctuator
from app.training import data as corpora
from app.training.scores import predict_documents
from tests.conftest import SAMPLE, SHARED_DATA

THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99, 1.01)  # 1.01: the model never alone
TARGET_ACCURACY = 0.97


def model_suggestions(probabilities: np.ndarray, first_id: int) -> list[Suggestion]:
    """What ``suggest`` proposes for unpunctuated words: the likeliest mark where it is not none."""
    suggestions = []
    for gap, row in enumerate(probabilities):
        best = int(row.argmax())
        if best:
            suggestions.append(
                Suggestion(
                    first_id + len(suggestions), gap, MODEL_MARKS[best], float(row[best]), Source.MODEL
                )
            )
    return suggestions


def measure(
    gold: list[str], suggestions: list[Suggestion], policy: TriagePolicy, has_reference: bool
) -> dict[str, float]:
    result = triage(suggestions, policy, has_reference)
    by_id = {s.id: s for s in suggestions}
    settled_marks = {by_id[i].gap: by_id[i].mark for i in result.accepted if by_id[i].casing is None}
    proposed = {s.gap for s in suggestions if s.casing is None}
    queued = {gap.index for gap in result.queue if gap.marks}
    wrong_settled = sum(mark_class(mark) != gold[gap] for gap, mark in settled_marks.items())
    missed = sum(1 for gap, mark in enumerate(gold) if mark and gap not in proposed)
    words = len(gold)
    settled = len(settled_marks)
    return {
        "gaps_proposed": len(proposed),
        "settled_share": round(settled / len(proposed), 4) if proposed else 0.0,
        "settled_error": round(wrong_settled / settled, 4) if settled else 0.0,
        "review_per_1000_words": round(1000 * len(queued) / words, 1),
        "residual_errors_per_1000_words": round(1000 * (wrong_settled + missed) / words, 1),
    }


def curve(gold: list[str], suggestions: list[Suggestion], has_reference: bool) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for threshold in THRESHOLDS:
        policy = TriagePolicy(
            agreement=True, precision_target=min(threshold, 1.0) if threshold <= 1 else None
        )
        rows.append(
            {
                "precision_target": threshold if threshold <= 1 else None,
                **measure(gold, suggestions, policy, has_reference),
            }
        )
    return rows


def operating_point(rows: list[dict[str, object]]) -> dict[str, object] | None:
    for row in rows:
        if row["settled_share"] and 1 - float(row["settled_error"]) >= TARGET_ACCURACY:  # type: ignore[arg-type]
            return row
    return None


def earnings(punctuator: Punctuator, root: Path) -> dict[str, object]:
    model = punctuator.load()
    split = corpora.earnings_split(root / "earnings22" / "force_aligned_nlp_references")
    documents = [corpora.read_rev(p) for p in split["test"]]
    probabilities = predict_documents(model, documents, model.settings)
    gold: list[str] = []
    suggestions: list[Suggestion] = []
    for document, probs in zip(documents, probabilities, strict=True):
        offset = len(gold)
        gold += [mark_class(MODEL_MARKS[label]) for label in document.labels]
        suggestions += [
            replace(s, gap=s.gap + offset) for s in model_suggestions(probs, len(suggestions) + 1)
        ]
    rows = curve(gold, suggestions, has_reference=False)
    return {
        "set": "earnings22_test_calls (with timings, no reference)",
        "words": len(gold),
        "curve": rows,
        "operating_point": operating_point(rows),
    }


def iwslt_asr(punctuator: Punctuator, root: Path, with_reference: bool) -> dict[str, object]:
    from app.ml.inference import predict_probabilities

    model = punctuator.load()
    asr = read_token_tags(root / "iwslt2011" / "test2011asr")
    gold = [mark_class(w.mark) for w in asr]
    captions = [replace(w, mark="") for w in asr]
    options = model.settings.inference_options("en")
    probabilities = predict_probabilities(model, [w.text.lower() for w in captions], options)[0]
    suggestions: list[Suggestion] = []
    if with_reference:
        reference = [
            w
            for seg in read_iwslt_xml(root / "iwslt2011" / "IWSLT12.TED.MT.tst2011.en-fr.en.xml")
            for w in seg
        ]
        suggestions = list(transfer(captions, reference, "en", first_id=1).suggestions)
    suggestions += model_suggestions(probabilities, len(suggestions) + 1)
    rows = curve(gold, suggestions, has_reference=with_reference)
    name = "iwslt2011_test2011asr " + ("with its reference transcript" if with_reference else "(model alone)")
    return {"set": name, "words": len(gold), "curve": rows, "operating_point": operating_point(rows)}


def bundled_sample(
    punctuator: Punctuator, folder: Path = SAMPLE, audio: AudioUse = AudioUse.LISTEN
) -> dict[str, object]:
    """The editor's queue for the bundled sample, predicted: its analysis (captions, reference,
    audio, the recogniser's word times beside it; ``audio``: the recogniser listening along the
    words by default), then the default policy of the triage rule. The editor shows this count
    after opening the sample with its reference."""
    from app.services.analysis import AnalysisRequest, analyse

    request = AnalysisRequest.from_file(
        folder / "sample.srt",
        media=folder / "sample.mp4",
        reference=folder / "reference.txt",
        timings=folder / "sample.words.json",
        audio=audio,
    )
    suggestions = analyse(request, punctuator).suggestions
    gaps = [g for g in gaps_of(suggestions) if g.pending]
    result = triage(suggestions, TriagePolicy(), has_reference=True)
    return {
        "file": "resources/sample/sample.srt with reference.txt, sample.mp4 and sample.words.json",
        "suggestions": len(suggestions),
        "gaps_with_a_proposal": len(gaps),
        "queue": len(result.queue),
        "disagreements_in_queue": sum(g.disagreement for g in result.queue),
    }


def draw(results: list[dict[str, object]], target: Path) -> None:
    """Review load against residual error, one line per set, with Qt offscreen (no plotting
    library needed)."""
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QPointF, QRectF, Qt
    from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QPainter, QPen

    app = QGuiApplication.instance() or QGuiApplication([])
    width, height, margin = 900, 560, 70
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    points = [
        (float(r["residual_errors_per_1000_words"]), float(r["review_per_1000_words"]))
        for result in results
        for r in result["curve"]
    ]  # type: ignore[union-attr]
    max_x = max(x for x, _ in points) * 1.1 or 1.0
    max_y = max(y for _, y in points) * 1.1 or 1.0
    plot = QRectF(margin, 30, width - 2 * margin, height - 30 - margin)

    def at(x: float, y: float) -> QPointF:
        return QPointF(plot.left() + plot.width() * x / max_x, plot.bottom() - plot.height() * y / max_y)

    painter.setPen(QPen(QColor("#333"), 1))
    painter.drawRect(plot)
    painter.setFont(QFont("Sans", 9))
    for step in range(6):
        x, y = max_x * step / 5, max_y * step / 5
        painter.drawText(at(x, 0) + QPointF(-10, 18), f"{x:.0f}")
        painter.drawText(at(0, y) + QPointF(-40, 4), f"{y:.0f}")
    painter.drawText(
        QRectF(0, height - 30, width, 20),
        Qt.AlignmentFlag.AlignCenter,
        "errors left after review, per 1,000 words (settled wrongly or never proposed)",
    )
    painter.save()
    painter.translate(18, height / 2 + 120)
    painter.rotate(-90)
    painter.drawText(0, 0, "gaps left to a person, per 1,000 words")
    painter.restore()
    colours = ["#1f3a5f", "#f2a541", "#2a9d8f", "#c44"]
    for number, result in enumerate(results):
        pen = QPen(QColor(colours[number % len(colours)]), 2)
        painter.setPen(pen)
        rows = result["curve"]  # type: ignore[index]
        line = [
            at(float(r["residual_errors_per_1000_words"]), float(r["review_per_1000_words"])) for r in rows
        ]  # type: ignore[union-attr]
        for start, end in itertools.pairwise(line):
            painter.drawLine(start, end)
        for point in line:
            painter.drawEllipse(point, 3, 3)
        painter.drawText(QPointF(plot.left() + 12, plot.top() + 20 + 18 * number), str(result["set"]))
    painter.end()
    target.parent.mkdir(parents=True, exist_ok=True)
    image.save(str(target))
    del app


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SHARED_DATA)
    parser.add_argument("--model", default=None)
    parser.add_argument(
        "--png",
        type=Path,
        default=None,
        help="draw the curve here (resources/docs/review-effort.png for the docs)",
    )
    args = parser.parse_args()
    punctuator = Punctuator(args.model)
    sample = bundled_sample(punctuator)
    if not (args.data / "earnings22").is_dir():
        print(json.dumps({"bundled_sample": sample}, indent=2))
        print(f"review_effort: no shared data at {args.data}", file=sys.stderr)
        return 3
    results = [
        earnings(punctuator, args.data),
        iwslt_asr(punctuator, args.data, with_reference=True),
        iwslt_asr(punctuator, args.data, with_reference=False),
    ]
    if args.png is not None:
        draw(results, args.png)
    report = {
        "target_accuracy": TARGET_ACCURACY,
        "png": str(args.png) if args.png is not None else None,
        "bundled_sample": sample,
        "sets": results,
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
