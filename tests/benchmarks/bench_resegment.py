"""Cues cut again at sentence ends (``punctuate --media --resegment``) on the development speech;
prints JSON.

Sets (``listener_sets``): the six ``audio/real`` recordings and the 32 LJSpeech clips joined, each
as an ASR captions it: lowercase words without marks in cues of 10 words, timed by the
recogniser's words. Each is punctuated as ``punctum punctuate --media --apply all`` does it (the
text model, then the recogniser listening along the words, which also hears when each word is
said), then re-cut as ``--resegment`` does it. Per set and over all:

- cues before and after; the share ending at a sentence end by Punctum's own marks (what a viewer
  sees) and by the reference's (where the speaker's sentences really end); the share dangling a
  sentence's start into the next cue; cues over the limits of ``core.resegment.RECUT_RULES``
  (lines, 1 to 7 s, reading speed, the gap before the next cue) where more than one word is to blame;
- whether every word, mark and capital is the same as without re-cutting;
- the share of words whose times were heard;
- the cost: the seconds of the punctuate run and of re-cutting, and, in one run, the same punctuate
  run with the listener hearing no word times (the fastest of ``ROUNDS`` each, alternated).

Run: `.venv/bin/python -m tests.benchmarks.bench_resegment` (writes only to a temporary folder).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import soundfile

from app.core.marks import SENTENCE_END_CLASSES
from app.core.resegment import CutChecks
from app.formats import parse_document, write_document
from app.services.analysis import AnalysisRequest, AudioUse
from app.services.captions_export import recut_captions
from app.services.documents import render
from app.services.model import Punctuator
from app.services.punctuate import ApplyPolicy, PunctuateOutcome, punctuate_file
from tests.benchmarks import cpu_flags, listener_sets
from tests.benchmarks.dev_readings import _document

ROUNDS = 2


def _punctuate(
    captions: Path, media: Path, language: str, punctuator: Punctuator
) -> tuple[PunctuateOutcome, float]:
    request = AnalysisRequest.from_file(captions, media=media, language=language, audio=AudioUse.LISTEN)
    began = time.perf_counter()
    outcome = punctuate_file(request, punctuator, ApplyPolicy("all"))
    return outcome, time.perf_counter() - began


def _checks(checks: CutChecks) -> dict[str, Any]:
    return {
        "cues": checks.cues,
        "at_sentence_end": round(100 * checks.share_at_sentence_end, 1),
        "dangling_starts": round(100 * checks.dangling_starts / max(1, checks.cues), 1),
        "over_lines": checks.over_lines,
        "over_duration": checks.over_duration,
        "over_speed": checks.over_speed,
        "short_gaps": checks.short_gaps,
    }


def measure(
    speech: listener_sets.SpeechSet, folder: Path, with_times: Punctuator, without: Punctuator
) -> dict[str, Any]:
    captions, media = folder / f"{speech.name}.srt", folder / f"{speech.name}.wav"
    write_document(_document(speech), captions)
    soundfile.write(media, speech.audio, listener_sets.SAMPLE_RATE)
    runs: dict[bool, list[float]] = {True: [], False: []}
    outcome = None
    for _ in range(ROUNDS):
        outcome, seconds = _punctuate(captions, media, speech.language, with_times)
        runs[True].append(seconds)
        runs[False].append(_punctuate(captions, media, speech.language, without)[1])
    assert outcome is not None and outcome.measures is not None
    began = time.perf_counter()
    recut, told = recut_captions(outcome.document, outcome.measures, outcome.report.language)
    recut_seconds = time.perf_counter() - began
    plain = parse_document(render(outcome.document).encode(), "srt")
    again = parse_document(render(recut).encode(), "srt")
    same = [w.rendered() for w in again.words()] == [w.rendered() for w in plain.words()]
    last_words, count = [], 0
    for cue in again.cues:
        count += len(cue.words)
        last_words.append(count - 1)
    by_reference = sum(speech.gold[index] in SENTENCE_END_CLASSES for index in last_words)
    heard = sum(m.start_ms is not None for m in outcome.measures)
    return {
        "language": speech.language,
        "words": len(speech.words),
        "audio_seconds": round(speech.audio.size / listener_sets.SAMPLE_RATE, 1),
        "before": _checks(told.before),
        "after": _checks(told.after),
        "after_at_reference_sentence_end": round(100 * by_reference / max(1, len(again.cues)), 1),
        "words_marks_capitals_unchanged": same,
        "times_estimated": told.estimated,
        "words_heard": round(100 * heard / max(1, len(speech.words)), 1),
        "punctuate_seconds": round(min(runs[True]), 2),
        "punctuate_seconds_without_word_times": round(min(runs[False]), 2),
        "recut_seconds": round(recut_seconds, 3),
        "_checks": (told.before, told.after),
    }


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    from app.ml.listener import Listener

    sets = listener_sets.real() + listener_sets.ljspeech_in_cues_of_ten()
    if not sets:
        print(json.dumps({"error": "the shared data's audio sets are not there"}))
        return 1
    with_times, without = Punctuator(), Punctuator()
    without._listener = Listener(word_times=False)  # the same recogniser, hearing no word times
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        for speech in sets:
            results[speech.name] = measure(speech, Path(folder), with_times, without)
            print(f"{speech.name}: done", file=sys.stderr)
    before = after = CutChecks(0)
    for row in results.values():
        checks = row.pop("_checks")
        before, after = before + checks[0], after + checks[1]
    total = {
        key: round(sum(r[key] for r in results.values()), 2)
        for key in ("punctuate_seconds", "punctuate_seconds_without_word_times", "recut_seconds")
    }
    print(
        json.dumps(
            {
                "cpu_flags": cpu_flags(),
                "sets": results,
                "overall": {
                    "before": _checks(before),
                    "after": _checks(after),
                    "words_marks_capitals_unchanged": all(
                        r["words_marks_capitals_unchanged"] for r in results.values()
                    ),
                    **total,
                    "recut_share_of_punctuate": round(total["recut_seconds"] / total["punctuate_seconds"], 4),
                    "word_times_share_of_punctuate": round(
                        total["punctuate_seconds"] / total["punctuate_seconds_without_word_times"] - 1, 3
                    ),
                },
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
