"""Speech to words with their times: Whisper on CTranslate2 (faster-whisper), on the CPU.

int8 compute (Whisper base runs several times faster than real time on two cores), its voice
activity filter on (silence is skipped rather than filled with invented words), word timestamps
on. It reads audio already decoded to 16 kHz mono float32 by ``app.audio``, so media errors are
told the same way everywhere. faster-whisper is imported only here, and only when used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.core.audio_format import SAMPLE_RATE
from app.core.errors import PunctumError, error_line
from app.ml.whisper_model import COMPUTE_TYPE, install_hint, loaded_whisper, whisper_model


class TranscriberError(PunctumError):
    """The recogniser cannot be loaded, or cannot read what it was given."""


@dataclass(frozen=True)
class RecognisedWord:
    text: str  # as the recogniser wrote it, with its punctuation and capitals
    start: float  # seconds
    end: float
    probability: float


@dataclass(frozen=True)
class Recognition:
    words: list[RecognisedWord]
    language: str
    language_probability: float
    audio_seconds: float


class Transcriber:
    """One loaded recogniser, reused for every file a worker transcribes."""

    def __init__(self, model: str | None = None, threads: int = 0, compute_type: str = COMPUTE_TYPE) -> None:
        try:
            from faster_whisper import WhisperModel  # noqa: F401  (loaded_whisper makes one)
        except ImportError:
            raise TranscriberError(f"transcribing needs faster-whisper: {install_hint()}") from None
        location = whisper_model(model)
        try:
            self.model: Any = loaded_whisper(location, compute_type, threads)
        except Exception as error:  # CTranslate2 and the hub client raise their own kinds
            raise TranscriberError(
                f"the speech recogniser {location} cannot be loaded: {error_line(error)}"
            ) from None

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self.model.supported_languages)

    def check_language(self, language: str | None) -> None:
        if language is not None and language not in self.languages:
            raise TranscriberError(f"--language {language}: the recogniser does not know this language code")

    def transcribe(
        self,
        audio: np.ndarray,
        language: str | None = None,
        progress: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> Recognition:
        """The words heard in ``audio`` (16 kHz mono float32); ``progress`` gets the share done."""
        self.check_language(language)
        seconds = len(audio) / SAMPLE_RATE
        segments, info = self.model.transcribe(
            audio.astype(np.float32, copy=False),
            language=language,
            vad_filter=True,
            word_timestamps=True,
            beam_size=5,
            # Each window decoded on its own: a hallucination does not carry into the next one.
            condition_on_previous_text=False,
            # Unless a language is given, it is detected for each stretch of speech, not once per
            # file: a recording in English then German came out as invented English in its second half.
            multilingual=language is None,
        )
        words: list[RecognisedWord] = []
        for segment in segments:  # decoded lazily, one window at a time: room to cancel
            if cancelled is not None and cancelled():
                raise InterruptedError("transcription cancelled")
            for word in segment.words or ():
                text = word.word.strip()
                if text:
                    words.append(
                        RecognisedWord(text, float(word.start), float(word.end), float(word.probability))
                    )
            if progress is not None and seconds:
                progress(min(1.0, float(segment.end) / seconds))
        return Recognition(words, str(info.language), float(info.language_probability), seconds)
