"""Writing SCC: an SCC file's captions back into its own codes, captions of other formats by
pycaption's writer, and what the writing changed on screen, said per cue (``changes``)."""

from __future__ import annotations

import html
import re

from app.core.model import Cue, Document
from app.formats import cea608
from app.formats.errors import FormatError
from app.formats.scc import (
    END_OF_CAPTION,
    ERASE_DISPLAYED,
    HEADER,
    PAINT_ON,
    POP_ON,
    ROLL_UP,
    ROW_COLUMNS,
    Timecode,
    as_read,
    parse_line,
    read,
)


def write(document: Document) -> str:
    """SCC text of an SCC document as read (``as_read``): each changed caption's codes written
    again (``cea608.rewrite``) and a line that got longer started earlier where that moves
    nothing on screen."""
    parts = [document.preamble]
    before = [document.preamble]
    source = "".join(cue.timing_line or "" for cue in document.cues)
    doubled = cea608.sent_twice(source)
    upper = bool(re.search(r"[A-F]", source)) and not re.search(r"[a-f]", source)
    for cue in document.cues:
        codes = cue.timing_line or ""
        text = cue.text()
        parts.append(
            codes
            if text == cue.original_text
            else cea608.rewrite(cea608.read_codes(codes), text, doubled, upper)
        )
        parts.append(cue.after_text or "")
        before += [codes, cue.after_text or ""]
    return _retimed("".join(before), "".join(parts) + document.trailer)


#: Codes whose frame is a time on screen: a caption shown, the screen cleared, a row rolled up,
#: captions sent straight to the screen begun.
_ON_SCREEN = frozenset((END_OF_CAPTION, ERASE_DISPLAYED, cea608.CARRIAGE_RETURN, PAINT_ON, *ROLL_UP))


def _retimed(before: str, after: str) -> str:
    """``after`` with each line that got longer than it was in ``before`` started as many frames
    earlier where what it sends before its change is out of sight (pop-on captions being loaded)
    and the line before leaves room; elsewhere what follows the change is sent later (and
    ``changes`` says so)."""
    if before == after:
        return after
    old_lines, new_lines = before.split("\n"), after.split("\n")
    if len(old_lines) != len(new_lines):
        return after
    sent_until: int | None = None  # the frame after the last word of the line before
    mode = "pop"
    for number, (old, new) in enumerate(zip(old_lines, new_lines, strict=True)):
        if not new.strip() or number == 0:
            continue
        timecode, words = parse_line(new, number + 1, None)
        new_words = [word.group().lower() for word in words]
        old_words = (
            new_words if old == new else [w.group().lower() for w in parse_line(old, number + 1, None)[1]]
        )
        grown = len(new_words) - len(old_words)
        if grown > 0:
            same = 0
            while same < len(old_words) and old_words[same] == new_words[same]:
                same += 1
            earlier = timecode.moved(-grown)
            if (
                earlier is not None
                and mode == "pop"
                and not _ON_SCREEN.intersection(old_words[:same])
                and (sent_until is None or earlier.frame_count >= sent_until)
            ):
                new_lines[number] = earlier.written() + new[11:]
                timecode = earlier
        sent_until = timecode.frame_count + len(new_words)
        for code in old_words:
            if code in ROLL_UP or code in (POP_ON, PAINT_ON):
                mode = "pop" if code == POP_ON else "on screen"
    return "\n".join(new_lines)


def written_anew(webvtt: str) -> str:
    """SCC text of captions given as WebVTT, by pycaption's writer: pop-on captions of rows of 32
    columns at most, loaded ahead of their times, italics as mid-row codes (pycaption's WebVTT
    reader reads the tags and entities its SubRip reader would write as characters)."""
    from pycaption import SCCWriter, WebVTTReader

    if "-->" not in webvtt:
        return HEADER + "\n\n"
    # Characters SCC has no code for go in their plain forms, or not at all: pycaption would
    # write a pound sign.
    plain = "".join(char if char.isascii() else cea608.encodable(char) for char in webvtt)
    captions = WebVTTReader().read(plain)
    language = next(iter(captions.get_languages()), None)
    times = [(c.start / 1000, c.end / 1000) for c in captions.get_captions(language)] if language else []
    return _on_their_frames(str(SCCWriter().write(captions)), times)


def _on_their_frames(written: str, times: list[tuple[float, float]]) -> str:
    """pycaption's SCC with each caption shown and cleared in the frames of its ``times`` (start
    and end, ms), as far as the lines before leave room: pycaption places its lines a few frames
    off, erases the screen two frames before each End Of Caption (which alone takes the caption
    shown off as it shows the next) and not at all in a short pause between two captions."""
    lines = written.split("\n")
    sent = {
        number: (timecode, [word.group().lower() for word in words])
        for number, line in enumerate(lines)
        if number and line.strip()
        for timecode, words in [parse_line(line, number + 1, None)]
    }
    plans = _line_plans(sent, len(times))
    if plans is None:
        return written  # not the captions given: left as pycaption wrote them
    erased = {caption for kind, caption in plans.values() if kind == "erase"}
    sent_until = 0
    for number, (timecode, codes) in sent.items():
        start: int | None = None
        kind, caption = plans.get(number, ("", -1))
        if kind == "show":
            at = codes.index(END_OF_CAPTION)
            start = max(_frame(times[caption][0]) - at, sent_until)
            if caption > 0 and caption - 1 not in erased and times[caption - 1][1] < times[caption][0]:
                # The pause before it: an erase in the frame the caption before ends.
                start = max(start - 2, sent_until)
                into = min(max(_frame(times[caption - 1][1]) - start, 0), at)
                codes[into:into] = [ERASE_DISPLAYED] * 2
        elif kind == "erase":
            start = max(_frame(times[caption][1]), sent_until)
        if start is not None and not timecode.drop:
            timecode = timecode.moved(start - timecode.frame_count) or timecode
        lines[number] = f"{timecode.written()}\t{' '.join(codes)}"
        sent_until = timecode.frame_count + len(codes)
    return "\n".join(lines)


def _line_plans(
    sent: dict[int, tuple[Timecode, list[str]]], captions: int
) -> dict[int, tuple[str, int]] | None:
    """Which line (of the ``sent`` lines' codes) shows which caption ("show") and which line only
    erases the one shown ("erase"), with pycaption's erase before each End Of Caption taken out
    of its codes; None where the lines do not show ``captions`` captions."""
    plans: dict[int, tuple[str, int]] = {}
    shown = 0
    for number, (_, codes) in sent.items():
        if END_OF_CAPTION in codes:
            at = codes.index(END_OF_CAPTION)
            if codes[max(0, at - 2) : at] == [ERASE_DISPLAYED] * 2:
                del codes[at - 2 : at]
            plans[number] = ("show", shown)
            shown += 1
        elif codes[:1] == [ERASE_DISPLAYED] and shown:
            plans[number] = ("erase", shown - 1)
    return plans if shown == captions else None


def _frame(millis: float) -> int:
    """The non-drop frame count of a time: 30 frames a timecode second of 1001 ms."""
    return round(millis * 30 / 1001)


def changes(document: Document, written: str) -> list[str]:
    """What writing ``document`` as SCC changes on screen beyond its marks and capitals, one line
    a cue: found by reading back ``written``, the SCC it is written as."""
    anew = not as_read(document)
    if not anew and all(cue.text() == cue.original_text for cue in document.cues):
        return []  # written as read
    said = (
        ["the captions are written anew as pop-on SCC: the file's positions and styling are not kept"]
        if anew and document.format == "scc"
        else []
    )
    try:
        cues, _, _ = read(written, None)
    except FormatError as error:  # pragma: no cover - what ``write`` writes reads
        return [*said, f"the SCC written does not read back ({error.reason})"]
    if anew or len(cues) != len(document.cues):
        for number, cue in enumerate(document.cues, start=1):
            widest = max((len(row.strip()) for row in _shown_text(cue.text()).split("\n")), default=0)
            if widest > ROW_COLUMNS:
                said.append(
                    f"cue {number}: a row of {widest} characters is broken into rows of {ROW_COLUMNS}"
                )
            if len(cues) == len(document.cues):  # times to the frame are SCC's; more is said
                back = cues[number - 1]
                said += [line for line in _moved(number, cue, back) if "1 frame " not in line]
                said += _lost(number, _shown_text(cue.text()), _shown_text(back.text()))
        return said
    for number, (cue, back) in enumerate(zip(document.cues, cues, strict=True), start=1):
        said += _cue_changes(number, cue, back)
    return said


def _shown_text(text: str) -> str:
    """What a cue shows: its tags left out, its entities as characters."""
    return html.unescape(re.sub(r"<[^<>]*>|\{\\[^{}]*\}", "", text))


def _lost(number: int, wanted: str, shown: str) -> list[str]:
    """Characters of ``wanted`` that SCC has no code for: written as their plain forms, or left out."""
    said = []
    for char in sorted(set(wanted) - set(shown)):
        if char == "\n":
            said.append(
                f"cue {number}: a row below the bottom one has no place in SCC: its words go on the row above"
            )
            continue
        plain = cea608.encodable(char)
        done = f"written as {plain!r}" if plain else "left out"
        said.append(f"cue {number}: {char} has no place in SCC: {done}")
    return said


def _moved(number: int, cue: Cue, back: Cue) -> list[str]:
    said = []
    for name, want, got in (("shown", cue.start, back.start), ("cleared", cue.end, back.end)):
        frames = _frame(got - want)
        if frames:
            later = "later" if frames > 0 else "earlier"
            said.append(f"cue {number}: {name} {abs(frames)} frame{'s' if abs(frames) > 1 else ''} {later}")
    return said


def _cue_changes(number: int, cue: Cue, back: Cue) -> list[str]:
    said = _moved(number, cue, back)
    if back.text() != cue.text():
        said += _lost(number, cue.text(), back.text()) or [
            f"cue {number}: written otherwise: {back.text()!r}"
        ]
    if cue.text() != cue.original_text:
        widest = max(len(row) for row in back.text().split("\n"))
        if widest > ROW_COLUMNS >= max(len(row) for row in cue.original_text.split("\n")):
            said.append(f"cue {number}: a row of {widest} columns; CEA-608 shows {ROW_COLUMNS}")
    return said
