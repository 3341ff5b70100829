"""YouTube's SubViewer captions (.sbv): blocks of a timing line ``0:00:01.000,0:00:02.500`` and
the cue's lines, separated by blank lines, with no numbers.

Read as the SRT reader reads its blocks: whatever the file holds around a cue's text (its timing
line as written, the spacing after it) writes back unchanged, so a file whose marks are left as
they are is written byte for byte as it was read. webvtt-py reads SBV too, but into captions it
writes again in its own layout, so the blocks are found here. A block (a line after a blank one) that
does not start with a timing line that reads stops the load: guessing there would move captions in
time.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from pathlib import Path

from app.core.model import Cue, Document
from app.formats.common import (
    TEXT_AND_SPACING,
    AsWritten,
    clock,
    clock_millis,
    make_cue,
    render,
    timing_warnings,
)
from app.formats.errors import FormatError

_TIME = r"(\d{1,3}):(\d{1,2}):(\d{1,2})\.(\d{1,3})"
_TIMING = re.compile(rf"[ \t]*{_TIME}[ \t]*,[ \t]*{_TIME}[ \t]*")
#: A line that means to be a timing line (digits, a colon, a comma): one that does not read as
#: one is an error, not a caption.
_LIKE_TIMING = re.compile(r"\s*\d+:\S*,\S*\s*")


def parse_timing(line: str) -> tuple[int, int] | None:
    """(start, end) in ms of a timing line such as ``0:00:01.000,0:00:02.500``."""
    match = _TIMING.fullmatch(line)
    if match is None:
        return None
    start, end = clock_millis(*match.group(1, 2, 3, 4)), clock_millis(*match.group(5, 6, 7, 8))
    return None if start is None or end is None else (start, end)


def format_time(millis: int) -> str:
    """A timestamp as YouTube writes one: ``0:00:01.000``."""
    return clock(millis, 1, ".")


def _timings(lines: list[str], path: Path | None) -> dict[int, tuple[int, int]]:
    """Each timing line's (start, end) by its row: each block (the file's first line, and each
    line of text after a blank one) starts with one; a block that does not is an error naming its
    line."""
    timings = {row: timing for row, line in enumerate(lines) if (timing := parse_timing(line)) is not None}
    if not timings:
        return timings
    for row, line in enumerate(lines):
        if not line.strip() or (row and lines[row - 1].strip()) or row in timings:
            continue
        if _LIKE_TIMING.fullmatch(line):
            raise FormatError(path, row + 1, f"unreadable SBV timing line {line.strip()!r}")
        raise FormatError(path, row + 1, "SBV text with no timing line before it")
    return timings


def read(text: str, path: Path | None) -> tuple[list[Cue], str, list[str]]:
    """Cues, the text before the first cue, and warnings, from ``\\n``-separated SBV text."""
    lines = text.split("\n")
    offsets = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
    timings = _timings(lines, path)
    if not timings:
        if text.strip():
            raise FormatError(path, 1, "no timing line ('0:00:01.000,0:00:02.000'): not SBV captions")
        return [], text, ["the file has no cues"]
    rows = list(timings)
    cues: list[Cue] = []
    for number, row in enumerate(rows):
        body_end = offsets[rows[number + 1]] if number + 1 < len(rows) else len(text)
        body_start = min(offsets[row + 1], body_end)
        match = TEXT_AND_SPACING.fullmatch(text, body_start, body_end)
        assert match is not None  # the pattern matches any string
        written = AsWritten(None, "", text[offsets[row] : offsets[row + 1]], match.group(2))
        cues.append(make_cue(None, *timings[row], match.group(1), written))
    preamble = text[: offsets[rows[0]]]
    warnings = ["line 1: text before the first cue is kept but not shown"] if preamble.strip() else []
    warnings.extend(timing_warnings(cues, [row + 1 for row in rows]))
    return cues, preamble, warnings


def write(document: Document) -> str:
    """SBV text; a cue not read from this file (another format's, or a re-cut's) gets a timing
    line written as YouTube writes one."""
    as_read = document.format == "sbv"
    if not as_read:
        document = replace(
            document, cues=[replace(c, after_text=None) for c in document.cues], preamble="", trailer=""
        )

    def head(cue: Cue) -> str:
        if as_read and cue.timing_line is not None:
            return cue.timing_line
        return f"{format_time(cue.start)},{format_time(cue.end)}\n"

    return render(document, head, "\n\n")
