"""The model with audio versus text only, on synthesised speech of held-out text; prints JSON.

Held-out text: IWSLT17 tst2016 English (never trained on). Each document is cut into caption-like
cues of 8 words regardless of sentences, as recognisers cut them; each cue's punctuated text is
spoken by a synthetic voice (espeak-ng, or Piper; commas, periods and questions shape its pitch), with a pause after each
word drawn from how long people pause before that mark (`app.training.speech_corpus.human_pause`, the
same as the training speech), its leading and trailing silence trimmed, and the cues joined with
the same 150 ms gap, so cue edges say nothing about punctuation. The captions given to the model are the lowercase words without marks, with the
cue times; with audio, word times are estimated from speech activity and pauses and pitch measured,
exactly as for a user's video. Scores per mark, both ways, and the gain.

Needs espeak-ng (`apt install espeak-ng`; Piper uses it too) and the shared data.
Run: `.venv/bin/python -m tests.benchmarks.eval_synth [--words N] [--voice en-us|piper]`
(`piper`: Piper's natural US-English voice, from the `speech` extra).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from app.core.marks import MODEL_MARKS, mark_class
from app.core.metrics import punctuation_scores
from app.services.gap_evidence import gap_evidence
from app.services.model import Punctuator
from app.training import data as corpora
from app.training.speech_corpus import PIPER, synthesise
from tests.conftest import SHARED_DATA

CUE_WORDS = 8


def audio_against_text(gold: list[str], with_audio: list[str], text_only: list[str]) -> dict[str, object]:
    """Scores of the gap classes found with audio and without, and the F1 audio adds per mark."""
    audio_scores = punctuation_scores(gold, with_audio)
    text_scores = punctuation_scores(gold, text_only)
    gain = {
        name: round(audio_scores[name]["f1"] - text_scores[name]["f1"], 1)  # type: ignore[index]
        for name in ("COMMA", "PERIOD", "QUESTION", "overall")
    }
    return {"with_audio": audio_scores, "text_only": text_scores, "audio_gain_f1": gain}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--words", type=int, default=6000, help="words of held-out text to speak")
    parser.add_argument("--voice", default="en-us", help="an espeak-ng voice, or piper")
    parser.add_argument("--seed", type=int, default=7, help="seed of the pauses drawn")
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
    pauses = random.Random(args.seed)
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
            document, media = synthesise(labelled, args.voice, folder, lambda: CUE_WORDS, pauses)
            seconds += document.duration / 1000
            spoken_words += len(labelled)
            words = [w.text for w in document.words()]
            evidence = gap_evidence(document, media, listen=True)  # the acoustic branch is what it measures
            heard, _ = punctuator.probabilities(words, "en", evidence)
            plain, _ = punctuator.probabilities(words, "en")
            gold += [mark_class(MODEL_MARKS[label]) for label in labelled.labels]
            with_audio += [mark_class(MODEL_MARKS[int(np.argmax(p))]) for p in heard]
            text_only += [mark_class(MODEL_MARKS[int(np.argmax(p))]) for p in plain]
            print(
                f"{labelled.name}: {len(labelled)} words, {document.duration / 1000:.0f} s", file=sys.stderr
            )
    print(
        json.dumps(
            {
                "data": "IWSLT17 tst2016 en, spoken by "
                + ("Piper (en_US-joe-medium)" if args.voice == PIPER else "espeak-ng " + args.voice),
                "words": spoken_words,
                "speech_minutes": round(seconds / 60, 1),
                **audio_against_text(gold, with_audio, text_only),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
