"""WebVTT (.vtt).

Blocks are read as the WebVTT specification lays them out: the header, then blocks separated by
blank lines; a block with a timing line is a cue, any other (NOTE, STYLE, REGION) is kept verbatim
in its place. Timestamps are read and written with webvtt-py's ``Timestamp``. YouTube-style inline
timestamps give the words their times (see ``cuetext``).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from pathlib import Path

from webvtt.errors import MalformedCaptionError
from webvtt.models import Timestamp

from app.core.model import Cue, Document
from app.formats.common import AsWritten, make_cue, render_timed, timing_warnings
from app.formats.errors import FormatError

_TIMING = re.compile(r"[ \t]*(\S+)[ \t]+-->[ \t]+(\S+)((?:[ \t].*)?)")
HEADER = "WEBVTT"


def parse_time(value: str) -> int | None:
    try:
        return Timestamp.from_string(value).in_milliseconds()
    except MalformedCaptionError:
        return None


def format_time(millis: int) -> str:
    return str(Timestamp.from_seconds(millis / 1000))


def parse_timing(line: str) -> tuple[int, int, str] | None:
    match = _TIMING.fullmatch(line)
    if match is None:
        return None
    start, end = parse_time(match.group(1)), parse_time(match.group(2))
    if start is None or end is None:
        return None
    return start, end, match.group(3).strip()


def _starts_cue(lines: list[str], first: int, row: int, in_header: bool) -> bool:
    """Whether ``row`` of the block starting at ``first`` begins a new cue: as in the WebVTT parser,
    a line with "-->" ends the block unless it is the block's first line, or its second after an
    identifier (never in the header), even with no blank line before it."""
    if "-->" not in lines[row]:
        return False
    return in_header or row - first >= 2 or "-->" in lines[first]


def read(text: str, path: Path | None) -> tuple[list[Cue], str, list[str]]:
    """Cues, the text before the first cue (header, STYLE, REGION), and warnings."""
    if not text.startswith(HEADER) or text[len(HEADER) : len(HEADER) + 1] not in ("", " ", "\t", "\n"):
        raise FormatError(path, 1, "no 'WEBVTT' header: not WebVTT captions")
    lines = text.split("\n")
    offsets = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))

    blocks: list[tuple[int, int]] = []  # (first row, row after the last) of each block
    row = 0
    while row < len(lines):
        if not lines[row].strip():
            row += 1
            continue
        first = row
        row += 1
        while row < len(lines) and lines[row].strip() and not _starts_cue(lines, first, row, not blocks):
            row += 1
        blocks.append((first, row))

    cues: list[Cue] = []
    cue_rows: list[int] = []
    cue_spans: list[tuple[int, int]] = []  # text offsets of each cue block and of its text's end
    for first, stop in blocks[1:]:  # the first block is the header
        if "-->" in lines[first]:
            timing_row = first
        elif first + 1 < stop and "-->" in lines[first + 1]:
            timing_row = first + 1
        else:
            continue  # NOTE, STYLE, REGION or stray text: kept verbatim around the cues
        timing = parse_timing(lines[timing_row])
        if timing is None:
            raise FormatError(path, timing_row + 1, f"unreadable timing line {lines[timing_row].strip()!r}")
        start, end, settings = timing
        text_start = min(offsets[timing_row + 1], len(text))
        text_end = max(text_start, offsets[stop] - 1) if stop > timing_row + 1 else text_start
        identifier = lines[first] if timing_row != first else None
        cues.append(
            make_cue(
                None,
                start,
                end,
                text[text_start:text_end],
                AsWritten(identifier, settings, text[offsets[timing_row] : offsets[timing_row + 1]], ""),
            )
        )
        cue_rows.append(first)
        cue_spans.append((offsets[first], text_end))
    if not cues:
        return [], text, ["the file has no cues"]
    for number, cue in enumerate(cues):
        next_start = cue_spans[number + 1][0] if number + 1 < len(cues) else len(text)
        cue.after_text = text[cue_spans[number][1] : next_start]
    return cues, text[: cue_spans[0][0]], timing_warnings(cues, [r + 1 for r in cue_rows])


#: SRT styling a WebVTT player would show as text: ASS override blocks ({\an8}) and font tags.
_NOT_VTT = re.compile(r"\{\\[^{}\n]*\}|</?font\b[^>]*>", re.IGNORECASE)
_ASS_ALIGNMENT = re.compile(r"\\an([1-9])")


def _vtt_settings(alignment: int) -> str:
    """The WebVTT cue settings for an ASS ``\\an`` alignment (the keypad: 7 8 9 at the top, 4 5 6
    in the middle, 1 2 3 at the bottom, where a cue goes anyway)."""
    row, column = divmod(alignment - 1, 3)  # row 0 at the bottom, column 0 on the left
    line = {2: "line:0", 1: "line:50%"}.get(row, "")
    side = {0: "align:left", 2: "align:right"}.get(column, "")
    return " ".join(part for part in (line, side) if part)


def _from_srt(cue: Cue) -> Cue:
    """``cue`` as WebVTT writes it: its ``{\\an8}`` made a cue setting, override blocks and font
    tags dropped (their text kept), as caption editors convert; the words stay as they are."""
    literal = "".join(piece for piece in cue.layout if isinstance(piece, str))
    alignment = _ASS_ALIGNMENT.search("".join(_NOT_VTT.findall(literal)))
    layout = [_NOT_VTT.sub("", piece) if isinstance(piece, str) else piece for piece in cue.layout]
    settings = _vtt_settings(int(alignment.group(1))) if alignment else ""
    return replace(cue, layout=layout, settings=settings, after_text=None)


def write(document: Document) -> str:
    """WebVTT text; a document read from another format gets a bare header, and SRT styling that
    WebVTT has no place for is converted (``_from_srt``)."""
    as_read = document.format == "vtt"
    if not as_read:
        cues = [_from_srt(cue) for cue in document.cues]
        document = replace(document, cues=cues, preamble=HEADER + "\n\n", trailer="")
    return render_timed(document, as_read, lambda cue: cue.identifier if as_read else None, format_time)
