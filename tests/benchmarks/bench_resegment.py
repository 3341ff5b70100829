"""Cues cut again at sentence ends (``punctuate --resegment``) on the development sets; prints JSON.

Sets:

- with media, punctuated as ``punctum punctuate --media --apply all`` does it (the text model, then
  the recogniser listening along the words, which also hears when each word is said), then re-cut
  by the heard times: the six ``audio/real`` recordings and the 32 LJSpeech clips joined
  (``listener_sets``), each as an ASR captions it (lowercase words without marks in cues of 10
  words, timed by the recogniser's words); and the bundled sample with its own captions;
- with the words' own times, no media: the Earnings-22 development calls, in cues of 10 words
  timed by their words, with the calls' word times given as a timing file (``--timings``: given
  times win over heard ones), read as ``--audio timings`` reads them; two of the five calls have
  times for 2-4% of their words only and are left out (``MIN_TIMED``).

Per set and over all: cues before and after; the share ending at a sentence end by Punctum's own
marks (what a viewer sees) and by the reference's (where the speaker's sentences really end); the
share dangling a sentence's start into the next cue; cues over the limits of
``core.checks.STYLE_GUIDE_LIMITS`` (lines, 1 to 7 s, reading speed, the gap before the next cue) where
more than one word is to blame; whether every word, mark and capital is the same as without
re-cutting; the share of words with heard or given times. ``ceiling``: the share of cues that would
end at a sentence end if every sentence ended a cue of its own and took no more cues than its
characters need (two lines of 42): sentences of 40 words (LJSpeech's 19th-century prose, the UN
preamble, one sentence) cannot end most cues.

Cost, with media: the seconds of the punctuate run and of re-cutting, and the same punctuate run
with the listener hearing no word times (the fastest of ``ROUNDS`` each, alternated, in one run).

Run: `.venv/bin/python -m tests.benchmarks.bench_resegment` (writes only to a temporary folder).
``--outcomes DIR`` keeps each set's punctuated outcome in DIR and reads it back on the next run, so
a change to the re-cut alone is measured in seconds (the costs then report the first run's).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import soundfile

from app.core.audio_format import SAMPLE_RATE
from app.core.checks import STYLE_GUIDE_LIMITS
from app.core.cue_segmentation import ends_sentence
from app.core.cut_checks import CutChecks, cut_checks
from app.core.marks import SENTENCE_END_CLASSES
from app.core.model import Cue, Document
from app.core.sentences import starts_sentence
from app.core.weak_words import is_number, weak_words
from app.formats import parse_document, write_document
from app.services.analysis import AnalysisRequest, AudioUse
from app.services.captions_export import recut_captions
from app.services.documents import render
from app.services.model import Punctuator
from app.services.punctuate import ApplyPolicy, PunctuateOutcome, punctuate_file
from app.training.speech_corpus import bare_cue
from tests.benchmarks import cpu_flags, listener_sets
from tests.benchmarks.dev_readings import caption_document
from tests.conftest import SAMPLE, SHARED_DATA

ROUNDS = 2
#: Where punctuated outcomes are kept between runs (``--outcomes``), or None.
OUTCOMES: Path | None = None
CUE_WORDS = listener_sets.CUE_WORDS
#: Earnings-22 calls whose aligner placed fewer of their words than this are left out: cues of
#: 10 words with one time in 50 say nothing of where sentences are said.
MIN_TIMED = 0.9


def _punctuate(
    captions: Path,
    media: Path | None,
    language: str,
    punctuator: Punctuator,
    timings: Path | None = None,
    word_times: bool = True,
) -> tuple[PunctuateOutcome, float]:
    audio = AudioUse.LISTEN if media is not None else AudioUse.TIMINGS
    request = AnalysisRequest.from_file(
        captions, media=media, timings=timings, language=language, audio=audio, word_times=word_times
    )
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


def phrase_breaks(document: Document, language: str | None) -> dict[str, int]:
    """The cues' line breaks, those after a word read with the next (``core.weak_words``: an
    article, a possessive, a number...), and questions with another sentence after them on the
    same line (an answer joined to its question)."""
    weak = weak_words(language)
    breaks = after_weak = joined = 0
    for cue in document.cues:
        lines = [line.split() for line in cue.text().splitlines() if line.strip()]
        for line in lines[:-1]:
            breaks += 1
            last = line[-1]
            after_weak += last.lower() in weak or is_number(last)
        for line in lines:
            joined += sum(
                word.rstrip("\"'”’»)").endswith("?") and ends_sentence(word, after)
                for word, after in itertools.pairwise(line)
            )
    return {"line_breaks": breaks, "after_a_word_read_with_the_next": after_weak, "questions_joined": joined}


def ceiling(document: Document) -> tuple[int, int]:
    """(sentences, cues they need): every sentence in as few cues as its characters need."""
    words = list(document.words())
    sentences, cues, chars = 0, 0, -1
    for index, word in enumerate(words):
        chars += len(word.rendered()) + 1
        if index + 1 == len(words) or starts_sentence(words, index + 1):
            sentences += 1
            cues += math.ceil(chars / (STYLE_GUIDE_LIMITS.max_lines * STYLE_GUIDE_LIMITS.max_line_chars))
            chars = -1
    return sentences, cues


def recut_figures(outcome: PunctuateOutcome, gold: list[int] | None) -> dict[str, Any]:
    """What re-cutting ``outcome`` does (see the module's text)."""
    assert outcome.measures is not None
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
    timed = sum(
        m.start_ms is not None or w.start is not None
        for m, w in zip(outcome.measures, outcome.document.words(), strict=False)
    )
    # The limits of the cues the re-cut made; those that kept their cut (styled, or with times
    # that overlap another cue's) keep whatever they had.
    kept = {(c.start, c.end, c.text()) for c in plain.cues}
    made = [n for n, c in enumerate(again.cues) if (c.start, c.end, c.text()) not in kept]
    sentences, needed = ceiling(plain)
    figures: dict[str, Any] = {
        "words": plain.word_count,
        "before": _checks(told.before),
        "after": _checks(told.after),
        "phrases_before": phrase_breaks(plain, outcome.report.language),
        "phrases_after": phrase_breaks(again, outcome.report.language),
        "new_cues": len(made),
        "new_cues_over_limits": _checks(cut_checks(again, among=made)),
        "ceiling_at_sentence_end": round(100 * sentences / max(1, needed), 1),
        "words_marks_capitals_unchanged": same,
        "times_estimated": told.estimated,
        "words_timed": round(100 * timed / max(1, plain.word_count), 1),
        "recut_seconds": round(recut_seconds, 3),
        "_checks": (told.before, told.after, sentences, needed),
    }
    if gold is not None:
        at_end = sum(gold[index] in SENTENCE_END_CLASSES for index in last_words)
        figures["after_at_reference_sentence_end"] = round(100 * at_end / max(1, len(again.cues)), 1)
    return figures


def with_media(
    name: str,
    captions: Path,
    media: Path,
    language: str,
    gold: list[int] | None,
    punctuator: Punctuator,
) -> dict[str, Any]:
    kept = OUTCOMES / f"{name}.pickle" if OUTCOMES is not None else None
    if kept is not None and kept.exists():
        outcome, seconds = pickle.loads(kept.read_bytes())
        return {
            "language": language,
            "evidence": outcome.report.evidence,
            **recut_figures(outcome, gold),
            **seconds,
        }
    runs: dict[bool, list[float]] = {True: [], False: []}
    outcome = None
    for _ in range(ROUNDS):
        outcome, seconds = _punctuate(captions, media, language, punctuator)
        runs[True].append(seconds)
        runs[False].append(_punctuate(captions, media, language, punctuator, word_times=False)[1])
    assert outcome is not None
    seconds = {
        "punctuate_seconds": round(min(runs[True]), 2),
        "punctuate_seconds_without_word_times": round(min(runs[False]), 2),
    }
    if kept is not None:
        kept.write_bytes(pickle.dumps((outcome, seconds)))
    return {
        "language": language,
        "evidence": outcome.report.evidence,
        **recut_figures(outcome, gold),
        **seconds,
    }


def speech_set(speech: listener_sets.SpeechSet, folder: Path, punctuator: Punctuator) -> dict[str, Any]:
    captions, media = folder / f"{speech.name}.srt", folder / f"{speech.name}.wav"
    write_document(caption_document(speech), captions)
    soundfile.write(media, speech.audio, SAMPLE_RATE)
    return with_media(speech.name, captions, media, speech.language, list(speech.gold), punctuator)


def earnings_call(recording: Any, folder: Path, punctuator: Punctuator) -> dict[str, Any]:
    """A development call in cues of 10 words, with its words' own times as a timing file."""
    from app.training import data as corpora

    path = next(
        p
        for p in corpora.earnings_split(SHARED_DATA / "earnings22" / "force_aligned_nlp_references")["dev"]
        if p.name.startswith(recording.name)
    )
    rev = corpora.read_rev(path)
    starts: list[float | None] = rev.extras["starts"]  # type: ignore[assignment]
    ends: list[float | None] = rev.extras["ends"]  # type: ignore[assignment]
    timed = sum(start is not None for start in starts) / max(1, len(rev.words))
    if timed < MIN_TIMED:
        return {"skipped": f"only {100 * timed:.0f}% of its words have times"}
    cues: list[Cue] = []
    entries: list[dict[str, Any]] = []
    for first in range(0, len(rev.words), CUE_WORDS):
        stop = min(len(rev.words), first + CUE_WORDS)
        known = [
            (s, e)
            for s, e in zip(starts[first:stop], ends[first:stop], strict=True)
            if s is not None and e is not None
        ]
        begin = known[0][0] if known else (entries[-1]["end"] / 1000 if entries else 0.0)
        end = max(e for _, e in known) if known else begin + 0.1
        words = [w.lower().strip(".,?!") for w in rev.words[first:stop]]
        cues.append(bare_cue(len(cues) + 1, begin, max(end, begin + 0.001), words))
        for word, s, e in zip(words, starts[first:stop], ends[first:stop], strict=True):
            if s is not None and e is not None:
                entries.append({"word": word, "start": round(s * 1000), "end": round(e * 1000)})
    captions, timings = folder / f"{recording.name}.srt", folder / f"{recording.name}.words.json"
    write_document(Document(cues, "srt"), captions)
    timings.write_text(json.dumps(entries), encoding="utf-8")
    kept = OUTCOMES / f"earnings_{recording.name}.pickle" if OUTCOMES is not None else None
    if kept is not None and kept.exists():
        outcome, seconds = pickle.loads(kept.read_bytes())
    else:
        outcome, seconds = _punctuate(captions, None, "en", punctuator, timings)
        if kept is not None:
            kept.write_bytes(pickle.dumps((outcome, seconds)))
    return {
        "language": "en",
        **recut_figures(outcome, list(rev.labels)),
        "punctuate_seconds": round(seconds, 2),
    }


def main() -> int:
    global OUTCOMES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outcomes", type=Path, help="keep punctuated outcomes here and reuse them")
    OUTCOMES = parser.parse_args().outcomes
    if OUTCOMES is not None:
        OUTCOMES.mkdir(parents=True, exist_ok=True)
    from tests.benchmarks.dev_readings import earnings_dev

    speech = listener_sets.real() + listener_sets.ljspeech_in_cues_of_ten()
    calls = earnings_dev()
    if not speech and not calls:
        print(json.dumps({"error": "the shared data's sets are not there"}))
        return 1
    punctuator = Punctuator()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        for one in speech:
            results[one.name] = speech_set(one, Path(folder), punctuator)
            print(f"{one.name}: done", file=sys.stderr)
        results["sample"] = with_media(
            "sample", SAMPLE / "sample.srt", SAMPLE / "sample.mp4", "en", None, punctuator
        )
        for call in calls:
            results[f"earnings_{call.name}"] = earnings_call(call, Path(folder), punctuator)
            print(f"{call.name}: done", file=sys.stderr)
    groups = {
        "with_media": [r for r in results.values() if "punctuate_seconds_without_word_times" in r],
        "earnings_dev_given_times": [
            r for name, r in results.items() if name.startswith("earnings_") and "skipped" not in r
        ],
    }
    summary: dict[str, Any] = {}
    for group, rows in groups.items():
        if not rows:
            continue
        before = after = CutChecks(0)
        sentences = needed = 0
        for row in rows:
            b, a, s_count, n_count = row["_checks"]
            before, after, sentences, needed = before + b, after + a, sentences + s_count, needed + n_count
        summary[group] = {
            "before": _checks(before),
            "after": _checks(after),
            "ceiling_at_sentence_end": round(100 * sentences / max(1, needed), 1),
            "words_marks_capitals_unchanged": all(r["words_marks_capitals_unchanged"] for r in rows),
            "recut_seconds": round(sum(r["recut_seconds"] for r in rows), 3),
            "punctuate_seconds": round(sum(r["punctuate_seconds"] for r in rows), 2),
        }
        for side in ("phrases_before", "phrases_after"):
            summary[group][side] = {key: sum(r[side][key] for r in rows) for key in rows[0][side]}
        if group == "with_media":
            without_times = sum(r["punctuate_seconds_without_word_times"] for r in rows)
            summary[group]["punctuate_seconds_without_word_times"] = round(without_times, 2)
            summary[group]["word_times_share_of_punctuate"] = round(
                summary[group]["punctuate_seconds"] / without_times - 1, 3
            )
        summary[group]["recut_share_of_punctuate"] = round(
            summary[group]["recut_seconds"] / summary[group]["punctuate_seconds"], 4
        )
    for row in results.values():
        row.pop("_checks", None)
    limits = dataclasses.asdict(STYLE_GUIDE_LIMITS)
    print(
        json.dumps(
            {"cpu_flags": cpu_flags(), "limits": limits, "sets": results, "overall": summary}, indent=2
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
