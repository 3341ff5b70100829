"""The real-speech development sets for anything that listens, as captions with their audio.

- ``ljspeech``: the 32 LJSpeech clips joined in order (150 ms apart), one cue per clip of its words,
  lowercase and without marks.
- ``real``: the six recordings of ``audio/real`` (four languages). They come without timings, so
  the transcript's words are aligned to the recogniser's word times (minimum edit distance) and cut
  into cues of 10 words; the recognition is cached beside the other caches.

Each recording is a ``SpeechSet``: its words, their gold marks (``MODEL_MARKS`` indices), the cue of
each word with the cue's times, the decoded audio, the language and the words' gold casing classes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.align.alignment import align
from app.audio.decode import decode_audio
from app.core.audio_format import SAMPLE_RATE
from app.ml.base_encoder import cache_root
from app.training.data import from_punctuated_text
from app.training.speech_corpus import CUE_GAP_SECONDS
from tests.conftest import SHARED_DATA

REAL_FILES = {
    "un_preamble_en.mp3": "en",
    "un_preamble_fr.mp3": "fr",
    "anchors_en.mp3": "en",
    "introduction_fr.m4a": "fr",
    "simplicissimus_de.mp3": "de",
    "dedication_es.mp3": "es",
}
CUE_WORDS = 10


@dataclass
class SpeechSet:
    name: str
    language: str
    words: list[str]
    gold: list[int]
    cues: list[int]  # per word
    times: list[tuple[float, float]]  # per word: its cue's start and end, seconds
    audio: np.ndarray
    casing: list[int] = field(default_factory=list)  # per word: gold casing class (data.casing_class)


def ljspeech(data: Path = SHARED_DATA) -> list[SpeechSet]:
    folder = data / "audio" / "ljspeech"
    listing = folder / "transcripts_from_tacotron2_filelists.txt"
    if not listing.is_file():
        return []
    words: list[str] = []
    gold: list[int] = []
    casing: list[int] = []
    cues: list[int] = []
    times: list[tuple[float, float]] = []
    pieces: list[np.ndarray] = []
    clock = 0.0
    gap = np.zeros(int(CUE_GAP_SECONDS * SAMPLE_RATE), dtype=np.float32)
    for number, line in enumerate(sorted(listing.read_text(encoding="utf-8").splitlines())):
        name, _, text = line.partition("|")
        if not (folder / name).is_file() or not text.strip():
            continue
        labelled = from_punctuated_text(text, "en", "ljspeech", name)
        audio = decode_audio(folder / name)
        span = (clock, clock + audio.size / SAMPLE_RATE)
        words += labelled.words
        gold += labelled.labels
        casing += labelled.casing
        cues += [number] * len(labelled.words)
        times += [span] * len(labelled.words)
        pieces += [audio, gap]
        clock += audio.size / SAMPLE_RATE + CUE_GAP_SECONDS
    return [SpeechSet("ljspeech", "en", words, gold, cues, times, np.concatenate(pieces), casing)]


def plain_word(word: str) -> str:
    """A word as compared across transcripts: lowercase, letters, digits and apostrophes only."""
    return re.sub(r"[^\w']", "", word.lower())


def _recognised(
    media: Path, audio: np.ndarray, language: str, key: str | None = None
) -> list[tuple[str, float, float]]:
    """The recogniser's words and times for ``audio``, cached by ``key`` (the media's name and size
    unless given)."""
    key = key or f"{media.stem}-{media.stat().st_size}"
    cache = cache_root() / "bench" / f"{key}.words.json"
    if cache.is_file():
        return [tuple(item) for item in json.loads(cache.read_text(encoding="utf-8"))]  # type: ignore[misc]
    from app.ml.transcriber import Transcriber

    recognition = Transcriber().transcribe(audio, language)
    found = [(plain_word(w.text), w.start, w.end) for w in recognition.words]
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(found), encoding="utf-8")
    return found


def _cues_of_ten(
    words: list[str], heard: list[tuple[str, float, float]]
) -> tuple[list[int], list[tuple[float, float]]]:
    """Cues of ``CUE_WORDS`` words, each timed from the first to the last time the recogniser gave
    its words (aligned to ``words`` by minimum edit distance), as an ASR's clock-cut captions are."""
    alignment = align([w for w, _, _ in heard], [plain_word(w) for w in words])
    starts: list[float | None] = []
    ends: list[float | None] = []
    for position in alignment.ref_to_hyp:
        starts.append(heard[position][1] if position >= 0 else None)
        ends.append(heard[position][2] if position >= 0 else None)
    cues: list[int] = []
    times: list[tuple[float, float]] = []
    for first in range(0, len(words), CUE_WORDS):
        stop = min(len(words), first + CUE_WORDS)
        known_starts = [s for s in starts[first:stop] if s is not None]
        known_ends = [e for e in ends[first:stop] if e is not None]
        begin = min(known_starts) if known_starts else (times[-1][1] if times else 0.0)
        end = max(known_ends) if known_ends else begin + 0.1
        cues += [first // CUE_WORDS] * (stop - first)
        times += [(begin, end)] * (stop - first)
    return cues, times


def ljspeech_in_cues_of_ten(data: Path = SHARED_DATA) -> list[SpeechSet]:
    """The joined LJSpeech clips as an ASR captions them: cues of ``CUE_WORDS`` words that run
    across the clips, timed by the recogniser's words."""
    joined = ljspeech(data)
    for speech in joined:
        heard = _recognised(Path("ljspeech"), speech.audio, "en", key=f"ljspeech-joined-{speech.audio.size}")
        speech.cues, speech.times = _cues_of_ten(speech.words, heard)
    return joined


def real(data: Path = SHARED_DATA) -> list[SpeechSet]:
    folder = data / "audio" / "real"
    sets: list[SpeechSet] = []
    for name, language in REAL_FILES.items():
        media = folder / name
        if not media.is_file():
            continue
        labelled = from_punctuated_text(
            media.with_suffix(".txt").read_text(encoding="utf-8"), language, "real", name
        )
        audio = decode_audio(media)
        cues, times = _cues_of_ten(labelled.words, _recognised(media, audio, language))
        sets.append(
            SpeechSet(
                Path(name).stem,
                language,
                labelled.words,
                labelled.labels,
                cues,
                times,
                audio,
                labelled.casing,
            )
        )
    return sets
