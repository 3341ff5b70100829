"""The product's marks on real speech, end to end: ``punctum punctuate`` on ASR-like captions with
their audio, as a user runs it, scored against the transcripts. Prints JSON.

Sets (``listener_sets``): ``ljspeech`` (the 32 LJSpeech clips joined, in cues of 10 words timed by
the recogniser) and ``real`` (the six recordings of ``audio/real``, four languages, cues of 10
words); ``ljspeech_clips`` (one cue per clip) on request. Each recording is written to a temporary
folder as an SRT of lowercase words without marks (the set's cues and times) and a 16 kHz WAV, and
a checkout's command line is run on them in its own process:
``python -m app punctuate IN.srt --media IN.wav --language L --apply all -o OUT.srt``, and again
with the checkout's text-only flag (``--no-audio``: the text model alone). The output's words are
read back (the same words; only marks and capitals differ) and scored as ``bench_listener`` scores:
F1 over comma, full stop and question mark at every gap, per recording and pooled over ``real``.

Comparing two commits: ``git worktree add /tmp/old <commit>`` and ``--checkout /tmp/old``; the sets
are always built by this repository's ``listener_sets``, so both commits read the same captions.

Run: `.venv/bin/python -m tests.benchmarks.bench_product_marks [--checkout DIR] [--python PATH]
[--sets ljspeech,real] [--media-only] [--out FILE.json]` (1 to 2 minutes on 2 cores once the
models are cached).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import soundfile

from app.align.alignment import align
from app.core.marks import MODEL_MARKS, mark_class
from app.core.metrics import punctuation_scores
from app.training.data import from_punctuated_text
from tests.benchmarks import cpu_flags, listener_sets
from tests.benchmarks.listener_sets import SAMPLE_RATE, SpeechSet

REPOSITORY = Path(__file__).resolve().parents[2]
SETS = {
    "ljspeech": listener_sets.ljspeech_in_cues_of_ten,
    "ljspeech_clips": listener_sets.ljspeech,
    "real": listener_sets.real,
}
#: The text-only flag, newest spelling first: the first the checkout's ``--help`` names is used.
TEXT_ONLY_FLAGS = (("--no-audio",), ("--audio", "text"), ("--no-listen",))


def f1(gold: Sequence[int], predicted: Sequence[int]) -> float:
    """As ``bench_listener.f1``: overall F1 (percent) over comma, full stop and question mark."""
    scores = punctuation_scores(
        [mark_class(MODEL_MARKS[g]) for g in gold], [mark_class(MODEL_MARKS[p]) for p in predicted]
    )
    return float(scores["overall"]["f1"])  # type: ignore[index]


def clock(seconds: float) -> str:
    millis = round(seconds * 1000)
    return f"{millis // 3_600_000:02}:{millis // 60_000 % 60:02}:{millis // 1000 % 60:02},{millis % 1000:03}"


def write_srt(recording: SpeechSet, path: Path) -> None:
    """One cue per cue of the set, its words as an ASR delivers them (they are lowercase, unmarked)."""
    blocks: list[str] = []
    gaps = zip(recording.cues, recording.times, recording.words, strict=True)
    for number, (_, cue) in enumerate(itertools.groupby(gaps, key=lambda gap: gap[0]), 1):
        words = list(cue)
        start, end = words[0][1]
        blocks.append(f"{number}\n{clock(start)} --> {clock(end)}\n{' '.join(w for _, _, w in words)}")
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")


def read_marks(path: Path, recording: SpeechSet) -> tuple[list[int], int]:
    """The ``MODEL_MARKS`` index after each of the set's words in a written SRT, and how many of the
    set's words were not found there as written (aligned by minimum edit distance if any differ)."""
    lines = [
        line
        for block in path.read_text(encoding="utf-8-sig").strip().split("\n\n")
        for line in block.splitlines()[2:]
    ]
    written = from_punctuated_text(" ".join(lines), recording.language, "bench", cased=False)
    if written.words == recording.words:
        return written.labels, 0
    alignment = align(written.words, recording.words)
    marks = [written.labels[h] if h >= 0 else 0 for h in alignment.ref_to_hyp]
    missing = sum(
        1 for r, h in enumerate(alignment.ref_to_hyp) if h < 0 or written.words[h] != recording.words[r]
    )
    return marks, missing


def text_only_flag(python: str, checkout: Path, env: dict[str, str]) -> list[str]:
    usage = subprocess.run(
        [python, "-m", "app", "punctuate", "--help"], cwd=checkout, env=env, capture_output=True, text=True
    ).stdout
    for flag in TEXT_ONLY_FLAGS:
        if all(part in usage for part in flag):
            return list(flag)
    raise SystemExit(f"bench_product_marks: no text-only flag in the punctuate help of {checkout}")


def punctuate(
    python: str, checkout: Path, env: dict[str, str], srt: Path, extra: list[str], out: Path
) -> tuple[float, str, int]:
    """Run the checkout's ``punctuate``; its seconds, what it printed on stderr and its exit code."""
    started = time.perf_counter()
    done = subprocess.run(
        [python, "-m", "app", "punctuate", str(srt), *extra, "--apply", "all", "-o", str(out)],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
    )
    return round(time.perf_counter() - started, 1), done.stderr.strip(), done.returncode


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkout", type=Path, default=REPOSITORY, help="the Punctum to run")
    parser.add_argument("--python", default=str(REPOSITORY / ".venv" / "bin" / "python"))
    parser.add_argument("--sets", default="ljspeech,real", help=f"comma-separated: {', '.join(SETS)}")
    parser.add_argument("--media-only", action="store_true", help="skip the text-only run")
    parser.add_argument(
        "--media-flags", default="", help="more options for the run with media, e.g. '--audio timings'"
    )
    parser.add_argument("--out", type=Path, help="also write the JSON there")
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=checkout, capture_output=True, text=True, check=True
    ).stdout.strip()
    text_flag = [] if args.media_only else text_only_flag(args.python, checkout, env)
    names = [name.strip() for name in args.sets.split(",") if name.strip()]
    result: dict[str, object] = {
        "checkout": str(checkout),
        "commit": commit,
        "python": args.python,
        "cpu_flags": cpu_flags(),
        "text_only_flag": " ".join(text_flag) or None,
    }
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_product_marks-") as scratch:
        folder = Path(scratch)
        for name in names:
            recordings = SETS[name]()
            if not recordings:
                print(f"bench_product_marks: no {name} recordings in the shared data", file=sys.stderr)
                continue
            by_recording: dict[str, dict[str, object]] = {}
            pooled: dict[str, list[int]] = {"gold": [], "with_media": [], "text": []}
            pooled_names: list[str] = []
            for recording in recordings:
                srt, wav = folder / f"{recording.name}.srt", folder / f"{recording.name}.wav"
                write_srt(recording, srt)
                soundfile.write(wav, recording.audio, SAMPLE_RATE)
                runs = {"with_media": ["--media", str(wav), *shlex.split(args.media_flags)]}
                if text_flag:
                    runs["text"] = text_flag
                row: dict[str, object] = {"gaps": len(recording.words), "language": recording.language}
                marks: dict[str, list[int]] = {}
                for run, flags in runs.items():
                    out = folder / f"{recording.name}.{run}.out.srt"
                    spent, stderr, code = punctuate(
                        args.python, checkout, env, srt, [*flags, "--language", recording.language], out
                    )
                    row["seconds_taken" if run == "with_media" else f"{run}_seconds_taken"] = spent
                    if stderr:
                        row[f"{run}_stderr"] = stderr.splitlines()[-20:]
                    if code != 0 or not out.is_file():
                        row[f"{run}_failed"] = code
                        continue
                    marks[run], missing = read_marks(out, recording)
                    row[f"{run}_f1"] = f1(recording.gold, marks[run])
                    if missing:
                        row[f"{run}_words_not_found"] = missing
                by_recording[recording.name] = row
                print(f"bench_product_marks: {name}/{recording.name} {row}", file=sys.stderr)
                if name == "real" and len(marks) == len(runs):
                    pooled["gold"] += recording.gold
                    pooled_names.append(recording.name)
                    for run in runs:
                        pooled[run] += marks[run]
            result[name] = by_recording
            if name == "real":
                result["real_pooled"] = {
                    "gaps": len(pooled["gold"]),
                    "recordings": pooled_names,
                    **{
                        f"{run}_f1": f1(pooled["gold"], pooled[run])
                        for run in ("with_media", "text")
                        if pooled[run]
                    },
                }
    result["seconds_taken"] = round(time.perf_counter() - started, 1)
    text = json.dumps(result, indent=2, ensure_ascii=False)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
