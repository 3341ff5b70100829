"""``punctum transcribe`` on this computer: speed, word error rate and punctuation; prints JSON.

Speed: the real-time factor (seconds spent per second of audio, decoding included) of each
``transcribe_media`` call, the recogniser loaded once beforehand (its load timed apart), on the
bundled sample (62 s of video), the two clips of the shared data's ``audio/faster_whisper``
(``jfk.flac``; ``multilingual.mp3``, English then French, the language detected once per file)
and the 32 LJSpeech clips together. The sample is the first call after loading, so it also
carries what the recogniser sets up on first use. The CPU's AVX flags and core count are
reported with it.

Word error rate: the 32 LJSpeech clips of the shared data (one reader, a book read aloud; public
domain), each transcribed as a file of its own with ``language="en"``, against the clips'
transcripts, both sides normalised alike (lowercase, apostrophes dropped, other punctuation made a
space, whitespace collapsed), overall over all clips with jiwer. The transcripts spell numbers out:
a number the recogniser writes in digits counts as errors (the words with digits are listed).
``wer_numbers_spelled_out`` reads both sides as the aligner does (``app.align.normalize.tokens``:
numbers in digits spelled out with num2words, "1455" as the year "fourteen fifty five").

Punctuation: on the recogniser's words, every word's gap scored (the last word of a clip too),
each clip a file of its own, the gaps of all clips pooled; scored with ``punctuation_scores`` as
the model's evaluations are (comma, period, question; overall is their micro-average). Readings:

- ``whisper_marks``: the marks the recogniser wrote after each word;
- ``punctum_on_whisper_words_and_times``: the recogniser's words without its marks and capitals
  (``strip_punctuation``), their times read back from the ``.words.json`` ``transcribe`` writes
  beside the SRT, Punctum's model's most probable mark at every gap;
- ``triage_both``: the recogniser's punctuated captions through ``punctum punctuate X.srt -o Y.srt
  --apply triage --timings X.words.json`` (its service, in this process), the marks of the file
  written: the recogniser's marks stay unless the model is at least as sure as triage's threshold
  of another; ``triage_both_caption_timings_only`` is the same without ``--timings``.

Gold labels: each clip's transcript is carried onto the recogniser's bare words by the reference
transfer of ``punctum transfer`` (``app.align.transfer``: minimum-edit-distance alignment, a
reference mark goes to the aligned caption gap when a word beside it was recognised correctly);
a gap it gives no mark to (none in the transcript, or an unaligned or misheard stretch) is gold
"no mark". The LJSpeech clips are cut from running text, so a clip often ends inside a sentence
with no mark: every reading that puts a period there is wrong. ``overall_f1_inside_clips`` scores
the gaps inside clips only.

Small (about 220 s of read speech, some 600 words): a sign of direction, not a figure to a tenth.
Run: `.venv/bin/python -m tests.benchmarks.bench_transcribe`
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jiwer
import numpy as np

from app.align.alignment import align
from app.align.normalize import tokens
from app.align.transfer import transfer
from app.core.marks import MODEL_MARKS, clean_mark, mark_class
from app.core.metrics import punctuation_scores
from app.core.model import Word
from app.formats import parse_document, read_document, write_document
from app.ml.transcriber import Recognition, Transcriber
from app.services.analysis import AnalysisRequest
from app.services.documents import attach_timing_file
from app.services.gap_evidence import gap_evidence
from app.services.model import Punctuator
from app.services.punctuate import PRECISION_TARGET, ApplyPolicy, punctuate_file
from app.services.suggestions import model_word
from app.services.transcribe import TranscriptOptions, open_recogniser, transcribe_media, words_file_for
from tests.benchmarks import add_recogniser_options, cpu_flags
from tests.conftest import ROOT, SHARED_DATA

NO_MARK = mark_class("")
READINGS = (
    "whisper_marks",
    "punctum_on_whisper_words_and_times",
    "punctum_listening_on_whisper_words_and_times",
    "triage_both",
    "triage_both_caption_timings_only",
    "triage_both_listening",
)


class _Kept:
    """The recogniser, keeping what it last heard: a clip's bare captions are cut from the same
    recognition as its punctuated ones rather than recognised a second time."""

    def __init__(self, transcriber: Transcriber) -> None:
        self.transcriber = transcriber
        self.last: Recognition | None = None

    def check_language(self, language: str | None) -> None:
        self.transcriber.check_language(language)

    def transcribe(self, audio: np.ndarray, language: str | None = None, *args: Any) -> Recognition:
        self.last = self.transcriber.transcribe(audio, language, *args)
        return self.last


class _Replay:
    """A recogniser that hears again what it heard before."""

    def __init__(self, recognition: Recognition) -> None:
        self.recognition = recognition

    def check_language(self, language: str | None) -> None:
        pass

    def transcribe(self, audio: np.ndarray, language: str | None = None, *args: Any) -> Recognition:
        return self.recognition


def normalised(text: str) -> str:
    """Lowercase, apostrophes dropped, other punctuation a space, whitespace collapsed."""
    text = re.sub(r"['’‘]", "", text.lower())
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


def _keys(words: Sequence[Word]) -> list[str]:
    return [" ".join(tokens(w.text, "en")) or w.text.lower() for w in words]


def marks_on(
    words: Sequence[Word], marked: Sequence[Word], unmatched: Counter[str], reading: str
) -> list[str]:
    """The mark class after each of ``words`` in another file of the same words (``marked``); the
    two are aligned when they differ (a word of one missing from the other gets no mark)."""
    if _keys(words) == _keys(marked):
        return [mark_class(w.mark) for w in marked]
    alignment = align(_keys(words), _keys(marked))
    unmatched[reading] += sum(1 for j in alignment.hyp_to_ref if j < 0) + alignment.deletions
    return [mark_class(marked[j].mark) if j >= 0 else NO_MARK for j in alignment.hyp_to_ref]


def overall_f1(gold: Sequence[str], predicted: Sequence[str]) -> float:
    overall: dict[str, float] = punctuation_scores(gold, predicted)["overall"]  # type: ignore[assignment]
    return overall["f1"]


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    began = time.perf_counter()
    result = call()
    return result, time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser()
    add_recogniser_options(parser)
    args = parser.parse_args()
    started = time.perf_counter()
    folder = SHARED_DATA / "audio" / "ljspeech"
    listing = folder / "transcripts_from_tacotron2_filelists.txt"
    clips = [SHARED_DATA / "audio" / "faster_whisper" / name for name in ("jfk.flac", "multilingual.mp3")]
    if not listing.is_file() or not all(clip.is_file() for clip in clips):
        print(
            "bench_transcribe: needs the shared data (audio/ljspeech, audio/faster_whisper)", file=sys.stderr
        )
        return 3
    transcriber, load_seconds = timed(lambda: open_recogniser(args.whisper, compute_type=args.compute_type))
    punctuator = Punctuator()
    _, punctuator_load_seconds = timed(punctuator.load)
    policy = ApplyPolicy("triage")
    speed: dict[str, object] = {}
    references: list[str] = []
    hypotheses: list[str] = []
    digits: list[str] = []
    spelled: tuple[list[str], list[str]] = ([], [])
    gold: list[str] = []
    found: dict[str, list[str]] = {reading: [] for reading in READINGS}
    inside: list[bool] = []
    unmatched: Counter[str] = Counter()
    languages: Counter[str] = Counter()
    gold_report = Counter({"reference_marks": 0, "carried": 0, "clips_below_match_rate": 0})
    skipped: Counter[str] = Counter()
    timing_gaps = 0
    clip_seconds = audio_seconds = 0.0
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        for media in [ROOT / "resources" / "sample" / "sample.mp4", *clips]:
            done, seconds = timed(
                lambda media=media: transcribe_media(media, work / f"{media.stem}.srt", transcriber)
            )
            speed[media.name] = {
                "audio_seconds": round(done.audio_seconds, 1),
                "seconds": round(seconds, 2),
                "real_time_factor": round(seconds / done.audio_seconds, 3),
                "language": done.language,
                "words": done.words,
                "cues": done.cues,
            }
        kept = _Kept(transcriber)
        (work / "bare").mkdir()
        for line in sorted(listing.read_text(encoding="utf-8").splitlines()):
            name, _, text = line.partition("|")
            media = folder / name
            if not media.is_file() or not text.strip():
                continue
            punctuated, bare = work / f"{media.stem}.srt", work / "bare" / f"{media.stem}.srt"
            done, seconds = timed(
                lambda media=media, out=punctuated: transcribe_media(
                    media, out, kept, TranscriptOptions("en")
                )
            )
            clip_seconds += seconds
            audio_seconds += done.audio_seconds
            assert kept.last is not None
            transcribe_media(media, bare, _Replay(kept.last), TranscriptOptions("en", strip_punctuation=True))
            heard = " ".join(w.text for w in kept.last.words)
            references.append(normalised(text))
            hypotheses.append(normalised(heard))
            digits += [w for w in heard.split() if any(c.isdigit() for c in w)]
            for side, said in zip(spelled, (text, heard), strict=True):
                side.append(" ".join(token for word in said.split() for token in tokens(word, "en")))

            # Gold: the transcript's marks carried onto the recogniser's bare words.
            document = read_document(bare)
            words = list(document.words())
            reference = list(parse_document(text.encode("utf-8"), "txt").words())
            carried = transfer(words, reference, "en")
            labels = [NO_MARK] * len(words)
            for suggestion in carried.suggestions:
                if suggestion.casing is None:
                    labels[suggestion.gap] = mark_class(suggestion.mark)
            gold += labels
            inside += [True] * (len(words) - 1) + [False]
            gold_report["reference_marks"] += sum(1 for w in reference if clean_mark(w.mark))
            gold_report["carried"] += sum(1 for label in labels if label != NO_MARK)
            marks_report = carried.report.get("marks")
            if isinstance(marks_report, dict):
                skipped.update(marks_report.get("skipped", {}))
            else:
                gold_report["clips_below_match_rate"] += 1

            # (a) the recogniser's own marks.
            found["whisper_marks"] += marks_on(
                words, list(read_document(punctuated).words()), unmatched, "whisper_marks"
            )
            # (b) the model on the bare words, with their times from the words file.
            attach_timing_file(document, words_file_for(bare), "en")
            evidence = gap_evidence(document, None)
            timing_gaps += sum(1 for kind in evidence.kinds if kind == "timing")
            probabilities = punctuator.probabilities(
                [model_word(w) for w in words], "en", evidence if punctuator.reads_timings else None
            )[0]
            found["punctum_on_whisper_words_and_times"] += [
                mark_class(MODEL_MARKS[int(np.argmax(p))]) for p in probabilities
            ]
            # (b') the same with the clip: the recogniser listens along its own words, and the two
            # readings are combined (`punctum punctuate X.srt --media CLIP`, every mark applied).
            listening = AnalysisRequest.from_file(
                bare, media=media, timings=words_file_for(bare), language="en"
            )
            heard_document = punctuate_file(listening, punctuator, ApplyPolicy("all", 0.0)).document
            found["punctum_listening_on_whisper_words_and_times"] += marks_on(
                words, list(heard_document.words()), unmatched, "punctum_listening_on_whisper_words_and_times"
            )
            # (c) the punctuated captions through `punctum punctuate --apply triage` (with the clip
            # listened to: the recogniser's marks, the text model's and the listener's together).
            for reading, timings, clip in (
                ("triage_both", words_file_for(punctuated), None),
                ("triage_both_caption_timings_only", None, None),
                ("triage_both_listening", words_file_for(punctuated), media),
            ):
                request = AnalysisRequest.from_file(punctuated, timings=timings, media=clip)
                outcome = punctuate_file(request, punctuator, policy)
                languages[str(outcome.report.language)] += 1
                output = work / f"{media.stem}.{reading}.srt"
                write_document(outcome.document, output)
                found[reading] += marks_on(words, list(read_document(output).words()), unmatched, reading)

    measured = jiwer.process_words(references, hypotheses)
    spelled_out = jiwer.process_words(*spelled)
    scores = {reading: punctuation_scores(gold, marks) for reading, marks in found.items()}
    chosen = [i for i, kept_gap in enumerate(inside) if kept_gap]
    f1 = {reading: overall_f1(gold, marks) for reading, marks in found.items()}
    speed["ljspeech_32_clips"] = {
        "audio_seconds": round(audio_seconds, 1),
        "seconds": round(clip_seconds, 2),
        "real_time_factor": round(clip_seconds / audio_seconds, 3),
    }
    result = {
        "benchmark": "transcribe",
        "whisper": args.whisper or "default",
        "compute_type": args.compute_type,
        "cpu_avx_flags": " ".join(cpu_flags()),
        "cores": os.cpu_count(),
        "recogniser_load_seconds": round(load_seconds, 2),
        "punctuation_model_load_seconds": round(punctuator_load_seconds, 2),
        "real_time_factor": speed,
        "wer": {
            "data": "LJSpeech clips in the shared data, each its own file, language en",
            "clips": len(references),
            "wer": round(100 * measured.wer, 2),
            "reference_words": measured.hits + measured.substitutions + measured.deletions,
            "recognised_words": measured.hits + measured.substitutions + measured.insertions,
            "substitutions": measured.substitutions,
            "deletions": measured.deletions,
            "insertions": measured.insertions,
            "recognised_words_with_digits": digits,
            "wer_numbers_spelled_out": round(100 * spelled_out.wer, 2),
        },
        "punctuation_f1": {
            "gaps": len(gold),
            "gold_classes": dict(sorted(Counter(gold).items())),
            "gold_labels": {**gold_report, "skipped_by_transfer": dict(sorted(skipped.items()))},
            "model_reads_timings": punctuator.reads_timings,
            "gaps_with_timing_evidence": timing_gaps,
            "triage_precision_target": PRECISION_TARGET,
            "triage_languages": dict(languages),
            "words_not_matched_between_files": dict(unmatched),
            **scores,
            "best": max(f1, key=f1.__getitem__),
            "overall_f1": f1,
            "gaps_where_the_marks_differ_from_whisper": {
                reading: sum(
                    1 for ours, theirs in zip(marks, found["whisper_marks"], strict=True) if ours != theirs
                )
                for reading, marks in found.items()
                if reading != "whisper_marks"
            },
            "overall_f1_inside_clips": {
                reading: overall_f1([gold[i] for i in chosen], [marks[i] for i in chosen])
                for reading, marks in found.items()
            },
        },
        "benchmark_seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
