"""A person reviewing, simulated, with the house style against without it.

The person reviews each file's queue in cue order (the pending gap nearest the start first) and
answers every gap put to them with the reference's class there: accept the candidate that has it,
turn the gap down when the reference has the captions' own mark there, or put the reference's mark
in. Files are reviewed in order as one project, as a person would work through a folder; with the
style, every answer re-reads the rest (``ReviewSession``, exactly as the editor does), without it
nothing learns. Triage settles by its target (0.97 unless ``--target``) in both.

Sets: the development speech (``audio/real``, the LJSpeech clips in cues of ten words; with their
audio, heard) and the Earnings-22 dev calls (word timings, no audio), each made into a kit in a
temporary folder; or any folder of the same shape given with ``--kit DIR`` (repeatable; the folders
are one project, in order): ``NAME.srt`` (unpunctuated captions), the media ``NAME.wav`` (or mp3,
m4a, mp4), optionally ``NAME.words.json`` (word times), and ``NAME.ref.txt`` (the punctuated
reference text).

Figures per set and pooled, with and without the style (shares as fractions):
- ``decisions_per_minute``: gaps put to the person (marks and capitals) per minute of media;
- ``mark_decisions_per_minute``: of those, the marks;
- ``wrong_per_minute``: marks left wrong after the review (settled wrongly, or no suggestion offered);
- ``settled_share``: of the mark gaps settled (by the rule or by the person), the rule's share;
  ``settled_precision``: of those the rule settled, the share right;
- ``f1``: micro F1 of the reviewed captions' marks against the reference (comma, full stop,
  question mark, exclamation mark, colon); ``names_f1``: F1 of their capitals inside sentences
  (names, "I"), as export writes them;
- ``curve``: decisions per tenth of each file (by word position), summed: the learning curve.
Each reviewed file's captions are written to ``--out DIR/with_style/NAME.srt`` and
``DIR/without_style/NAME.srt`` (a temporary folder unless given).

Run: `.venv/bin/python -m tests.benchmarks.bench_review [--sets real,ljspeech,earnings_dev]
[--kit DIR ...] [--out DIR] [--target 0.97] [--strength 1.0] [--analyses DIR]` (``--analyses``
keeps each file's analysis and reads it back on the next run); prints JSON
``{"pooled": R, "sets": {"<name>": R}, "cpu": ...}``, R = ``{"minutes", "without_style", "with_style"}``.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import soundfile

from app.align.alignment import align
from app.core.audio_format import SAMPLE_RATE
from app.core.marks import MODEL_MARKS, SENTENCE_END_CLASSES, model_class
from app.core.model import Status
from app.core.sentences import starts_sentence
from app.core.triage import PRECISION_TARGET, ReviewRow, TriagePolicy
from app.formats import parse_document, write_document
from app.ml import house_style
from app.ml.style_fit import PRIORS
from app.services.analysis import Analysis, AudioUse, analyse
from app.services.captions_export import as_exported
from app.services.model import Punctuator
from app.services.review import ReviewSession
from app.services.typography import render_mark
from app.training.data import from_punctuated_text
from tests.benchmarks import cpu_flags, listener_sets
from tests.benchmarks.dev_readings import caption_document, earnings_dev
from tests.conftest import SHARED_DATA

MEDIA_SUFFIXES = (".wav", ".mp3", ".m4a", ".mp4")
DEV_SETS = ("real", "ljspeech", "earnings_dev")


@dataclass
class Tally:
    """What reviewing some files came to."""

    minutes: float = 0.0
    decisions: int = 0
    mark_decisions: int = 0
    wrong: int = 0
    settled: int = 0
    settled_right: int = 0
    right_marks: int = 0  # F1 counts
    found_marks: int = 0
    gold_marks: int = 0
    right_names: int = 0  # capitals inside sentences ("names"), F1 counts
    found_names: int = 0
    gold_names: int = 0
    curve: list[int] = field(default_factory=lambda: [0] * 10)

    def add(self, other: Tally) -> None:
        for name in ("minutes", "decisions", "mark_decisions", "wrong", "settled", "settled_right"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("right_marks", "found_marks", "gold_marks", "right_names", "found_names", "gold_names"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.curve = [a + b for a, b in zip(self.curve, other.curve, strict=True)]

    def figures(self) -> dict[str, object]:
        minutes = max(self.minutes, 1e-9)
        precision = self.right_marks / self.found_marks if self.found_marks else 0.0
        recall = self.right_marks / self.gold_marks if self.gold_marks else 0.0
        return {
            "decisions_per_minute": round(self.decisions / minutes, 3),
            "mark_decisions_per_minute": round(self.mark_decisions / minutes, 3),
            "wrong_per_minute": round(self.wrong / minutes, 3),
            "settled_share": round(self.settled / max(1, self.settled + self.mark_decisions), 4),
            "settled_precision": round(self.settled_right / self.settled, 4) if self.settled else None,
            "settled": self.settled,
            "decisions": self.decisions,
            "wrong": self.wrong,
            "f1": round(200 * precision * recall / (precision + recall), 2) if precision + recall else 0.0,
            "names_f1": _f1(self.right_names, self.found_names, self.gold_names),
            "curve": self.curve,
        }


def _f1(right: int, found: int, gold: int) -> float:
    precision, recall = right / found if found else 0.0, right / gold if gold else 0.0
    return round(200 * precision * recall / (precision + recall), 2) if precision + recall else 0.0


def name_counts(session: ReviewSession, gold: list[int], capitals: list[int]) -> tuple[int, int, int]:
    """Capitals inside sentences (names, "I") in the reviewed captions as export writes them,
    against the reference's: (right, found, in the reference), over the words the reference has
    and that start a sentence in neither."""
    exported = list(as_exported(session.document, session.language).words())
    right = found = wanted = 0
    for index, word in enumerate(exported):
        starts = index == 0 or gold[index - 1] in SENTENCE_END_CLASSES or starts_sentence(exported, index)
        if capitals[index] < 0 or starts:
            continue
        has = word.text[:1].isupper()
        right += has and capitals[index] == 1
        found += has
        wanted += capitals[index] == 1
    return right, found, wanted


@dataclass
class KitFile:
    name: str
    captions: Path
    media: Path | None
    timings: Path | None
    reference: Path


def kit_files(folder: Path) -> list[KitFile]:
    files = []
    for captions in sorted(folder.glob("*.srt")):
        stem = captions.stem
        media = next(
            (folder / f"{stem}{s}" for s in MEDIA_SUFFIXES if (folder / f"{stem}{s}").is_file()), None
        )
        timings = folder / f"{stem}.words.json"
        reference = folder / f"{stem}.ref.txt"
        if not reference.is_file():
            print(f"bench_review: {captions}: no {reference.name}; skipped", file=sys.stderr)
            continue
        files.append(KitFile(stem, captions, media, timings if timings.is_file() else None, reference))
    return files


# --- the development sets as kits ---------------------------------------------------------------


def _reference_text(words: list[str], gold: list[int], language: str) -> str:
    return " ".join(w + render_mark(MODEL_MARKS[g], language) for w, g in zip(words, gold, strict=True))


def _casing_words(words: list[str], casing: list[int]) -> list[str]:
    return [
        w.capitalize() if c == 1 else (w.upper() if c == 2 else w)
        for w, c in zip(words, casing, strict=False)
    ]


def make_dev_kits(root: Path, names: list[str]) -> list[Path]:
    """The development sets written as kits under ``root``: one folder per set."""
    folders = []
    if "real" in names or "ljspeech" in names:
        speech = {"real": listener_sets.real() if "real" in names else []}
        speech["ljspeech"] = listener_sets.ljspeech_in_cues_of_ten() if "ljspeech" in names else []
        for set_name in ("real", "ljspeech"):
            if not speech[set_name]:
                continue
            folder = root / set_name
            folder.mkdir(parents=True, exist_ok=True)
            for item in speech[set_name]:
                write_document(caption_document(item), folder / f"{item.name}.srt")
                soundfile.write(folder / f"{item.name}.wav", item.audio, SAMPLE_RATE)
                words = _casing_words(item.words, item.casing) if item.casing else item.words
                (folder / f"{item.name}.ref.txt").write_text(
                    _reference_text(words, item.gold, item.language), encoding="utf-8"
                )
            folders.append(folder)
    if "earnings_dev" in names:
        recordings = earnings_dev()
        if recordings:
            folder = root / "earnings_dev"
            folder.mkdir(parents=True, exist_ok=True)
            for recording in recordings:
                starts, ends = _earnings_times(recording)
                call = listener_sets.SpeechSet(
                    recording.name, "en", recording.words, recording.gold, recording.cues,
                    _cue_times(recording.cues, starts, ends), None,  # type: ignore[arg-type]
                )  # fmt: skip
                write_document(caption_document(call), folder / f"{recording.name}.srt")
                (folder / f"{recording.name}.words.json").write_text(
                    json.dumps(
                        [
                            {"word": w, "start": s, "end": e}
                            for w, s, e in zip(recording.words, starts, ends, strict=True)
                            if s is not None and e is not None
                        ]
                    ),
                    encoding="utf-8",
                )
                words = _casing_words(recording.words, list(recording.casing or []))
                (folder / f"{recording.name}.ref.txt").write_text(
                    _reference_text(words, recording.gold, "en"), encoding="utf-8"
                )
            folders.append(folder)
    return folders


def _earnings_times(recording: object) -> tuple[list[float | None], list[float | None]]:
    from app.training import data as corpora

    folder = SHARED_DATA / "earnings22" / "force_aligned_nlp_references"
    path = next(folder.glob(f"{recording.name}*.nlp"))  # type: ignore[attr-defined]
    document = corpora.read_rev(path)
    return document.extras["starts"], document.extras["ends"]  # type: ignore[return-value]


def _cue_times(
    cues: list[int], starts: list[float | None], ends: list[float | None]
) -> list[tuple[float, float]]:
    spans: dict[int, tuple[float, float]] = {}
    last = 0.0
    for cue, start, end in zip(cues, starts, ends, strict=True):
        begin, stop = spans.get(cue, (start if start is not None else last, last))
        spans[cue] = (begin, max(stop, end if end is not None else begin))
        last = spans[cue][1]
    return [spans[c] for c in cues]


# --- the person ---------------------------------------------------------------------------------


def gold_of(captions: Path, reference: Path, language: str) -> tuple[list[int], list[int]]:
    """Per caption word: the reference's mark class after it and whether it takes a capital
    (1, 0; -1 unknown), by aligning the caption words to the reference's."""
    document = parse_document(captions.read_bytes(), "srt", captions)
    words = [listener_sets.plain_word(w.text) for w in document.words()]
    labelled = from_punctuated_text(reference.read_text(encoding="utf-8"), language, "kit")
    alignment = align(words, [listener_sets.plain_word(w) for w in labelled.words])
    marks = [labelled.labels[r] if r >= 0 else 0 for r in alignment.hyp_to_ref]
    capitals = [
        (1 if labelled.casing[r] in (1, 2) else 0 if labelled.casing[r] == 0 else -1) if r >= 0 else -1
        for r in alignment.hyp_to_ref
    ]
    return marks, capitals


def answer(session: ReviewSession, row: ReviewRow, gold: list[int], capitals: list[int]) -> None:
    """What a person who knows the reference does with one gap: its mark first, else the capital
    still pending there."""
    language = session.document.language or "en"
    pending = [s for s in row.marks if s.status is Status.PENDING]
    if not pending:
        capital = max((s for s in row.capitals if s.status is Status.PENDING), key=lambda s: s.confidence)
        if capitals[capital.gap] == 1:
            session.accept(capital.id)
        else:
            session.reject(capital.id)
        return
    wanted = gold[row.index]
    matching = [s for s in pending if model_class(s.mark) == wanted]
    if matching:
        session.accept_gap(max(matching, key=lambda s: s.confidence).id)
    elif wanted == model_class(session.document.word(row.index).mark):
        session.reject_gap(pending[0].id)
    else:
        session.change_mark(pending[0].id, render_mark(MODEL_MARKS[wanted], language))


def review(session: ReviewSession, gold: list[int], capitals: list[int], minutes: float) -> Tally:
    """The person goes through the queue in cue order until nothing is pending."""
    tally = Tally(minutes=minutes)
    answered: set[tuple[int, bool]] = set()
    words = session.document.word_count
    while True:
        rows = [r for r in session.queue() if r.pending and (r.index, not r.marks) not in answered]
        if not rows:
            break
        row = min(rows, key=lambda r: (r.index, not r.marks))
        answered.add((row.index, not row.marks))
        answer(session, row, gold, capitals)
        tally.decisions += 1
        tally.mark_decisions += bool(row.marks)
        tally.curve[min(9, row.index * 10 // max(1, words))] += 1
    final = [model_class(w.mark) for w in session.document.words()]
    settled_ids = session.settled_by_rule()
    settled = {s.gap for s in session.document.suggestions if s.id in settled_ids and s.casing is None}
    tally.settled = len(settled)
    tally.settled_right = sum(final[g] == gold[g] for g in settled)
    tally.wrong = sum(f != g for f, g in zip(final, gold, strict=True))
    tally.right_marks = sum(f == g and g != 0 for f, g in zip(final, gold, strict=True))
    tally.found_marks = sum(f != 0 for f in final)
    tally.gold_marks = sum(g != 0 for g in gold)
    tally.right_names, tally.found_names, tally.gold_names = name_counts(session, gold, capitals)
    return tally


def minutes_of(file: KitFile) -> float:
    if file.media is not None:
        info = soundfile.info(file.media) if file.media.suffix == ".wav" else None
        if info is not None:
            return float(info.duration) / 60
    document = parse_document(file.captions.read_bytes(), "srt", file.captions)
    return document.duration / 60000


def review_kits(
    kits: list[Path],
    out: Path,
    work: Path,
    target: float,
    configs: dict[str, float | None],
    punctuator: Punctuator,
    analyses: Path | None = None,
) -> tuple[dict[str, dict[str, Tally]], list[dict[str, object]]]:
    """The kits' files reviewed once per configuration (label: the style's strength, None for no
    style), each as one project in order: per kit, a tally per configuration, and a row per file."""
    name = "-".join(k.name for k in kits)
    tallies: dict[str, dict[str, Tally]] = {}
    per_file = []
    policy = TriagePolicy(precision_target=target)
    projects = {label: work / f"{name}-{label}.punctum" for label in configs}
    for kit in kits:
        kit_tallies = tallies.setdefault(kit.name, {label: Tally() for label in configs})
        for file in kit_files(kit):
            analysis: Analysis | None = None
            minutes = minutes_of(file)
            row: dict[str, object] = {"set": kit.name, "file": file.name, "minutes": round(minutes, 2)}
            for label, strength in configs.items():
                session = ReviewSession.open(
                    file.captions, file.media, project_path=projects[label], timings=file.timings
                )
                # ``--strength`` and ``--sweep`` scale the style's priors as shipped.
                session.priors = PRIORS.scaled(strength or 1.0)
                try:
                    if analysis is None:
                        analysis = _analysis(session, file, punctuator, analyses, row)
                    session.store_analysis(analysis)
                    session.learns = strength is not None
                    session.settle(policy)
                    gold, capitals = gold_of(file.captions, file.reference, session.language or "en")
                    started = time.perf_counter()
                    tally = review(session, gold, capitals, minutes)
                    row[label] = {
                        **tally.figures(),
                        "review_seconds": round(time.perf_counter() - started, 1),
                    }
                    if strength is not None:
                        row[f"{label}_style"] = session.style().summary()
                    (out / label).mkdir(parents=True, exist_ok=True)
                    session.export(out / label / f"{file.name}.srt")
                    kit_tallies[label].add(tally)
                finally:
                    session.close()
            per_file.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return tallies, per_file


def _analysis(
    session: ReviewSession,
    file: KitFile,
    punctuator: Punctuator,
    analyses: Path | None,
    row: dict[str, object],
) -> Analysis:
    """The file's analysis, as the editor makes it (heard where it has media), or as kept in
    ``analyses`` by an earlier run (``--analyses``: a change to the review alone is measured
    without listening again)."""
    kept = analyses / f"{file.name}.pickle" if analyses is not None else None
    if kept is not None and kept.exists():
        with kept.open("rb") as stream:
            return pickle.load(stream)  # type: ignore[no-any-return]  # written by this script
    audio = AudioUse.LISTEN if file.media is not None else AudioUse.TIMINGS
    started = time.perf_counter()
    analysis = analyse(session.analysis_request(audio), punctuator)
    row["analysis_seconds"] = round(time.perf_counter() - started, 1)
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        with kept.open("wb") as stream:
            pickle.dump(analysis, stream)
    return analysis


def report(without: Tally, with_style: Tally) -> dict[str, object]:
    return {
        "minutes": round(without.minutes, 2),
        "without_style": without.figures(),
        "with_style": with_style.figures(),
    }


def _point(tally: Tally) -> dict[str, object]:
    figures = tally.figures()
    return {k: figures[k] for k in ("decisions_per_minute", "wrong_per_minute", "settled_precision", "f1")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(DEV_SETS), help="development sets (comma-separated)")
    parser.add_argument("--kit", action="append", type=Path, default=[], help="a kit folder (repeatable)")
    parser.add_argument("--out", type=Path, help="where the reviewed captions go")
    parser.add_argument("--target", type=float, default=PRECISION_TARGET, help="triage's precision target")
    parser.add_argument("--strength", type=float, default=1.0, help="scale of the style's priors' spread")
    parser.add_argument(
        "--caution",
        type=float,
        default=house_style.CAUTION,
        help="posterior deviations off a raised confidence",
    )
    parser.add_argument(
        "--drop-at", type=float, default=house_style.DROP_AT, help="no-mark chance that drops a mark"
    )
    parser.add_argument(
        "--add-at", type=float, default=house_style.ADD_AT, help="no-mark chance under which one is added"
    )
    parser.add_argument("--analyses", type=Path, help="keep each file's analysis here, and read it back")
    parser.add_argument("--sweep", default="", help="more strengths to review with, e.g. 0.5,2 (the curve)")
    args = parser.parse_args(argv)
    house_style.CAUTION = args.caution
    house_style.DROP_AT, house_style.ADD_AT = args.drop_at, args.add_at
    work = Path(tempfile.mkdtemp(prefix="bench-review-"))
    os.environ.setdefault("PUNCTUM_DATA_DIR", str(work / "data"))
    out = args.out or work / "out"
    punctuator = Punctuator()
    if args.kit:
        groups = [list(args.kit)]
    else:
        names = [n for n in args.sets.split(",") if n]
        groups = [[folder] for folder in make_dev_kits(work / "kits", names)]
    configs: dict[str, float | None] = {"without_style": None, "with_style": args.strength}
    configs.update({f"with_style@{v}": float(v) for v in args.sweep.split(",") if v})
    pooled = {label: Tally() for label in configs}
    sets: dict[str, object] = {}
    curve: dict[str, dict[str, object]] = {}
    files: list[dict[str, object]] = []
    for kits in groups:
        tallies, per_file = review_kits(kits, out, work, args.target, configs, punctuator, args.analyses)
        files += per_file
        for kit_name, by_label in tallies.items():
            sets[kit_name] = report(by_label["without_style"], by_label["with_style"])
            for label, tally in by_label.items():
                pooled[label].add(tally)
                curve.setdefault(kit_name, {})[label] = _point(tally)
    for label, tally in pooled.items():
        curve.setdefault("pooled", {})[label] = _point(tally)
    result = {
        "pooled": report(pooled["without_style"], pooled["with_style"]),
        "strength_curve": curve,
        "sets": sets,
        "files": files,
        "target": args.target,
        "strength": args.strength,
        "caution": args.caution,
        "drop_at": args.drop_at,
        "add_at": args.add_at,
        "out": str(out),
        "cpu": cpu_flags(),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
