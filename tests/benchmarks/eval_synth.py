"""The model with audio versus text only, on synthesised speech of held-out text; prints JSON.

Held-out text: IWSLT17 tst2016 English (never trained on). Each document is cut into caption-like
cues of 8 words regardless of sentences, as recognisers cut them; each cue's punctuated text is
spoken by espeak-ng (so commas, periods and questions shape its pauses and pitch), its leading and
trailing silence trimmed, and the cues joined with the same 150 ms gap, so cue edges say nothing
about punctuation. The captions given to the model are the lowercase words without marks, with the
cue times; with audio, word times are estimated from speech activity and pauses and pitch measured,
exactly as for a user's video. Scores per mark, both ways, and the gain.

Needs espeak-ng (`apt install espeak-ng`) and the shared data.
Run: `.venv/bin/python -m tests.benchmarks.eval_synth [--words N] [--voice en-us]`
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile

from app.core.marks import MODEL_MARKS, mark_class
from app.core.metrics import punctuation_scores
from app.core.model import Cue, Document, Slot, Word
from app.ml import data as corpora
from app.services.punctuate import Punctuator, gap_evidence
from tests.conftest import SHARED_DATA

CUE_WORDS, GAP_SECONDS, RATE = 8, 0.15, 16_000


def speak(text: str, voice: str, folder: Path) -> np.ndarray:
    import librosa

    target = folder / "cue.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", "165", "-w", str(target), text], check=True)
    audio, rate = soundfile.read(target, dtype="float32")
    audio = librosa.resample(audio, orig_sr=rate, target_sr=RATE)
    trimmed, _ = librosa.effects.trim(audio, top_db=35)
    return trimmed


def synthesise(document: corpora.LabelledText, voice: str, folder: Path) -> tuple[Document, Path]:
    pieces: list[np.ndarray] = []
    cues: list[Cue] = []
    clock = 0.0
    gap = np.zeros(int(GAP_SECONDS * RATE), dtype=np.float32)
    for first in range(0, len(document.words), CUE_WORDS):
        words = document.words[first : first + CUE_WORDS]
        marks = [MODEL_MARKS[label] for label in document.labels[first : first + CUE_WORDS]]
        spoken = " ".join(w + m for w, m in zip(words, marks, strict=True))
        audio = speak(spoken, voice, folder)
        start, end = clock, clock + audio.size / RATE
        layout: list[str | tuple[Slot, int]] = []
        for position in range(len(words)):
            if position:
                layout.append(" ")
            layout += [(Slot.WORD, position), (Slot.MARK, position)]
        cues.append(
            Cue(
                len(cues) + 1,
                round(start * 1000),
                round(end * 1000),
                [Word(w) for w in words],
                " ".join(words),
                layout,
            )
        )
        pieces += [audio, gap]
        clock = end + GAP_SECONDS
    media = folder / f"{document.name or 'talk'}.wav".replace("/", "_")
    soundfile.write(media, np.concatenate(pieces), RATE)
    return Document(cues, "srt"), media


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--words", type=int, default=6000, help="words of held-out text to speak")
    parser.add_argument("--voice", default="en-us")
    parser.add_argument("--model")
    parser.add_argument("--data", default=str(SHARED_DATA))
    args = parser.parse_args()
    source = Path(args.data) / "iwslt17" / "IWSLT17.TED.tst2016.en-de.en.xml"
    if not source.is_file() or shutil.which("espeak-ng") is None:
        print("eval_synth: needs the shared data and espeak-ng", file=sys.stderr)
        return 3
    documents = corpora.read_mteval_xml(source, "en", "iwslt17")
    punctuator = Punctuator(args.model)
    if not punctuator.hears:
        print("eval_synth: this model reads text only", file=sys.stderr)
        return 3
    gold: list[str] = []
    with_audio: list[str] = []
    text_only: list[str] = []
    spoken_words = 0
    seconds = 0.0
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for labelled in documents:
            if spoken_words >= args.words:
                break
            labelled = corpora.LabelledText(
                labelled.words[: args.words - spoken_words],
                labelled.labels[: args.words - spoken_words],
                labelled.casing[: args.words - spoken_words],
                "en",
                labelled.source,
                labelled.name,
            )
            document, media = synthesise(labelled, args.voice, folder)
            seconds += document.duration / 1000
            spoken_words += len(labelled)
            words = [w.text for w in document.words()]
            evidence = gap_evidence(document, media)
            heard, _ = punctuator.probabilities(words, evidence.vectors, "en")
            plain, _ = punctuator.probabilities(words, None, "en")
            gold += [mark_class(MODEL_MARKS[label]) for label in labelled.labels]
            with_audio += [mark_class(MODEL_MARKS[int(np.argmax(p))]) for p in heard]
            text_only += [mark_class(MODEL_MARKS[int(np.argmax(p))]) for p in plain]
            print(
                f"{labelled.name}: {len(labelled)} words, {document.duration / 1000:.0f} s", file=sys.stderr
            )
    audio_scores = punctuation_scores(gold, with_audio)
    text_scores = punctuation_scores(gold, text_only)
    gain = {
        name: round(audio_scores[name]["f1"] - text_scores[name]["f1"], 1)  # type: ignore[index]
        for name in ("COMMA", "PERIOD", "QUESTION", "overall")
    }
    print(
        json.dumps(
            {
                "data": "IWSLT17 tst2016 en, spoken by espeak-ng " + args.voice,
                "words": spoken_words,
                "speech_minutes": round(seconds / 60, 1),
                "with_audio": audio_scores,
                "text_only": text_scores,
                "audio_gain_f1": gain,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
