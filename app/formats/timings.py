"""Word timing files from speech recognisers: NIST CTM and JSON word lists.

CTM: one word per line, ``utterance channel start duration word [confidence]`` with times in
seconds; lines starting with ``;;`` are comments. JSON: a list (or one object per line) of
``{"word": ..., "start": ..., "end": ...}``, times in milliseconds when they are whole numbers and
in seconds when they have fractions (as faster-whisper writes them).
"""

from __future__ import annotations

import json
from pathlib import Path

from app.core.model import Word
from app.core.small_files import SmallFileError, small_file_text
from app.formats.errors import FormatError

#: The largest word timing file read: a CTM of ten hours of speech is about 20 MB.
TIMINGS_FILE_BYTES = 200_000_000


def read_timings(path: Path | str) -> list[Word]:
    """The recognised words with their start and end times (milliseconds), in time order."""
    path = Path(path)
    try:
        text = small_file_text(path, TIMINGS_FILE_BYTES, "utf-8-sig")
    except SmallFileError as reason:
        said = (
            "not UTF-8 text; a timing file must be UTF-8"
            if str(reason).startswith("not UTF-8")
            else str(reason)
        )
        raise FormatError(path, None, said) from None
    words = _json_words(path, text) if path.suffix.lower() == ".json" else _ctm_words(path, text)
    if not words:
        raise FormatError(path, None, "no timed words in the file")
    return sorted(words, key=lambda w: w.start or 0)


def _ctm_words(path: Path, text: str) -> list[Word]:
    words = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields or line.startswith(";;"):
            continue
        if len(fields) < 5:
            raise FormatError(path, number, "a CTM line needs: utterance channel start duration word")
        try:
            start, duration = float(fields[2]), float(fields[3])
        except ValueError:
            raise FormatError(
                path, number, f"start {fields[2]!r} or duration {fields[3]!r} is not a number"
            ) from None
        if start < 0 or duration < 0:
            raise FormatError(path, number, "negative start or duration")
        words.append(Word(fields[4], round(start * 1000), round((start + duration) * 1000)))
    return words


def _json_words(path: Path, text: str) -> list[Word]:
    try:
        stripped = text.strip()
        items = (
            json.loads(stripped)
            if stripped.startswith("[")
            else [json.loads(line) for line in stripped.splitlines() if line.strip()]
        )
    except json.JSONDecodeError as error:
        raise FormatError(path, error.lineno, f"not JSON: {error.msg}") from None
    words = []
    seconds = any(isinstance(i.get("end"), float) for i in items if isinstance(i, dict))
    for number, item in enumerate(items, 1):
        if not isinstance(item, dict) or not {"word", "start", "end"} <= item.keys():
            raise FormatError(path, number, 'each entry needs "word", "start" and "end"')
        scale = 1000 if seconds else 1
        try:
            start, end = round(float(item["start"]) * scale), round(float(item["end"]) * scale)
        except (TypeError, ValueError):
            raise FormatError(path, number, "start and end must be numbers") from None
        words.append(Word(str(item["word"]).strip(), start, max(start, end)))
    return words
