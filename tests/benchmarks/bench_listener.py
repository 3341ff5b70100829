"""The listener against the text model on real speech; prints JSON.

Sets (``listener_sets``): the 32 LJSpeech clips as one recording (one cue per clip) and the six
recordings of ``audio/real`` (four languages, cues of 10 words). For each: the text model alone, the
listener alone and the two combined, F1 over every gap (comma, full stop, question mark).

The combination is never scored on what it was fitted on: every recording's cues are split in two
by parity, the combination is fitted on one half of every recording (pooled) and scored on the
other, then the other way round, and the held-out halves are pooled. ``--fit`` fits it on all of
both sets and writes ``models/listener/combination.json`` (what Punctum ships).

Also: the triage curve (share of proposed gaps that settle against the share of those right) of
the text model's confidence and of the combined confidence, with and without requiring the two
readers to agree; the listener's speed (real-time factor) and the process's peak memory.

Run: `.venv/bin/python -m tests.benchmarks.bench_listener [--fit]` (about 5 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.core.bundled import listener_dir
from app.core.marks import MODEL_MARKS, mark_class
from app.core.metrics import punctuation_scores
from app.ml.combination import shipped_combination
from app.ml.listener import Listener, Listening
from app.services.model import Punctuator
from app.training.combination_fit import RecordingReadings, fit
from tests.benchmarks import add_recogniser_options, cpu_flags, listener_sets
from tests.benchmarks.listener_sets import SpeechSet


@dataclass
class Reading:
    recording: SpeechSet
    text: np.ndarray  # gaps x marks
    casing: list[list[float]]
    first: list[list[float] | None]  # the listener's reading (the text model's marks written in)
    windows: int = 0  # windows heard


def f1(gold: Sequence[int], predicted: Sequence[int]) -> float:
    scores = punctuation_scores(
        [mark_class(MODEL_MARKS[g]) for g in gold], [mark_class(MODEL_MARKS[p]) for p in predicted]
    )
    return float(scores["overall"]["f1"])  # type: ignore[index]


def listen(listener: Listener, reading: Reading) -> tuple[list[list[float] | None], float]:
    """The listener's reading of one recording (its windows heard kept in ``reading``), and the
    seconds it took."""
    recording = reading.recording
    started = time.perf_counter()
    hearing = listener.read(
        Listening(
            recording.words,
            recording.times,
            recording.cues,
            recording.language,
            capitals=[c[1] + c[2] > 0.5 for c in reading.casing],
            first_marks=[int(i) for i in reading.text.argmax(1)],
            read=reading.text.tolist(),
            combination=shipped_combination(),  # the second pass writes what the product combines
        ),
        recording.audio,
    )
    reading.windows = hearing.windows
    return hearing.marks, time.perf_counter() - started


def encoder_share(listener: Listener, readings: Sequence[Reading], seconds: float) -> dict[str, float]:
    """What the encoder costs of the listening: one encoder pass timed alone (the fastest of three,
    on a recording's first 29 s), times the windows heard, against the listening's seconds."""
    from app.ml.listening_windows import Window

    audio = readings[0].recording.audio
    passes = []
    for _ in range(3):
        began = time.perf_counter()
        listener.encode_window(audio, Window(0, 1, 0.0, 29.0))
        passes.append(time.perf_counter() - began)
    windows = sum(r.windows for r in readings)
    return {
        "seconds_per_pass": round(min(passes), 3),
        "windows": windows,
        "share_of_listening": round(min(passes) * windows / seconds, 2),
    }


def settle_curve(
    gold: np.ndarray, chosen: np.ndarray, score: np.ndarray, eligible: np.ndarray
) -> dict[str, object]:
    """Of the gaps proposed a mark (``chosen`` not "no mark"): the largest share that settles at
    95% and 97% right, taking the ``eligible`` ones in order of ``score``, surest first."""
    proposed = np.flatnonzero(chosen != 0)
    candidates = proposed[eligible[proposed]]
    order = candidates[np.argsort(-score[candidates])]
    right = np.cumsum(gold[order] == chosen[order])
    result: dict[str, object] = {"proposed_gaps": len(proposed)}
    for target in (0.95, 0.97):
        accurate = [n for n in range(1, len(order) + 1) if right[n - 1] / n >= target]
        settled = max(accurate, default=0)
        result[f"settled_share_at_{round(target * 100)}"] = round(100 * settled / max(1, len(proposed)), 1)
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--fit", action="store_true", help="fit on all of both sets and write the shipped file"
    )
    parser.add_argument("--keep", metavar="FILE.npz", help="also write every reading there, to study them")
    add_recogniser_options(parser)
    args = parser.parse_args()
    sets = {"ljspeech": listener_sets.ljspeech(), "real": listener_sets.real()}
    if not all(sets.values()):
        print("bench_listener: needs the shared data (audio/ljspeech, audio/real)", file=sys.stderr)
        return 3
    punctuator = Punctuator()
    listener = Listener(args.whisper, compute_type=args.compute_type)
    readings: list[Reading] = []
    seconds = 0.0
    audio_seconds = 0.0
    for recording in itertools.chain.from_iterable(sets.values()):
        marks, casing = punctuator.probabilities(recording.words, recording.language)
        reading = Reading(recording, np.asarray(marks), casing, [])
        reading.first, spent = listen(listener, reading)
        recording.gold = np.asarray(recording.gold)  # type: ignore[assignment]
        readings.append(reading)
        seconds += spent
        audio_seconds += len(recording.audio) / listener_sets.SAMPLE_RATE
    everything = [np.arange(len(r.recording.words)) for r in readings]
    pooled = [RecordingReadings(r.text, r.first, np.asarray(r.recording.gold)) for r in readings]
    if args.fit:
        shipped = fit(pooled, everything)
        path = listener_dir() / "combination.json"
        path.write_text(json.dumps(shipped.as_json(), indent=2) + "\n", encoding="utf-8")
        print(
            json.dumps(
                {"fitted_on": "ljspeech + real, every gap", "combination": shipped.as_json()}, indent=2
            )
        )
        return 0
    # Two folds by cue parity; each half's figures come from the combination fitted on the other.
    halves = [[np.asarray(r.recording.cues) % 2 == parity for r in readings] for parity in (0, 1)]
    heard = [r.first for r in readings]  # one pass: what the listener hears needs no combination
    final = [r.text.copy() for r in readings]
    fits = []
    for fold, held_out in zip(halves, reversed(halves), strict=True):
        combination = fit(pooled, [np.flatnonzero(k) for k in fold])
        fits.append(combination.as_json())
        for number, reading in enumerate(readings):
            probs = combination.combine_heard(reading.text, reading.first)
            for gap in np.flatnonzero(held_out[number]):
                final[number][gap] = probs[gap]
    if args.keep:
        np.savez_compressed(
            args.keep,
            **{
                f"{r.recording.name}.{what}": values
                for n, r in enumerate(readings)
                for what, values in (
                    ("gold", r.recording.gold),
                    ("cues", np.asarray(r.recording.cues)),
                    ("text", r.text),
                    ("first", np.asarray([h if h is not None else [np.nan] * 6 for h in r.first])),
                    ("heard", np.asarray([h if h is not None else [np.nan] * 6 for h in heard[n]])),
                    ("final", final[n]),
                )
            },
        )
    result: dict[str, object] = {
        "cpu_flags": cpu_flags(),
        "whisper": args.whisper or "default",
        "compute_type": args.compute_type,
        "combinations_fitted": fits,
    }
    for name, recordings in sets.items():
        numbers = [n for n, r in enumerate(readings) if r.recording in recordings]
        gold = np.concatenate([readings[n].recording.gold for n in numbers])
        text = np.concatenate([readings[n].text for n in numbers])
        alone = np.concatenate(
            [
                np.asarray(
                    [h if h is not None else t for h, t in zip(heard[n], readings[n].text, strict=True)]
                )
                for n in numbers
            ]
        )
        both = np.concatenate([final[n] for n in numbers])
        chosen, everywhere = both.argmax(1), np.ones(len(gold), dtype=bool)
        agree = (alone.argmax(1) == chosen) & (text.argmax(1) == chosen)
        rows = np.arange(len(gold))
        result[name] = {
            "gaps": len(gold),
            "f1_text": f1(gold, text.argmax(1)),
            "f1_listener": f1(gold, alone.argmax(1)),
            "f1_combined": f1(gold, both.argmax(1)),
            "by_recording": {
                readings[n].recording.name: {
                    "text": f1(readings[n].recording.gold, readings[n].text.argmax(1)),
                    "combined": f1(readings[n].recording.gold, final[n].argmax(1)),
                }
                for n in numbers
            },
            "triage_text": settle_curve(gold, text.argmax(1), text.max(1), everywhere),
            "triage_combined": settle_curve(gold, chosen, both.max(1), everywhere),
            # Settling only where both readers chose the mark, surest first by the product of their
            # probabilities (Punctum's own rule is the calibrated confidence: bench_confidence).
            "triage_readers_agree": settle_curve(
                gold, chosen, text[rows, chosen] * alone[rows, chosen], agree
            ),
            "readers_agree_share_of_proposed": round(100 * float(agree[chosen != 0].mean()), 1),
            "readers_agree_right": round(100 * float((gold == chosen)[agree & (chosen != 0)].mean()), 1),
        }
    result["speed"] = {
        "audio_seconds": round(audio_seconds, 1),
        "listening_seconds": round(seconds, 1),
        "times_faster_than_real_time": round(audio_seconds / seconds, 1),
        "encoder": encoder_share(listener, readings, seconds),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
