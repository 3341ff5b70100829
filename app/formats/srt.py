"""SubRip (.srt).

The reader is lenient where real files are: numbers may be missing, timestamps may lack
milliseconds or use "." (files from go-astisub's tests), cue text may hold blank lines, and there
may be several blank lines between cues. Whatever it keeps (the number line and timing line as
written, the spacing) writes back unchanged. A timing line it cannot read, or a numbered block
with no timing line, stops the load: guessing there would move captions in time. Timestamps are
written with pysrt's formatter.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from pathlib import Path

from pysrt import SubRipTime

from app.core.model import Cue, Document
from app.formats.common import (
    TEXT_AND_SPACING,
    AsWritten,
    clock_millis,
    make_cue,
    render_timed,
    timing_warnings,
)
from app.formats.errors import FormatError

_TIME = r"(\d{1,3}):(\d{1,2}):(\d{1,2})(?:[,.:](\d{1,3}))?"
_TIMING = re.compile(rf"\s*{_TIME}\s*-->\s*{_TIME}((?:\s.*)?)")


def parse_timing(line: str) -> tuple[int, int, str] | None:
    """(start, end, settings) of a timing line such as ``00:00:01,000 --> 00:00:02,500``."""
    match = _TIMING.fullmatch(line)
    if match is None:
        return None
    start = clock_millis(*match.group(1, 2, 3, 4))
    end = clock_millis(*match.group(5, 6, 7, 8))
    if start is None or end is None:
        return None
    return start, end, match.group(9).strip()


def format_time(millis: int) -> str:
    return str(SubRipTime.from_ordinal(millis))


def _is_number(line: str) -> bool:
    stripped = line.strip()
    return stripped.isascii() and stripped.isdigit()


def read(text: str, path: Path | None) -> tuple[list[Cue], str, list[str]]:
    """Cues, the text before the first cue, and warnings, from ``\\n``-separated SRT text."""
    lines = text.split("\n")
    offsets = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
    timing_rows = [row for row, line in enumerate(lines) if "-->" in line]
    if not timing_rows:
        if text.strip():
            raise FormatError(
                path, 1, "no timing line ('00:00:01,000 --> 00:00:02,000'): not SubRip captions"
            )
        return [], text, ["the file has no cues"]

    warnings: list[str] = []
    block_rows: list[int] = []  # first row of each cue block (its number, else its timing line)
    for previous, row in itertools.pairwise([-1, *timing_rows]):
        has_number = row - 1 > previous and _is_number(lines[row - 1])
        block_rows.append(row - 1 if has_number else row)
        if not has_number:
            warnings.append(f"line {row + 1}: cue has no number")

    cues: list[Cue] = []
    for number, row in enumerate(timing_rows):
        timing = parse_timing(lines[row])
        if timing is None:
            raise FormatError(path, row + 1, f"unreadable timing line {lines[row].strip()!r}")
        start, end, settings = timing
        body_end = offsets[block_rows[number + 1]] if number + 1 < len(timing_rows) else len(text)
        body_start = min(offsets[row + 1], body_end)
        _check_body(
            lines, row + 1, block_rows[number + 1] if number + 1 < len(block_rows) else len(lines), path
        )
        match = TEXT_AND_SPACING.fullmatch(text, body_start, body_end)
        assert match is not None  # the pattern matches any string
        identifier = lines[row - 1] if block_rows[number] != row else None
        cues.append(
            make_cue(
                int(identifier.strip()) if identifier is not None else None,
                start,
                end,
                match.group(1),
                AsWritten(identifier, settings, text[offsets[row] : offsets[row + 1]], match.group(2)),
            )
        )
    preamble = text[: offsets[block_rows[0]]]
    if preamble.strip():
        warnings.insert(0, "line 1: text before the first cue is kept but not shown")
    warnings.extend(timing_warnings(cues, [block_rows[i] + 1 for i in range(len(cues))]))
    return cues, preamble, warnings


def _check_body(lines: list[str], first: int, stop: int, path: Path | None) -> None:
    """A blank line, then a number, then text: a cue whose timing line is missing."""
    for row in range(first + 1, stop - 1):
        if not lines[row - 1].strip() and _is_number(lines[row]) and lines[row + 1].strip():
            raise FormatError(path, row + 2, f"cue {lines[row].strip()} has no timing line")


def write(document: Document) -> str:
    """SRT text; a document read from another format gets standard numbers and timing lines."""
    as_read = document.format == "srt"
    if not as_read:
        numbered = [
            replace(cue, index=n, settings="", after_text=None)
            for n, cue in enumerate(document.cues, start=1)
        ]
        document = replace(document, cues=numbered, preamble="", trailer="")
    return render_timed(document, as_read, lambda cue: _number(cue, as_read), format_time)


def _number(cue: Cue, as_read: bool) -> object:
    """The cue's number line: as the file wrote it, where it was read from one."""
    return cue.identifier if as_read and cue.identifier is not None else cue.index
