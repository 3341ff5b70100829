"""Captions for media that has none: speech recognised with word times, cut into cues an editor
would keep, written as WebVTT (word times inline) or SRT (word times in ``<name>.words.json``
beside it, which the editor and batch pair with the captions).

The recogniser's own punctuation is kept as the captions' punctuation, to be reviewed like any
other (the model's disagreements become suggestions), unless ``strip_punctuation`` asks for the
plain lowercase words an ASR caption file usually has. Nothing is written unless the whole file
is: a cancel, silence or an unreadable file leaves no partial captions behind.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.audio.decode import decode_audio
from app.core.checks import CaptionLimits
from app.core.cue_segmentation import TRANSCRIPT_LIMITS, TimedWord, plan_cues
from app.core.errors import PunctumError, file_failure
from app.formats import write_files
from app.formats.cuetext import split_token
from app.formats.transcript import transcript_text, words_json
from app.ml.transcriber import RecognisedWord, Transcriber

#: What transcription writes its captions as (it reads any caption format: ``formats.CAPTION_SUFFIXES``).
TRANSCRIBED_SUFFIXES = (".vtt", ".srt")
#: The word-timing file written beside SRT captions (``files.classify`` knows the suffix).
WORDS_SUFFIX = ".words.json"


class NoSpeechError(PunctumError):
    """The media holds no speech the recogniser could hear."""


@dataclass(frozen=True)
class Transcript:
    output: Path
    words_file: Path | None
    cues: int
    words: int
    language: str
    audio_seconds: float
    seconds: float  # time spent, decoding and recognising


#: The speech recogniser (its ``model``: base, a CTranslate2 Whisper folder or an id), loaded once
#: for every file a caller transcribes; the command line's way to it.
open_recogniser = Transcriber


def words_file_for(output: Path) -> Path:
    return output.with_name(output.stem + WORDS_SUFFIX)


@dataclass(frozen=True)
class TranscriptOptions:
    """How captions are made of what is heard: in ``language`` (None: the one heard), with the
    recogniser's punctuation or stripped of it, cut into cues within ``limits``."""

    language: str | None = None
    strip_punctuation: bool = False
    limits: CaptionLimits = TRANSCRIPT_LIMITS


def transcribe_media(
    media: Path,
    output: Path,
    transcriber: Transcriber,
    options: TranscriptOptions = TranscriptOptions(),
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Transcript:
    """Recognise ``media`` and write its captions to ``output`` (.vtt or .srt, atomically)."""
    suffix = output.suffix.lower()
    if suffix not in TRANSCRIBED_SUFFIXES:
        raise PunctumError(f"{output}: captions are written as .vtt or .srt, not {suffix or 'no extension'}")
    language = options.language
    transcriber.check_language(language)
    began = time.monotonic()
    audio = decode_audio(media)
    recognition = transcriber.transcribe(audio, language, progress, cancelled)
    strip = options.strip_punctuation
    words = [timed for word in recognition.words if (timed := _timed(word, strip)) is not None]
    if not words:
        raise NoSpeechError(f"{media}: no speech was heard; nothing was written")
    cues = plan_cues(words, options.limits)
    text = transcript_text(cues, suffix[1:])
    words_file = words_file_for(output) if suffix == ".srt" else None
    # The captions and their word times land together or not at all (a full disk, a cancel).
    written = [(output, text.encode("utf-8"))]
    if words_file is not None:
        written.append((words_file, words_json(words).encode("utf-8")))
    write_files(written)
    return Transcript(
        output,
        words_file,
        len(cues),
        len(words),
        recognition.language,
        recognition.audio_seconds,
        time.monotonic() - began,
    )


def _timed(word: RecognisedWord, strip_punctuation: bool) -> TimedWord | None:
    text = word.text
    if strip_punctuation:
        _, bare, _ = split_token(text)
        text = bare.lower()
    if not text:
        return None
    start = round(word.start * 1000)
    return TimedWord(text, start, max(start, round(word.end * 1000)))


@dataclass(frozen=True)
class FolderTranscription:
    transcribed: list[Transcript]
    failed: dict[Path, str]  # media -> why, in one line


def media_without_captions(folder: Path) -> list[Path]:
    """The media of ``folder`` that no caption file pairs with (as batch pairs a folder)."""
    from app.services.files import FileKind, classify
    from app.services.folder_pairing import pair_folder

    return [
        path
        for path in pair_folder(folder).unpaired
        if (role := classify(path)) is not None and role.kind is FileKind.MEDIA
    ]


def transcribe_folder(
    folder: Path, language: str | None = None, on_file: Callable[[Path, str], None] | None = None
) -> FolderTranscription:
    """Captions (``<name>.vtt`` beside each) for every medium of ``folder`` that has none, with one
    recogniser for them all. Resumable: a medium transcribed before has its captions now and is not
    met again; one that fails is told and the others go on."""
    waiting = media_without_captions(folder)
    done = FolderTranscription([], {})
    if not waiting:
        return done
    transcriber = open_recogniser()
    transcriber.check_language(language)
    options = TranscriptOptions(language)
    tell = on_file or (lambda media, state: None)
    for media in waiting:
        tell(media, "started")
        try:
            done.transcribed.append(transcribe_media(media, media.with_suffix(".vtt"), transcriber, options))
        except Exception as error:  # what the file causes is its outcome; a bug goes on up
            reason = file_failure(error)
            if reason is None:
                raise
            done.failed[media] = reason
        tell(media, "failed" if media in done.failed else "done")
    return done
