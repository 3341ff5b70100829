"""Caption files written from planned cues (``app.core.cue_segmentation``): WebVTT, SRT, word times.

WebVTT keeps each word's start as an inline timestamp before it (``Hello, <00:00:01.250>world.``),
which the VTT reader turns back into word times; the first word of a cue starts with the cue.
SRT has no place for word times, so they go beside it in a JSON word list that
``app.formats.timings.read_timings`` reads (whole numbers, so milliseconds).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from app.core.cue_segmentation import PlannedCue, TimedWord, as_shown
from app.formats import srt, vtt

#: Characters WebVTT cue text must escape: "<" and "&" start tags and entities, and "-->" would
#: read as a timing line.
_VTT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def transcript_text(cues: Sequence[PlannedCue], format: str) -> str:
    """The cues as a "vtt" or "srt" file's text, with ``\\n`` line ends.

    Words with no visible text are left out, and so is a cue with none.
    """
    if format == "vtt":
        return _vtt(cues)
    if format == "srt":
        return _srt(cues)
    raise ValueError(f"unknown caption format {format!r}; transcripts are written as 'vtt' or 'srt'")


def _vtt(cues: Sequence[PlannedCue]) -> str:
    blocks: list[str] = []
    for cue in cues:
        lines = []
        said: int | None = None  # the last time written in this cue
        for line in cue.lines:
            pieces = []
            for word in line:
                text = as_shown(word.text).translate(_VTT_ESCAPES)
                if not text:
                    continue
                if said is None:
                    said = cue.start
                    pieces.append(text)
                    continue
                # WebVTT asks inline timestamps to rise within the cue; recognised times already do,
                # unless words overlap.
                said = min(max(word.start, said), cue.end)
                pieces.append(f"<{vtt.format_time(said)}>{text}")
            if pieces:
                lines.append(" ".join(pieces) + "\n")
        if lines:
            blocks.append(f"{vtt.format_time(cue.start)} --> {vtt.format_time(cue.end)}\n" + "".join(lines))
    return f"{vtt.HEADER}\n\n" + "\n".join(blocks) if blocks else f"{vtt.HEADER}\n"


def _srt(cues: Sequence[PlannedCue]) -> str:
    blocks: list[str] = []
    for cue in cues:
        lines = [" ".join(text for word in line if (text := as_shown(word.text))) for line in cue.lines]
        text = "".join(line + "\n" for line in lines if line)
        if text:
            timing = f"{srt.format_time(cue.start)} --> {srt.format_time(cue.end)}"
            blocks.append(f"{len(blocks) + 1}\n{timing}\n{text}")
    return "\n".join(blocks)


def words_json(words: Sequence[TimedWord]) -> str:
    """The words with their times as a JSON list, one ``{"word", "start", "end"}`` object a line.

    Times are whole milliseconds, as ``read_timings`` expects; a word with no visible text is left out.
    """
    rows = [
        json.dumps(
            {"word": text, "start": int(word.start), "end": int(max(word.start, word.end))},
            ensure_ascii=False,
        )
        for word in words
        if (text := as_shown(word.text))
    ]
    return "[\n" + ",\n".join(rows) + "\n]\n" if rows else "[]\n"
