"""Advanced SubStation Alpha and SubStation Alpha (.ass, .ssa): fan and anime subtitles.

A file is its script info and styles, then an ``[Events]`` section of ``Dialogue:`` lines, each a
row of fields ending with the text. pysubs2 reads the file (a file it cannot read is refused); the
cues are found in the file's own text, so that what Punctum writes is the file as it was read with
only marks and capitals changed: the head of each ``Dialogue:`` line (layer, times, style, name,
margins, effect) is the cue's timing line, the lines after its text up to the next dialogue
(comments, blank lines, other sections) its spacing, and everything before the first dialogue the
preamble. pysubs2 would write the whole file again in its own layout (its numbers, its header
order), so it writes only a file converted from another format, and converts an ASS/SSA file
written in another (``as_subrip``).

In the text, ``\\N`` is a line break (read as one, written back as ``\\N``); override blocks such
as ``{\\i1}`` and ``{\\an8}`` are styling the words keep around them (``cuetext``). ``Comment:``
lines are not shown, so they are not cues.
"""

from __future__ import annotations

import itertools
import re
import warnings
from pathlib import Path

import pysubs2
from pysubs2.time import TIMESTAMP, timestamp_to_ms

from app.core.model import Cue, Document
from app.formats import srt
from app.formats.common import AsWritten, make_cue, timing_warnings
from app.formats.errors import FormatError

_SECTION = re.compile(r"\s*\[([^\]]+)\]\s*")
_DIALOGUE = re.compile(r"\s*Dialogue\s*:", re.IGNORECASE)
_FORMAT = re.compile(r"\s*Format\s*:(.*)", re.IGNORECASE)
#: The fields of an event where the section names none (both versions have ten, text last).
_DEFAULT_FIELDS = [
    "layer",
    "start",
    "end",
    "style",
    "name",
    "marginl",
    "marginr",
    "marginv",
    "effect",
    "text",
]
#: A hard line break in a dialogue's text, and the break it is read as.
_BREAK, _NEWLINE = "\\N", "\n"


def _fields(line: str) -> list[str]:
    match = _FORMAT.fullmatch(line)
    assert match is not None
    return [name.strip().lower() for name in match.group(1).split(",")]


def _time(value: str, path: Path | None, row: int) -> int:
    match = TIMESTAMP.fullmatch(value.strip())
    if match is None:
        raise FormatError(path, row + 1, f"unreadable time {value.strip()!r} in an ASS/SSA Dialogue line")
    return int(timestamp_to_ms(match.groups()))


def _dialogue(line: str, fields: list[str], path: Path | None, row: int) -> tuple[str, str, int, int]:
    """A ``Dialogue:`` line as (its head up to the text, its text, start, end)."""
    colon = line.index(":") + 1
    values = line[colon:].split(",", len(fields) - 1)
    if len(values) < len(fields) or fields[-1] != "text":
        raise FormatError(
            path, row + 1, f"an ASS/SSA Dialogue line of {len(values)} fields, not {len(fields)}"
        )
    head = line[: len(line) - len(values[-1])]
    try:
        start, end = (_time(values[fields.index(name)], path, row) for name in ("start", "end"))
    except ValueError:
        raise FormatError(path, row + 1, "the ASS/SSA [Events] format names no Start or End") from None
    return head, values[-1], start, end


def read(text: str, path: Path | None) -> tuple[list[Cue], str, list[str]]:
    """Cues, the text before the first cue, and warnings, from ``\\n``-separated ASS/SSA text."""
    lines = text.split("\n")
    offsets = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
    if not any(_SECTION.fullmatch(line) for line in lines[:50]):
        raise FormatError(path, 1, "no [Script Info] or [Events] section: not ASS/SSA subtitles")
    section, fields = "", _DEFAULT_FIELDS
    found: list[tuple[int, str, str, int, int]] = []  # row, head, text, start, end
    for row, line in enumerate(lines):
        if heading := _SECTION.fullmatch(line):
            section = heading.group(1).strip().lower()
        elif section == "events" and _FORMAT.fullmatch(line):
            fields = _fields(line)
        elif section == "events" and _DIALOGUE.match(line):
            found.append((row, *_dialogue(line, fields, path, row)))
    try:
        with warnings.catch_warnings():  # a field it reads as its default is not the user's to read
            warnings.simplefilter("ignore")
            pysubs2.SSAFile.from_string(text)
    except Exception as error:  # pysubs2 raises what its parsing meets; its reason is the message
        raise FormatError(path, None, f"not readable as ASS/SSA subtitles ({error})") from None
    if not found:
        return [], text, ["the file has no cues"]
    cues = []
    for (row, head, body, start, end), following in itertools.zip_longest(found, found[1:]):
        stop = offsets[following[0]] if following is not None else len(text)
        after = text[offsets[row] + len(lines[row]) : stop]
        written = AsWritten(None, "", head, after)
        cues.append(make_cue(None, start, end, body.replace(_BREAK, _NEWLINE), written, ass_escapes=True))
    preamble = text[: offsets[found[0][0]]]
    return cues, preamble, timing_warnings(cues, [row + 1 for row, *_ in found])


def write(document: Document, version: str = "ass") -> str:
    """ASS (or, ``version`` "ssa", SSA) text: as read, with each cue's text written back into its
    own line (a re-cut's new cue into a copy of the line before it, its times changed); a document
    of another format is written by pysubs2 with its default style."""
    if document.format != version:  # another format's, or SSA written as ASS (and back)
        source = (
            write(document, document.format) if document.format in ("ass", "ssa") else srt.write(document)
        )
        # pysubs2 converts what it can: SubRip's <i>, <b> and <u> become override tags.
        return str(pysubs2.SSAFile.from_string(source).to_string(version))
    parts = [document.preamble]
    template = next((cue.timing_line for cue in document.cues if cue.timing_line is not None), None)
    for cue in document.cues:
        head = cue.timing_line
        if head is None and cue.source_timing_line is not None:
            head = _with_times(cue.source_timing_line, cue.start, cue.end)
        if head is None:
            if template is None:
                raise ValueError("no Dialogue line to write a new cue's in")
            head = _with_times(template, cue.start, cue.end)
        template = cue.timing_line or template
        parts += [head, cue_text(cue), cue.after_text if cue.after_text is not None else "\n"]
    parts.append(document.trailer)
    return "".join(parts)


#: A time in a Dialogue line's head (hours, minutes, seconds, hundredths).
_HEAD_TIME = re.compile(r"\d+:\d{2}:\d{2}[.:]\d{2,3}")


def _with_times(head: str, start: int, end: int) -> str:
    """A Dialogue line's head with its two times (the first two in it) changed."""
    first, second = list(_HEAD_TIME.finditer(head))[:2]
    return (
        head[: first.start()]
        + _clock(start)
        + head[first.end() : second.start()]
        + _clock(end)
        + head[second.end() :]
    )


def _clock(millis: int) -> str:
    """``millis`` as ASS writes a time, to the hundredth (rounded as pysubs2 rounds it)."""
    return str(pysubs2.formats.substation.SubstationFormat.ms_to_timestamp(millis))


def as_subrip(document: Document) -> str:
    """An ASS/SSA document as SubRip text, for writing in another format: pysubs2 converts what
    SubRip can hold (italics, underline, line breaks) and leaves out what it cannot (positions,
    colours, fades, comments)."""
    return str(pysubs2.SSAFile.from_string(write(document, document.format)).to_string("srt"))


def cue_text(cue: Cue) -> str:
    """A cue's text as its Dialogue line holds it."""
    return cue.text().replace(_NEWLINE, _BREAK)
