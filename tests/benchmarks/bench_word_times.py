"""How near the listener's word times fall to where words are known to start and end; prints JSON.

Known boundaries are edges of silence, found by energy in 10 ms frames (mean square, in dB):

- ``ljspeech``: the 32 LJSpeech clips (clean studio recordings) joined with 1.0 s of zeros between
  them, one cue per 10 words of a clip's transcript (lowercase, no marks, as ``listener_sets``
  reads it), each cue's time its clip's span shared evenly by its cues, as an ASR's segments
  roughly are. Truth: a clip's first word starts where the clip's first frame within 35 dB of its
  loudest frame begins, its last word ends where its last such frame ends.
- ``sample``: the bundled sample (Piper TTS, pauses of 0.3 s between sentences and 0.8 s between
  paragraphs) with its captions. Truth: every run of at least 0.25 s of frames more than 45 dB
  below the loudest frame that lies between two sentences of ``reference.txt``: the sentence's last
  word ends where the silence begins, the next sentence's first word starts where it ends. Silences
  are matched to sentence gaps by the nearest gap in ``sample.words.json``; those times came from
  faster-whisper's own word timestamps, not truth, and are reported against the heard times for
  information only.

The listener corrects its word edges with the audio's energy too (``app.ml.word_alignment``), by its
own rule (frames against the window's levels, pauses of 0.15 s); on digital silence both rules find
the same edges, so these figures say whether each pause went to the right words and each edge was
placed at it, not how an energy rule fares in noise.

Errors are absolute, in ms: median and 95th percentile of starts, ends and both, per set and
overall. Also the time the listener takes on both sets with word times and without, in one run (the
fastest of two, alternated).

Run: `.venv/bin/python -m tests.benchmarks.bench_word_times`
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.audio.decode import decode_audio
from app.core.audio_format import SAMPLE_RATE
from app.formats import read_document
from app.ml.listener import Hearing, Listener, Listening
from app.training.data import from_punctuated_text
from tests.benchmarks import add_recogniser_options, cpu_flags
from tests.benchmarks.listener_sets import plain_word
from tests.conftest import SAMPLE, SHARED_DATA, cue_words

FRAME = int(0.01 * SAMPLE_RATE)
CLIP_GAP_SECONDS = 1.0
#: Listening with times and without, alternated this many times each.
ROUNDS = 2
CUE_WORDS = 10
#: LJSpeech: a clip's speech is its frames within this of its loudest.
CLIP_SPEECH_DB = 35.0
#: The sample: silence is frames this far below the loudest, for at least this long.
SILENCE_DB, SILENCE_SECONDS = 45.0, 0.25


@dataclass
class Boundary:
    word: int
    edge: int  # 0: the word's start, 1: its end
    seconds: float


@dataclass
class Known:
    name: str
    listening: Listening
    audio: np.ndarray
    boundaries: list[Boundary]
    asr_times: list[tuple[float, float]] | None = None  # for information: another aligner's times


def levels(audio: np.ndarray) -> np.ndarray:
    """Each 10 ms frame's mean square, in dB."""
    count = len(audio) // FRAME
    frames = np.asarray(audio[: count * FRAME], dtype=np.float64).reshape(count, FRAME)
    return np.asarray(10 * np.log10(np.mean(frames**2, axis=1) + 1e-12))


def ljspeech(data: Path) -> Known | None:
    folder = data / "audio" / "ljspeech"
    listing = folder / "transcripts_from_tacotron2_filelists.txt"
    if not listing.is_file():
        return None
    words: list[str] = []
    times: list[tuple[float, float]] = []
    cues: list[int] = []
    boundaries: list[Boundary] = []
    pieces: list[np.ndarray] = []
    clock, first_cue = 0.0, 0
    for line in sorted(listing.read_text(encoding="utf-8").splitlines()):
        name, _, text = line.partition("|")
        if not (folder / name).is_file() or not text.strip():
            continue
        clip_words = from_punctuated_text(text, "en", "ljspeech", name).words
        audio = decode_audio(folder / name)
        level = levels(audio)
        speech = np.flatnonzero(level >= level.max() - CLIP_SPEECH_DB)
        boundaries.append(Boundary(len(words), 0, clock + speech[0] * FRAME / SAMPLE_RATE))
        boundaries.append(
            Boundary(len(words) + len(clip_words) - 1, 1, clock + (speech[-1] + 1) * FRAME / SAMPLE_RATE)
        )
        length = audio.size / SAMPLE_RATE
        pieces_of_clip = max(1, round(len(clip_words) / CUE_WORDS))
        for position in range(len(clip_words)):
            part = position * pieces_of_clip // len(clip_words)
            cue_span = (clock + length * part / pieces_of_clip, clock + length * (part + 1) / pieces_of_clip)
            times.append(cue_span)
            cues.append(first_cue + part)
        first_cue += pieces_of_clip
        words += clip_words
        pieces += [audio, np.zeros(int(CLIP_GAP_SECONDS * SAMPLE_RATE), dtype=np.float32)]
        clock += length + CLIP_GAP_SECONDS
    listening = Listening(words, times, cues, "en", [False] * len(words), [0] * len(words))  # read later
    return Known("ljspeech", listening, np.concatenate(pieces), boundaries)


def sample() -> Known:
    words, times, cues = cue_words(read_document(SAMPLE / "sample.srt"))
    asr = json.loads((SAMPLE / "sample.words.json").read_text(encoding="utf-8"))
    asr_times = [(item["start"] / 1000, item["end"] / 1000) for item in asr]
    if [plain_word(item["word"]) for item in asr] != [plain_word(w) for w in words]:
        raise SystemExit("bench_word_times: sample.words.json does not follow sample.srt")
    # The sentences' last words, by their counts in the reference (whose "12" the captions spell out).
    reference = (SAMPLE / "reference.txt").read_text(encoding="utf-8").split()
    reference_ends = [i for i, token in enumerate(reference) if token[-1] in ".?!"]
    matcher = difflib.SequenceMatcher(
        None, [plain_word(t) for t in reference], [plain_word(w) for w in words], autojunk=False
    )
    to_caption: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            to_caption[block.a + k] = block.b + k
    sentence_ends = [to_caption[i] for i in reference_ends if i in to_caption]
    audio = decode_audio(SAMPLE / "sample.mp4")
    level = levels(audio)
    quiet = level < level.max() - SILENCE_DB
    runs: list[tuple[float, float]] = []
    frame = 0
    while frame < len(quiet):
        if quiet[frame]:
            stop = frame
            while stop < len(quiet) and quiet[stop]:
                stop += 1
            if (stop - frame) * FRAME / SAMPLE_RATE >= SILENCE_SECONDS:
                runs.append((frame * FRAME / SAMPLE_RATE, stop * FRAME / SAMPLE_RATE))
            frame = stop
        frame += 1
    boundaries: list[Boundary] = []
    for last in sentence_ends:
        gap = (
            (asr_times[last][1] + asr_times[last + 1][0]) / 2 if last + 1 < len(words) else asr_times[last][1]
        )
        begin, end = min(runs, key=lambda run: abs((run[0] + run[1]) / 2 - gap))
        if not begin - 0.5 <= gap <= end + 0.5:
            continue
        boundaries.append(Boundary(last, 1, begin))
        if last + 1 < len(words):
            boundaries.append(Boundary(last + 1, 0, end))
    if runs and runs[0][0] == 0.0:  # the lead-in: the talk's first word starts where it ends
        boundaries.append(Boundary(0, 0, runs[0][1]))
    listening = Listening(words, times, cues, "en", [False] * len(words), [0] * len(words))
    return Known("sample", listening, audio, boundaries, asr_times)


def with_text_reading(known: Known) -> Known:
    """As Punctum listens: the text model's marks and capitals written into the forced text."""
    from app.services.model import Punctuator

    words = list(known.listening.words)
    marks, casing = Punctuator().probabilities(words, "en")
    capitals = [bool(row[1] + row[2] > 0.5) for row in casing]
    first_marks = [int(np.argmax(row)) for row in marks]
    known.listening = Listening(
        words, known.listening.times, known.listening.cues, "en", capitals, first_marks
    )
    return known


def _summary(errors: list[tuple[int, float]]) -> dict[str, object]:
    def stats(values: list[float]) -> dict[str, float | None]:
        if not values:
            return {"median_ms": None, "p95_ms": None}
        return {
            "median_ms": round(float(np.median(values)) * 1000, 1),
            "p95_ms": round(float(np.percentile(values, 95)) * 1000, 1),
        }

    return {
        "boundaries": len(errors),
        "starts": stats([e for edge, e in errors if edge == 0]),
        "ends": stats([e for edge, e in errors if edge == 1]),
        "all": stats([e for _, e in errors]),
    }


def errors_of(known: Known, hearing: Hearing) -> tuple[list[tuple[int, float]], int]:
    found: list[tuple[int, float]] = []
    unheard = 0
    for boundary in known.boundaries:
        times = hearing.word_times[boundary.word]
        if times is None:
            unheard += 1
            continue
        found.append((boundary.edge, abs(times[boundary.edge] - boundary.seconds)))
    return found, unheard


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SHARED_DATA, help="the shared data folder")
    add_recogniser_options(parser)
    args = parser.parse_args()
    sets = [with_text_reading(s) for s in (ljspeech(args.data), sample()) if s is not None]
    listener = Listener(args.whisper, compute_type=args.compute_type)
    listener.read(sets[-1].listening, sets[-1].audio)  # warm up: the first pass pays for the loading
    seconds = {False: np.inf, True: np.inf}
    hearings: dict[str, Hearing] = {}
    for with_times in (False, True) * ROUNDS:  # alternated, the fastest of each: timings wander
        began = time.perf_counter()
        for known in sets:
            hearings[known.name] = listener.read(known.listening, known.audio, word_times=with_times)
        seconds[with_times] = min(seconds[with_times], time.perf_counter() - began)
    results: dict[str, object] = {"cpu_flags": cpu_flags(), "target": {"median_ms": 50, "p95_ms": 200}}
    pooled: list[tuple[int, float]] = []
    for known in sets:
        hearing = hearings[known.name]
        found, unheard = errors_of(known, hearing)
        pooled += found
        report: dict[str, object] = {**_summary(found), "unheard": unheard}
        if known.asr_times is not None:
            differences = [
                abs(heard[edge] - asr[edge])
                for heard, asr in zip(hearing.word_times, known.asr_times, strict=True)
                if heard is not None
                for edge in (0, 1)
            ]
            report["median_ms_from_faster_whisper_words"] = round(float(np.median(differences)) * 1000, 1)
        results[known.name] = report
    results["overall"] = _summary(pooled)
    audio_seconds = sum(len(k.audio) for k in sets) / SAMPLE_RATE
    results["listening"] = {
        "audio_seconds": round(audio_seconds, 1),
        "without_times_seconds": round(seconds[False], 2),
        "with_times_seconds": round(seconds[True], 2),
        "ratio": round(seconds[True] / seconds[False], 3),
    }
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
