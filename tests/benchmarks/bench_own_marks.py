"""Transcribed captions punctuated again, and the recogniser's own marks as a third reading:
``punctum transcribe`` then ``punctum punctuate --media``, recording by recording; prints JSON.

Each development recording (``listener_sets``: the 32 LJSpeech clips joined, the six of
``audio/real``) is written as a 16 kHz WAV and run through the command line as a user would:

- ``whisper``: ``punctum transcribe`` (the recogniser's words with its own marks);
- ``text``: the same words without marks (``--strip-punctuation``) punctuated from the text alone
  (``punctuate --audio text --apply all``);
- ``text_and_listener``: those bare words punctuated with the media (``--media --apply all``);
- ``marked_with_media``: the transcribed captions, marks kept, punctuated with the media and their
  word times (``--media --timings X.words.json --apply all``), as the editor and batch do with
  what they transcribe.

Gold: the transcript's marks on the recognised words (minimum edit distance on plain words; a word
with no counterpart is gold "no mark"). F1 over comma, full stop and question mark, per recording
and pooled over ``audio/real``.

``--study`` reads the same words in this process (the text model and the listener on the bare
words in cues of 10, the recogniser's marks) and tries the recogniser's marks as a third reading:
the combined log-probabilities scaled, plus a bonus to the class the recogniser wrote (one for no
mark, one for a mark), fitted by likelihood (a grid, then coordinates) on one half of every
recording's cues and scored on the other, both ways. Not in the product: cross-fitted here it read
above the recogniser's marks alone (LJSpeech 73.9 against 72.5, ``audio/real`` pooled 66.4
against 64.9), but wired into ``punctuate`` (a bonus of 1.0 for no mark and 0.25 for a mark over
the combined reading scaled by 0.8, where captions carry a mark every 25 words) it read 70.6 and
62.6 end to end, against the recogniser's own 75.4 and 64.9, and lowered two recordings against
punctuating the transcribed captions as today (French preamble 54.2 -> 49.0, Spanish dedication
61.2 -> 57.1). As today (this benchmark, 2-core AVX-512): ``whisper`` 75.4 / 64.9,
``text`` 58.9 / 57.5, ``text_and_listener`` 68.1 / 64.0, ``marked_with_media`` 69.0 / 59.9
(LJSpeech / ``audio/real`` pooled): punctuating transcribed captions reads below their own marks.

Run: `.venv/bin/python -m tests.benchmarks.bench_own_marks [--study]` (about 6 and 2 minutes).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile

from app.align.alignment import align
from app.core.marks import model_class
from app.formats import read_document
from app.formats.cuetext import split_token
from tests.benchmarks import cpu_flags, listener_sets
from tests.benchmarks.bench_listener import f1
from tests.benchmarks.listener_sets import SpeechSet, plain_word
from tests.conftest import ROOT

PUNCTUM = [sys.executable, "-m", "app"]
STEPS = np.arange(-1.0, 4.01, 0.25)
SCALES = np.arange(0.4, 2.01, 0.1)


def run(*arguments: str) -> None:
    done = subprocess.run([*PUNCTUM, *arguments], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench_own_marks: {' '.join(arguments)}: {done.stderr.strip()}")


def marks_of(path: Path) -> tuple[list[str], list[int]]:
    words = list(read_document(path).words())
    return [w.text for w in words], [model_class(w.mark) for w in words]


def gold_on(words: list[str], recording: SpeechSet) -> list[int]:
    aligned = align([plain_word(w) for w in words], [plain_word(w) for w in recording.words])
    return [int(recording.gold[r]) if (r := aligned.hyp_to_ref[i]) >= 0 else 0 for i in range(len(words))]


def product(recording: SpeechSet, folder: Path) -> dict[str, object]:
    wav, marked, bare = folder / "speech.wav", folder / "marked.srt", folder / "bare.srt"
    soundfile.write(wav, recording.audio, listener_sets.SAMPLE_RATE)
    language = ["--language", recording.language]
    run("transcribe", str(wav), "-o", str(marked), *language)
    run("transcribe", str(wav), "-o", str(bare), "--strip-punctuation", *language)
    outputs = {"whisper": marked}
    for name, source, extra in (
        ("text", bare, ["--audio", "text"]),
        ("text_and_listener", bare, ["--media", str(wav)]),
        ("marked_with_media", marked, ["--media", str(wav), "--timings", str(folder / "marked.words.json")]),
    ):
        outputs[name] = folder / f"{name}.srt"
        run("punctuate", str(source), *extra, *language, "--apply", "all", "-o", str(outputs[name]))
    result: dict[str, object] = {}
    for name, path in outputs.items():
        words, marks = marks_of(path)
        result[name] = (gold_on(words, recording), marks)
    return result


def readings(
    recording: SpeechSet, transcriber: object, punctuator: object, listener: object
) -> dict[str, object]:
    """In this process: the recogniser's words and marks, the gold on them, the combined reading."""
    from app.ml.combination import shipped_combination
    from app.ml.listener import Listening

    recognition = transcriber.transcribe(recording.audio, recording.language)  # type: ignore[attr-defined]
    words, own, times = [], [], []
    for word in recognition.words:
        _, bare, mark = split_token(word.text)
        if bare:
            words.append(bare.lower())
            own.append(model_class(mark))
            times.append((word.start, word.end))
    marks, casing = punctuator.probabilities(words, recording.language)  # type: ignore[attr-defined]
    combination = shipped_combination()
    listening = Listening(
        words,
        times,
        [i // listener_sets.CUE_WORDS for i in range(len(words))],
        recording.language,
        [c[1] + c[2] > 0.5 for c in casing],
        [int(np.argmax(m)) for m in marks],
        read=[list(m) for m in marks],
        combination=combination,
    )
    heard = listener.read(listening, recording.audio).marks  # type: ignore[attr-defined]
    combined = combination.combine_heard(marks, heard)
    return {"gold": np.asarray(gold_on(words, recording)), "own": np.asarray(own), "combined": combined}


def _log_loss(
    sets: list[dict[str, object]], bonus: tuple[float, float], scale: float, keep: list[np.ndarray]
) -> float:
    total = 0.0
    for reading, kept in zip(sets, keep, strict=True):
        gold, own = reading["gold"], reading["own"]
        logits = third_reading(reading["combined"], own, bonus, scale)  # type: ignore[arg-type]
        logits -= np.log(np.exp(logits).sum(axis=1, keepdims=True))
        total -= float(logits[kept, gold[kept]].sum())  # type: ignore[index]
    return total


def fit(sets: list[dict[str, object]], keep: list[np.ndarray]) -> tuple[tuple[float, float], float]:
    none, mark, scale = 0.0, 0.0, 1.0
    for _ in range(4):
        none = float(min(STEPS, key=lambda v: _log_loss(sets, (v, mark), scale, keep)))
        mark = float(min(STEPS, key=lambda v: _log_loss(sets, (none, v), scale, keep)))
        scale = float(min(SCALES, key=lambda v: _log_loss(sets, (none, mark), v, keep)))
    return (none, mark), round(scale, 2)


def third_reading(
    combined: np.ndarray, own: np.ndarray, bonus: tuple[float, float], scale: float
) -> np.ndarray:
    logits = scale * np.log(np.maximum(combined, 1e-9))
    logits[np.arange(len(own)), own] += np.where(own == 0, *bonus)
    return logits


def study(recordings: list[SpeechSet]) -> dict[str, object]:
    from app.ml.listener import Listener
    from app.ml.transcriber import Transcriber
    from app.services.model import Punctuator

    transcriber, punctuator, listener = Transcriber(), Punctuator(), Listener()
    sets = [readings(r, transcriber, punctuator, listener) for r in recordings]
    everything = [np.arange(len(s["gold"])) for s in sets]  # type: ignore[arg-type]
    bonus, scale = fit(sets, everything)
    result: dict[str, object] = {"fitted_on_all": {"no_mark": bonus[0], "mark": bonus[1], "scale": scale}}
    chosen = [np.zeros(len(s["gold"]), dtype=int) for s in sets]  # type: ignore[arg-type]
    for fold in (0, 1):
        keep = [np.flatnonzero((np.arange(len(s["gold"])) // 10) % 2 == fold) for s in sets]  # type: ignore[arg-type]
        fold_bonus, fold_scale = fit(sets, keep)
        for s, picks in zip(sets, chosen, strict=True):
            held = (np.arange(len(picks)) // 10) % 2 != fold
            picks[held] = third_reading(s["combined"], s["own"], fold_bonus, fold_scale).argmax(axis=1)[held]  # type: ignore[arg-type]
    result["cross_fitted"] = {
        r.name: {
            "whisper": round(f1(s["gold"], s["own"]), 1),  # type: ignore[arg-type]
            "text_and_listener": round(f1(s["gold"], s["combined"].argmax(axis=1)), 1),  # type: ignore[arg-type,attr-defined]
            "all_three": round(f1(s["gold"], picks), 1),  # type: ignore[arg-type]
        }
        for r, s, picks in zip(recordings, sets, chosen, strict=True)
    }
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--study", action="store_true", help="the third reading, cross-fitted, in this process"
    )
    args = parser.parse_args()
    recordings = listener_sets.ljspeech() + listener_sets.real()
    if not recordings:
        print("bench_own_marks: needs the shared data (audio/ljspeech, audio/real)", file=sys.stderr)
        return 3
    if args.study:
        print(json.dumps({**study(recordings), "cpu_flags": cpu_flags()}, indent=2))
        return 0
    per: dict[str, dict[str, float]] = {}
    pooled: dict[str, tuple[list[int], list[int]]] = {}
    for recording in recordings:
        with tempfile.TemporaryDirectory(prefix="bench_own_marks-") as scratch:
            scored = product(recording, Path(scratch))
        per[recording.name] = {name: round(f1(*pair), 1) for name, pair in scored.items()}  # type: ignore[misc]
        print(f"bench_own_marks: {recording.name} {per[recording.name]}", file=sys.stderr)
        if recording.name != "ljspeech":
            for name, (gold, marks) in scored.items():  # type: ignore[misc]
                pooled.setdefault(name, ([], []))
                pooled[name][0].extend(gold)
                pooled[name][1].extend(marks)
    real = {name: round(f1(gold, marks), 1) for name, (gold, marks) in pooled.items()}
    print(json.dumps({"recordings": per, "real_pooled": real, "cpu_flags": cpu_flags()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
