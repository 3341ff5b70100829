"""Every development gap's readings, gathered once into one cached ``.npz``: the data to fit (and
check) a calibrated probability that a suggestion is right.

Sets (never a test call or test half):
- ``ljspeech``, ``real``: ``listener_sets`` (captions with their audio; real speech, en/fr/de/es).
  The text model reads a ``Document`` of their cues, with the evidence ``gap_evidence`` finds in the
  cues' own times, as the analysis does; the listener hears along the words with the text model's
  reading written in (``services.listening``, ``bench_listener.listen``).
- ``earnings_dev``: the 5 Earnings-22 dev calls (``data.earnings_split``: 4432298, 4453225,
  4469836, 4470253, 4482249, as in the model card), text and word timings, no audio. Evidence: the
  word timings (``timed_gaps``, as ``eval_model`` reads them); cues of ``CUE_WORDS`` words, made
  only for ``cue_end`` and ``cue``.

One row per word gap (the gap after each word), recordings in order, sets concatenated. Arrays
(N rows unless said):
- ``set``, ``recording``, ``language``, ``word`` (str): the set, the recording or call, its
  two-letter language, the word as the model reads it (lowercase, no marks);
- ``word_index``, ``cue`` (int32): the word's and its cue's number within the recording (cue parity
  gives the cross-fitting folds ``bench_listener`` uses);
- ``gold`` (int8): the reference's mark after the word, an index into ``MODEL_MARKS``;
- ``word_casing`` (int8): the reference's casing class of the word (0 lower, 1 capitalised or
  mixed, 2 upper; -1 unknown or uncased, e.g. digits); ``word_capital`` (int8): 1 when that class
  is 1 or 2, 0 when 0, -1 unknown; ``gold_capital`` (int8): ``word_capital`` of the next word, -1 at
  a recording's last word;
- ``read`` (N x 6 float32): the text model's mark probabilities, with the gap evidence (what the
  product suggests from without audio); ``read_text`` (N x 6): the same without any evidence (what
  ``bench_listener`` fitted the shipped combination on); ``casing`` (N x 3 float32): the text
  model's casing probabilities of the word (lower, capitalised, upper), with the evidence;
- ``heard`` (N x 6 float32): the listener's mark distribution, NaN rows where it did not hear the
  gap (and everywhere on ``earnings_dev``);
- ``timed`` (bool): the gap has a timing vector; ``pause`` (float32): its pause in seconds, NaN
  where unknown; ``cue_end`` (bool): the word ends its cue;
- ``meta`` (0-d str): JSON of how and when the file was made.

Run: `.venv/bin/python -m tests.benchmarks.dev_readings [--out FILE] [--refresh]` (about 6 minutes on
2 cores, most of it listening); prints a JSON summary. ``load_dev_readings()`` gives the arrays.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from app.audio.gap_features import timed_gaps
from app.core.marks import MODEL_MARKS
from app.core.model import Casing, Document, casing_of
from app.ml.base_encoder import cache_root
from app.services.gap_evidence import GapEvidence, gap_evidence
from app.training import data as corpora
from app.training.speech_corpus import bare_cue
from tests.benchmarks import cpu_flags, listener_sets
from tests.conftest import ROOT, SHARED_DATA

if TYPE_CHECKING:
    from app.ml.listener import Listener
    from app.services.model import Punctuator

CUE_WORDS = listener_sets.CUE_WORDS
SETS = ("ljspeech", "real", "earnings_dev")


def default_path() -> Path:
    return cache_root() / "bench" / "dev_readings.npz"


@dataclass
class Recording:
    """What is read of one recording: its words with their gold, cues and gap evidence, and the
    audio when there is some (``speech``)."""

    set: str
    name: str
    language: str
    words: list[str]
    gold: list[int]
    casing: list[int]  # gold casing classes (data.casing_class, data.UNKNOWN)
    cues: list[int]
    evidence: GapEvidence
    pauses: list[float | None]
    speech: listener_sets.SpeechSet | None = field(default=None, repr=False)


def caption_document(speech: listener_sets.SpeechSet) -> Document:
    """Captions of a speech set: one cue per cue number, timed by its cue, the words alone (as
    ``formats.write_document`` writes them)."""
    cues = []
    for _, group in itertools.groupby(range(len(speech.words)), key=lambda i: speech.cues[i]):
        members = list(group)
        start, end = speech.times[members[0]]
        cues.append(bare_cue(len(cues) + 1, start, end, [speech.words[i] for i in members]))
    return Document(cues, "srt")


def speech_recordings(set_name: str, sets: list[listener_sets.SpeechSet]) -> list[Recording]:
    recordings = []
    for speech in sets:
        evidence = gap_evidence(caption_document(speech))
        pauses = [None if m.pause_ms is None else m.pause_ms / 1000 for m in evidence.measures or []]
        recordings.append(
            Recording(
                set_name,
                speech.name,
                speech.language,
                speech.words,
                list(speech.gold),
                speech.casing,
                list(speech.cues),
                evidence,
                pauses,
                speech,
            )
        )
    return recordings


def earnings_dev(data: Path = SHARED_DATA, part: str = "dev") -> list[Recording]:
    """The Earnings-22 calls of ``part`` (``dev``; ``test`` only to measure, never to fit)."""
    folder = data / "earnings22" / "force_aligned_nlp_references"
    if not folder.is_dir():
        return []
    recordings = []
    for path in corpora.earnings_split(folder)[part]:
        document = corpora.read_rev(path)
        words = document.words
        starts: list[float | None] = document.extras["starts"]  # type: ignore[assignment]
        ends: list[float | None] = document.extras["ends"]  # type: ignore[assignment]
        vectors = timed_gaps(words, starts, ends)
        following = [*starts[1:], None]
        pauses = [
            None if end is None or after is None else max(0.0, after - end)
            for end, after in zip(ends, following, strict=True)
        ]
        recordings.append(
            Recording(
                f"earnings_{part}",
                path.name.split(".")[0],
                "en",
                words,
                document.labels,
                document.casing,
                [i // CUE_WORDS for i in range(len(words))],
                GapEvidence(vectors, ["text" if v is None else "timing" for v in vectors]),
                pauses,
            )
        )
    return recordings


def _casing_classes(words: list[str], classes: list[int]) -> np.ndarray:
    return np.asarray(
        [
            c if c in (0, 1, 2) and casing_of(w) is not Casing.UNCASED else -1
            for w, c in zip(words, classes, strict=True)
        ],
        dtype=np.int8,
    )


def _nan_rows(rows: list[list[float] | None], width: int = len(MODEL_MARKS)) -> np.ndarray:
    return np.asarray([r if r is not None else [np.nan] * width for r in rows], dtype=np.float32).reshape(
        -1, width
    )


def read(recording: Recording, punctuator: Punctuator, listener: Listener | None) -> dict[str, np.ndarray]:
    """The rows of one recording; ``listener`` hears it when it has audio."""
    from app.ml.combination import shipped_combination
    from app.ml.listener import Listening

    count = len(recording.words)
    evidence = recording.evidence if punctuator.reads_timings else None
    marks, casing = punctuator.probabilities(recording.words, recording.language, evidence)
    text_only = punctuator.probabilities(recording.words, recording.language)[0] if evidence else marks
    heard: list[list[float] | None] = [None] * count
    if recording.speech is not None and listener is not None:
        listening = Listening(
            recording.words,
            recording.speech.times,
            recording.cues,
            recording.language,
            capitals=[c[1] + c[2] > 0.5 for c in casing],
            first_marks=[int(np.argmax(m)) for m in marks],
            read=[list(m) for m in marks],
            combination=shipped_combination(),  # the second pass writes what the product combines
        )
        heard = listener.read(listening, recording.speech.audio).marks
    word_casing = _casing_classes(recording.words, recording.casing)
    word_capital = np.where(word_casing < 0, -1, word_casing > 0).astype(np.int8)
    cues = np.asarray(recording.cues, dtype=np.int32)
    return {
        "set": np.full(count, recording.set),
        "recording": np.full(count, recording.name),
        "language": np.full(count, recording.language),
        "word": np.asarray(recording.words, dtype=str),
        "word_index": np.arange(count, dtype=np.int32),
        "cue": cues,
        "gold": np.asarray(recording.gold, dtype=np.int8),
        "word_casing": word_casing,
        "word_capital": word_capital,
        "gold_capital": np.append(word_capital[1:], np.int8(-1)).astype(np.int8),
        "read": np.asarray(marks, dtype=np.float32).reshape(count, -1),
        "read_text": np.asarray(text_only, dtype=np.float32).reshape(count, -1),
        "casing": np.asarray(casing, dtype=np.float32).reshape(count, -1),
        "heard": _nan_rows(heard),
        "timed": np.asarray([v is not None for v in recording.evidence.vectors], dtype=bool),
        "pause": np.asarray([np.nan if p is None else p for p in recording.pauses], dtype=np.float32),
        "cue_end": np.append(cues[1:] != cues[:-1], True) if count else np.zeros(0, dtype=bool),
    }


def build(path: Path, data: Path = SHARED_DATA) -> dict[str, np.ndarray]:
    from app.ml.listener import Listener
    from app.services.model import Punctuator

    started = time.perf_counter()
    recordings = [
        *speech_recordings("ljspeech", listener_sets.ljspeech(data)),
        *speech_recordings("real", listener_sets.real(data)),
        *earnings_dev(data),
    ]
    missing = [name for name in SETS if not any(r.set == name for r in recordings)]
    if missing:
        raise SystemExit(f"dev_readings: no shared data for {', '.join(missing)} under {data}")
    punctuator, listener = Punctuator(), Listener()
    parts = [read(recording, punctuator, listener) for recording in recordings]
    arrays = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    arrays["meta"] = np.asarray(
        json.dumps(
            {
                "made": time.strftime("%Y-%m-%d %H:%M:%S"),
                "commit": commit.strip(),
                "model": str(punctuator.check()),
                "model_reads_timings": punctuator.reads_timings,
                "marks": list(MODEL_MARKS),
                "cpu_flags": cpu_flags(),
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    with partial.open("wb") as file:
        np.savez_compressed(file, **arrays)  # type: ignore[arg-type]
    partial.replace(path)
    return arrays


def load_dev_readings(path: Path | str | None = None, refresh: bool = False) -> dict[str, np.ndarray]:
    """The cached readings (module docstring), built first when missing or ``refresh``."""
    path = Path(path) if path is not None else default_path()
    if path.resolve().is_relative_to(ROOT.resolve()):
        raise ValueError(f"{path}: the readings are a cache, never written inside the repository")
    if refresh or not path.is_file():
        build(path)
    with np.load(path, allow_pickle=False) as stored:
        return {key: stored[key] for key in stored.files}


def summary(arrays: dict[str, np.ndarray]) -> dict[str, object]:
    """Per set: gaps, recordings and F1-free checks (shares of gaps where the argmax is the gold)."""
    result: dict[str, object] = dict(json.loads(str(arrays["meta"])))
    for name in SETS:
        rows = arrays["set"] == name
        gold = arrays["gold"][rows]
        heard = arrays["heard"][rows]
        was_heard = ~np.isnan(heard).any(1)
        right = {
            key: round(float((arrays[key][rows].argmax(1) == gold).mean()), 4)
            for key in ("read", "read_text")
        }
        result[name] = {
            "gaps": int(rows.sum()),
            "recordings": len(set(arrays["recording"][rows])),
            "gold_none_share": round(float((gold == 0).mean()), 4),
            "timed_share": round(float(arrays["timed"][rows].mean()), 4),
            "heard_share": round(float(was_heard.mean()), 4),
            "read_right": right["read"],
            "read_text_right": right["read_text"],
            "heard_right": round(float((heard[was_heard].argmax(1) == gold[was_heard]).mean()), 4)
            if was_heard.any()
            else None,
            "gold_capital_known": int((arrays["gold_capital"][rows] >= 0).sum()),
        }
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=None, help=f"default: {default_path()}")
    parser.add_argument("--refresh", action="store_true", help="build again even when cached")
    args = parser.parse_args()
    path = args.out or default_path()
    print(json.dumps({"path": str(path), **summary(load_dev_readings(path, args.refresh))}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
