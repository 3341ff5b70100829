"""``punctum transcribe``: captions for media that has none, recognised on this computer."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.cli.options import Commands, check_input_file, check_outputs, checked_language, checked_model
from app.core.errors import PunctumError
from app.services.transcribe import (
    TRANSCRIBED_SUFFIXES,
    TranscriptOptions,
    open_recogniser,
    transcribe_media,
    words_file_for,
)


def add_transcribe_command(commands: Commands) -> None:
    transcribe = commands.add_parser(
        "transcribe", help="recognise the speech of a video or audio file into captions with word times"
    )
    transcribe.add_argument("media", metavar="MEDIA", help="a video or audio file")
    transcribe.add_argument(
        "-o", "--output", metavar="OUT", help="captions to write, .vtt or .srt (default: MEDIA's name, .vtt)"
    )
    transcribe.add_argument("--language", metavar="CODE", help="the speech's language (detected if omitted)")
    transcribe.add_argument(
        "--model",
        metavar="SIZE_OR_DIR",
        help="Whisper model: base (installed), a CTranslate2 folder or an id",
    )
    transcribe.add_argument(
        "--strip-punctuation",
        action="store_true",
        help="write plain lowercase words, without the recogniser's punctuation and capitals",
    )
    transcribe.set_defaults(run=_transcribe)


def _transcribe(args: argparse.Namespace) -> int:
    media = Path(args.media)
    if args.output is None:
        output = media.with_suffix(".vtt")
        if output.exists():
            raise PunctumError(f"{output} exists; name the captions to write with -o")
    else:
        output = Path(args.output)
    words = words_file_for(output) if output.suffix.lower() == ".srt" else None
    check_outputs(
        [str(media)],
        [("-o", str(output), TRANSCRIBED_SUFFIXES)]
        + ([("word times", str(words), (".json",))] if words else []),
    )
    # The word times go with the captions -o names: they replace those of captions being replaced,
    # never a file of that name that goes with nothing being written.
    if words is not None and words.exists() and not output.exists():
        raise PunctumError(
            f"{words} exists; the word times of {output} would replace it: name other captions"
        )
    check_input_file(media)
    language = checked_language(args.language, PunctumError) if args.language is not None else None
    model = checked_model(args.model)
    from tqdm import tqdm

    transcriber = open_recogniser(model)
    with tqdm(total=100, unit="%", desc="transcribing", disable=not sys.stderr.isatty(), leave=False) as bar:

        def progress(share: float) -> None:
            bar.update(round(share * 100) - bar.n)

        options = TranscriptOptions(language, args.strip_punctuation)
        done = transcribe_media(media, output, transcriber, options, progress=progress)
    also = f" and its word times in {done.words_file}" if done.words_file else ""
    print(
        f"{done.output}: {done.cues} cues, {done.words} words ({done.language}){also}; "
        f"{done.audio_seconds:.0f} s of audio in {done.seconds:.1f} s"
    )
    return 0
