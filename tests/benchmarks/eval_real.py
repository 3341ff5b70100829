"""The model with audio versus text only, on real read speech; prints JSON.

Data: the LJSpeech clips in the shared data (one reader, a book read aloud; public domain). The
clips are consecutive passages, so they are joined in order into one recording, 150 ms apart, and
each clip becomes one cue of its words, lowercase and without marks. With audio, word times are
estimated inside each cue from speech activity and the pauses, pitch and frames measured, exactly as
for a user's video; text only, the same captions without media. Scored twice: every gap, and only
the gaps inside clips. At a clip's end the reader's pause was cut away when the corpus was clipped,
and the join puts back a fixed 150 ms, so there the audio shows a pause nobody made.

Four readings of the same captions: text only; with the media as Punctum reads it by default (the
captions' own timings; the audio only measured for people); listening (``--listen``: the acoustic
branch and word times estimated from speech); and listening to white noise of the same length in
place of the speech (which the poor-audio check must refuse, leaving the text path's answer).

This is small (about 220 seconds, some 600 words): read it as a sign of direction on a real voice,
not as a figure to compare to a tenth of a point.
Run: `.venv/bin/python -m tests.benchmarks.eval_real [--model DIR]`
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile

from app.audio.decode import SAMPLE_RATE, decode_audio
from app.core.marks import MODEL_MARKS, mark_class
from app.core.model import Document
from app.services.gap_evidence import gap_evidence
from app.services.model import Punctuator
from app.training.data import from_punctuated_text
from app.training.scores import punctuation_scores
from app.training.speech_corpus import CUE_GAP_SECONDS, bare_cue
from tests.conftest import SHARED_DATA


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    parser.add_argument("--data", default=str(SHARED_DATA))
    args = parser.parse_args()
    folder = Path(args.data) / "audio" / "ljspeech"
    listing = folder / "transcripts_from_tacotron2_filelists.txt"
    if not listing.is_file():
        print("eval_real: needs the shared data (audio/ljspeech)", file=sys.stderr)
        return 3
    punctuator = Punctuator(args.model)
    if not punctuator.hears:
        print("eval_real: this model reads text only", file=sys.stderr)
        return 3
    gold: list[int] = []
    inside: list[bool] = []  # whether the gap after each word lies inside its clip
    cues = []
    pieces: list[np.ndarray] = []
    clock = 0.0
    gap = np.zeros(int(CUE_GAP_SECONDS * SAMPLE_RATE), dtype=np.float32)
    for line in sorted(listing.read_text(encoding="utf-8").splitlines()):
        name, _, text = line.partition("|")
        if not (folder / name).is_file() or not text.strip():
            continue
        labelled = from_punctuated_text(text, "en", "ljspeech", name)
        audio = decode_audio(folder / name)
        cues.append(bare_cue(len(cues) + 1, clock, clock + audio.size / SAMPLE_RATE, labelled.words))
        gold += labelled.labels
        inside += [True] * (len(labelled.words) - 1) + [False]
        pieces += [audio, gap]
        clock += audio.size / SAMPLE_RATE + CUE_GAP_SECONDS
    document = Document(cues, "srt")
    words = [w.text for w in document.words()]
    speech = np.concatenate(pieces)
    noise = np.random.default_rng(0).normal(0, 0.1, speech.size).astype(np.float32)
    readings: dict[str, list[list[float]]] = {"text_only": punctuator.probabilities(words, "en")[0]}
    with tempfile.TemporaryDirectory() as scratch:
        for name, samples, listen in (
            ("media_default", speech, False),
            ("listening", speech, True),
            ("listening_to_noise", noise, True),
        ):
            media = Path(scratch) / f"{name}.wav"
            soundfile.write(media, samples, SAMPLE_RATE)
            evidence = gap_evidence(document, media, listen=listen)
            readings[name] = punctuator.probabilities(words, "en", evidence)[0]
    truth = [mark_class(MODEL_MARKS[label]) for label in gold]
    found = {
        name: [mark_class(MODEL_MARKS[int(np.argmax(p))]) for p in probs] for name, probs in readings.items()
    }
    result: dict[str, object] = {
        "data": "LJSpeech clips in the shared data, joined in order, one cue per clip",
        "words": len(words),
        "cues": len(cues),
        "speech_seconds": round(clock, 1),
    }
    for name, keep in (("all_gaps", [True] * len(truth)), ("gaps_inside_clips", inside)):
        chosen = [i for i, kept in enumerate(keep) if kept]
        scores = {
            reading: punctuation_scores([truth[i] for i in chosen], [marks[i] for i in chosen])
            for reading, marks in found.items()
        }
        result[name] = {
            **scores,
            "gain_over_text_only_f1": {
                reading: round(score["overall"]["f1"] - scores["text_only"]["overall"]["f1"], 1)  # type: ignore[index]
                for reading, score in scores.items()
                if reading != "text_only"
            },
        }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
