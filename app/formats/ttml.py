"""Timed Text Markup Language (.ttml, .dfxp): the captions broadcasters and streaming services deliver.

A file is XML: a ``<tt>`` whose ``<body>`` holds ``<div>`` elements of ``<p>`` paragraphs, each a
cue (``begin`` with ``end`` or ``dur``, in the time of its parent), its text inside with ``<span>``
styling and ``<br/>`` line breaks. Python's expat parser checks the XML (a malformed file is
refused with its line); the cues are found in the file's own text, so that what Punctum writes is
the file as it was read with only marks and capitals changed: a paragraph's opening tag is the
cue's timing line, its content the cue's text, and what follows up to the next paragraph (its
closing tag, the ``</div><div>`` between) its spacing; everything before the first paragraph is the
preamble.

In the text, ``<br/>`` (spelt as the file first spells it: ``<br />``, ``<tt:br/>``) is a line break
(read as one and written back so; another spelling in the same file stays a tag); the file's own line
breaks inside a paragraph are spacing, as XML reads them (kept as ``_SOURCE_BREAK`` until written);
``<span>`` tags and entities are styling the words keep around them (``cuetext``).

Times: clock times (``00:01:02.5``, and ``00:01:02:12`` in frames) and offsets (``62.5s``, ``1500ms``,
``90f``, ``1000t``), with the document's ``ttp:frameRate``, ``ttp:subFrameRate`` and ``ttp:tickRate``;
a ``begin`` on a ``<body>`` or ``<div>`` moves the paragraphs inside it.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import xml.parsers.expat
from dataclasses import dataclass, field
from pathlib import Path

from app.core.model import Cue, Document
from app.formats.common import AsWritten, clock, make_cue, timing_warnings
from app.formats.errors import FormatError

#: A line break of the file's own inside a paragraph, as the cue's text holds it: XML spacing,
#: not a caption line (the decoded text has no carriage returns: line endings are read as ``\n``).
_SOURCE_BREAK = "\r"
_NEWLINE = "\n"
#: An opening tag, attribute values quoted (a ``>`` may stand inside one).
_OPENING_TAG = re.compile(r"<[^\s/>!?]+(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*\s*/?>")
_CLOSING_P = re.compile(r"</(?:[\w.-]+:)?p\s*>[ \t]*\n?[ \t]*")
_CLOCK = re.compile(r"(\d+):(\d{2}):(\d{2})(?:(\.\d+)|:(\d+(?:\.\d+)?))?")
#: A line break of any spelling (``<br />``, ``<tt:br/>``): a line break when converted.
_ANY_BREAK = re.compile(r"<(?:[\w.-]+:)?br\b[^<>]*>")
_OFFSET = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|f|t)")
_DEFAULT_FRAME_RATE, _DEFAULT_TICK_RATE = 30.0, 1.0


@dataclass
class _Rates:
    frame: float = _DEFAULT_FRAME_RATE
    sub_frame: float = 1.0
    tick: float = _DEFAULT_TICK_RATE


@dataclass
class _Paragraph:
    opening: tuple[int, int]  # byte offsets of its opening tag's start and of its content
    closing: int | None  # byte offset of ``</p>``; None for an empty ``<p/>``
    start: int
    end: int
    line: int
    prefix: str  # the namespace prefix its name is written with ("tt:"), for its line breaks


@dataclass
class _Reading:
    """What the expat handlers found."""

    path: Path | None
    rates: _Rates = field(default_factory=_Rates)
    offsets: list[int] = field(default_factory=list)  # the begin each open element sets
    paragraphs: list[_Paragraph] = field(default_factory=list)
    open_paragraph: _Paragraph | None = None
    saw_tt: bool = False


def _local(name: str) -> tuple[str, str]:
    """(prefix with its colon, local name) of a qualified XML name."""
    prefix, _, local = name.rpartition(":")
    return (prefix + ":" if prefix else ""), local


def _attribute(attributes: dict[str, str], local: str) -> str | None:
    for name, value in attributes.items():
        if _local(name)[1] == local:
            return value
    return None


def time_ms(expression: str, rates: _Rates, path: Path | None, line: int) -> int:
    """Milliseconds of a TTML time expression."""
    text = expression.strip()
    if clock := _CLOCK.fullmatch(text):
        hours, minutes, seconds, fraction, frames = clock.groups()
        total = int(hours) * 3600 + int(minutes) * 60 + int(seconds) + float(fraction or 0)
        if frames is not None:
            whole, _, sub = frames.partition(".")
            total += (int(whole) + float("0." + sub if sub else 0) / rates.sub_frame) / rates.frame
        return round(total * 1000)
    if offset := _OFFSET.fullmatch(text):
        count, metric = float(offset.group(1)), offset.group(2)
        seconds = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}.get(metric)
        if seconds is None:
            seconds = 1 / rates.frame if metric == "f" else 1 / rates.tick
        return round(count * seconds * 1000)
    raise FormatError(path, line, f"unreadable time {expression!r} in a TTML paragraph")


def _rates(attributes: dict[str, str], path: Path | None, line: int) -> _Rates:
    rates = _Rates()
    for local, name in (("frameRate", "frame"), ("subFrameRate", "sub_frame"), ("tickRate", "tick")):
        value = _attribute(attributes, local)
        if value is None:
            continue
        try:
            number = float(value)
        except ValueError:
            number = 0.0
        if not number > 0:
            raise FormatError(path, line, f"unreadable ttp:{local} {value!r} in a TTML document")
        setattr(rates, name, number)
    multiplier = _attribute(attributes, "frameRateMultiplier")
    if multiplier and re.fullmatch(r"\d+ \d+", multiplier.strip()):
        numerator, denominator = (int(n) for n in multiplier.split())
        if numerator and denominator:
            rates.frame *= numerator / denominator
    return rates


def _parse(data: bytes, path: Path | None) -> _Reading:
    reading = _Reading(path)
    parser = xml.parsers.expat.ParserCreate(encoding="UTF-8")

    def start(name: str, attributes: dict[str, str]) -> None:
        prefix, local = _local(name)
        line = parser.CurrentLineNumber
        if not reading.saw_tt and local != "tt":  # the root is not a <tt>
            raise FormatError(path, line, f"a <{name}> where <tt> should be: not TTML captions")
        if local == "tt" and not reading.saw_tt:
            reading.saw_tt = True
            reading.rates = _rates(attributes, path, line)
        begin = _attribute(attributes, "begin")
        parent = reading.offsets[-1] if reading.offsets else 0
        here = parent + (time_ms(begin, reading.rates, path, line) if begin is not None else 0)
        reading.offsets.append(here)
        if local != "p":
            return
        if begin is None:
            raise FormatError(
                path, line, "a TTML paragraph with no begin time: Punctum reads timed paragraphs"
            )
        end, duration = _attribute(attributes, "end"), _attribute(attributes, "dur")
        if end is not None:
            stop = parent + time_ms(end, reading.rates, path, line)
        elif duration is not None:
            stop = here + time_ms(duration, reading.rates, path, line)
        else:
            raise FormatError(path, line, "a TTML paragraph with no end or dur")
        index = parser.CurrentByteIndex
        tag = _OPENING_TAG.match(data[index : index + 10_000].decode("utf-8", "replace"))
        if tag is None:
            raise FormatError(path, line, "an unreadable TTML paragraph tag")
        length = len(tag.group(0).encode("utf-8"))
        empty = tag.group(0).endswith("/>")
        paragraph = _Paragraph((index, index + length), None if empty else -1, here, stop, line, prefix)
        reading.paragraphs.append(paragraph)
        reading.open_paragraph = None if empty else paragraph

    def end(name: str) -> None:
        reading.offsets.pop()
        if _local(name)[1] == "p" and reading.open_paragraph is not None:
            reading.open_paragraph.closing = parser.CurrentByteIndex
            reading.open_paragraph = None

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as error:
        raise FormatError(path, error.lineno, f"not well-formed TTML XML ({_reason(error)})") from None
    if not reading.saw_tt:
        raise FormatError(path, 1, "no <tt> element: not TTML captions")
    return reading


def _reason(error: xml.parsers.expat.ExpatError) -> str:
    return xml.parsers.expat.ErrorString(error.code)


def read(text: str, path: Path | None) -> tuple[list[Cue], str, list[str]]:
    """Cues, the text before the first cue, and warnings, from ``\\n``-separated TTML text."""
    data = text.encode("utf-8")
    reading = _parse(data, path)
    if not reading.paragraphs:
        return [], text, ["the file has no cues"]
    # Byte offsets to the text's own: each paragraph's, in order.
    marks = sorted(
        {o for p in reading.paragraphs for o in (*p.opening, p.closing) if o is not None and o >= 0}
    )
    at = dict(zip(marks, _character_offsets(data, marks), strict=True))
    spelling = break_tag(text)
    cues = []
    for paragraph, following in itertools.zip_longest(reading.paragraphs, reading.paragraphs[1:]):
        tag_start, content = (at[o] for o in paragraph.opening)
        closing = at[paragraph.closing] if paragraph.closing is not None else content
        stop = at[following.opening[0]] if following is not None else len(text)
        body = text[content:closing].replace(_NEWLINE, _SOURCE_BREAK)
        body = body.replace(spelling or f"<{paragraph.prefix}br/>", _NEWLINE)
        written = AsWritten(None, "", text[tag_start:content], text[closing:stop])
        cues.append(make_cue(None, paragraph.start, paragraph.end, body, written))
    preamble = text[: at[reading.paragraphs[0].opening[0]]]
    return cues, preamble, timing_warnings(cues, [p.line for p in reading.paragraphs])


def _character_offsets(data: bytes, offsets: list[int]) -> list[int]:
    """The character offsets of sorted UTF-8 byte ``offsets`` into ``data``."""
    found, characters, last = [], 0, 0
    for offset in offsets:
        characters += len(data[last:offset].decode("utf-8"))
        found.append(characters)
        last = offset
    return found


def write(document: Document) -> str:
    """TTML text: as read, with each cue's text written back into its own paragraph (a re-cut's
    new cue into a copy of the paragraph its words came from, its times changed)."""
    parts = [document.preamble]
    template: Cue | None = next((cue for cue in document.cues if cue.timing_line is not None), None)
    # A file whose every paragraph a re-cut replaced: new ones, named as the file names its own.
    root = re.search(r"<([\w.-]+:)?tt[\s>]", document.preamble)
    prefix = root.group(1) or "" if root else ""
    begins = (
        _Begins(_document_rates(document.preamble))
        if any(c.timing_line is None for c in document.cues)
        else None
    )
    for cue in document.cues:
        opening = cue.timing_line
        if opening is None:
            like = cue.source_timing_line or (template.timing_line if template else None)
            # Its times are the document's; the elements around it may begin later.
            offset = begins.offset(parts) if begins is not None else 0
            opening = _with_times(
                like or f'<{prefix}p begin="0" end="0">', cue.start - offset, cue.end - offset
            )
        else:
            template = cue
        after = cue.after_text
        if after is None:
            closing = _CLOSING_P.match(template.after_text or "") if template else None
            after = closing.group(0) if closing else f"</{prefix}p>\n"
        parts += [opening, cue_text(cue, _prefix(opening), document.break_tag), after]
    parts.append(document.trailer)
    return "".join(parts)


_TAG = re.compile(r"<(/?)([^\s/>!?]+)((?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*)\s*(/?)>")
_BEGIN = re.compile(r"\s(?:[\w.-]+:)?begin\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")


class _Begins:
    """The begin the elements open at a point of the text being written set, read from the
    text written so far (each part once)."""

    def __init__(self, rates: _Rates) -> None:
        self.rates = rates
        self.open: list[tuple[str, int]] = []  # (local name, its begin in document time)
        self.read = 0  # parts read so far

    def offset(self, parts: list[str]) -> int:
        for part in parts[self.read :]:
            for closing, name, attributes, empty in _TAG.findall(part):
                local = _local(name)[1]
                if closing:
                    while self.open and self.open.pop()[0] != local:
                        pass
                    continue
                here = self.open[-1][1] if self.open else 0
                begin = _BEGIN.search(attributes)
                if begin is not None:
                    with contextlib.suppress(FormatError):
                        here += time_ms(begin.group(1) or begin.group(2) or "", self.rates, None, 0)
                if not empty:
                    self.open.append((local, here))
        self.read = len(parts)
        return self.open[-1][1] if self.open else 0


def _document_rates(preamble: str) -> _Rates:
    """The frame, sub-frame and tick rates the ``<tt>`` element of ``preamble`` sets."""
    root = re.search(r"<(?:[\w.-]+:)?tt\b([^<>]*)>", preamble)
    attributes = dict(re.findall(r"([^\s=]+)\s*=\s*[\"']([^\"']*)[\"']", root.group(1))) if root else {}
    try:
        return _rates(attributes, None, 0)
    except FormatError:
        return _Rates()


def _prefix(opening: str) -> str:
    name = re.match(r"<([^\s/>]+)", opening)
    return _local(name.group(1))[0] if name else ""


def cue_text(cue: Cue, prefix: str = "", spelling: str | None = None) -> str:
    """A cue's text as its paragraph holds it, its line breaks spelt as the file spells them
    (``spelling``; else ``<br/>`` with the paragraph's ``prefix``)."""
    line_break = spelling or f"<{prefix}br/>"
    return cue.text().replace(_NEWLINE, line_break).replace(_SOURCE_BREAK, _NEWLINE)


def break_tag(text: str) -> str | None:
    """The line-break tag of a TTML file as it spells it (its first: ``<br/>``, ``<br />``,
    ``<tt:br/>``); None for a file with none."""
    found = _ANY_BREAK.search(text)
    return found.group(0) if found else None


_TIME_ATTRIBUTE = re.compile(r"(\s)((?:[\w.-]+:)?)(begin|end|dur)(\s*=\s*)(\"[^\"]*\"|'[^']*')")


def _with_times(opening: str, start: int, end: int) -> str:
    """A paragraph's opening tag with its begin and end made ``start`` and ``end`` (clock times;
    a ``dur`` becomes an ``end``), in the time of the elements around it."""

    def replaced(match: re.Match[str]) -> str:
        space, prefix, name, equals, quoted = match.groups()
        value = clock(max(0, start if name == "begin" else end), 2, ".")
        return f"{space}{prefix}{'begin' if name == 'begin' else 'end'}{equals}{quoted[0]}{value}{quoted[0]}"

    return _TIME_ATTRIBUTE.sub(replaced, opening)


def as_subrip(document: Document) -> str:
    """A TTML document as SubRip text, for writing in another format: the words, marks and line
    breaks; styling (spans, regions) has no place there and entities are written as characters."""
    import html

    blocks = []
    for number, cue in enumerate(document.cues, start=1):
        text = _ANY_BREAK.sub("\0", cue.text().replace(_NEWLINE, "\0"))
        plain = re.sub(r"<[^<>]*>", "", text)
        plain = html.unescape(re.sub(r"\s+", " ", plain)).replace(" \0 ", "\n").replace("\0", "\n").strip()
        blocks.append(f"{number}\n{clock(cue.start, 2, ',')} --> {clock(cue.end, 2, ',')}\n{plain}\n")
    return "\n".join(blocks)


_ESCAPED_ENTITY = re.compile(r"&amp;([A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")
#: The entities XML has by name; any other (``&nbsp;``) is written as its number.
_XML_ENTITIES = frozenset(("amp", "lt", "gt", "quot", "apos"))


def entities_kept(written: str) -> str:
    """TTML whose writer escaped the entities of its source's text as text: each an entity again
    (by number where XML has no name for it)."""
    import html

    def kept(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith("#") or name in _XML_ENTITIES:
            return f"&{name};"
        char = html.unescape(f"&{name};")
        return f"&#{ord(char)};" if len(char) == 1 else match.group(0)

    return _ESCAPED_ENTITY.sub(kept, written)
