"""Scenarist Closed Captions (.scc): CEA-608 captions as US broadcast delivers them.

After a ``Scenarist_SCC V1.0`` header, each line is a timecode (``00:00:01:12``; ``;`` before the
frames: drop-frame) and the hex words sent from that frame on, one word a frame at 30000/1001
frames a second (``cea608`` reads them). A caption is what the codes put on screen between two
clears:

- pop-on (``9420``): loaded out of sight, shown at End Of Caption (``942f``), until the next one
  is shown or the screen is erased (``942c``);
- roll-up (``9425``-``94a7``): each row as it is sent, until the next row comes (a carriage return,
  ``94ad``, rolls it up);
- paint-on (``9429``): shown as it is sent, until the next one starts or the screen is erased.

A cue's text is what its caption shows, a new row a line break; its codes, from its first position
or character to its last character, are its timing line as the file writes them, and what lies
between two captions' codes is the spacing after the first. So a file whose marks are kept writes
back byte for byte; a changed caption's changed runs are written anew (``cea608.rewrite``), and a
line that got longer starts as many frames earlier where that moves nothing on screen. What the
writing changed on screen anyway (a caption shown later, a row longer than 32 columns, a character
SCC has not) is said per cue before writing (``scc_writer``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from app.core.model import Cue, Document
from app.formats import cea608
from app.formats.common import AsWritten, clock, make_cue, timing_warnings
from app.formats.errors import FormatError

HEADER = "Scenarist_SCC V1.0"
_LINE = re.compile(r"(\d{2}):(\d{2}):(\d{2})([:;])(\d{2})(?:([ \t]+)(.*))?")
_WORD = re.compile(r"[0-9A-Fa-f]{4}")
_NOT_SPACE = re.compile(r"\S+")
#: The widest row CEA-608 shows.
ROW_COLUMNS = 32
#: How long the last caption stays when the file ends before anything clears it.
_LAST_CAPTION_MS = 4000
END_OF_CAPTION, ERASE_DISPLAYED, ERASE_NON_DISPLAYED = "942f", "942c", "94ae"
POP_ON, PAINT_ON = "9420", "9429"
ROLL_UP = frozenset(("9425", "9426", "94a7"))


@dataclass(frozen=True)
class Timecode:
    hours: int
    minutes: int
    seconds: int
    frames: int
    drop: bool

    @property
    def frame_count(self) -> int:
        """Frames since 00:00:00:00 (drop-frame labels skip two a minute but every tenth)."""
        minutes = self.hours * 60 + self.minutes
        count = (minutes * 60 + self.seconds) * 30 + self.frames
        return count - 2 * (minutes - minutes // 10) if self.drop else count

    def millis(self, later_frames: int = 0) -> int:
        """The time of a word ``later_frames`` words into the line, as pycaption reads it: a
        drop-frame label is clock time, a non-drop one runs 1001/1000 slow."""
        seconds = self.hours * 3600 + self.minutes * 60 + self.seconds + (self.frames + later_frames) / 30
        return round(seconds * (1.0 if self.drop else 1.001) * 1000)

    def moved(self, frames: int) -> Timecode | None:
        """The timecode ``frames`` frames later (earlier when negative); None before zero."""
        count = self.frame_count + frames
        if count < 0:
            return None
        if self.drop:  # the labels drop-frame counting skips, put back
            tens, rest = divmod(count, 17982)
            count += 18 * tens + (2 * ((rest - 2) // 1798) if rest >= 2 else 0)
        seconds, frame = divmod(count, 30)
        minutes, second = divmod(seconds, 60)
        hour, minute = divmod(minutes, 60)
        return Timecode(hour, minute, second, frame, self.drop)

    def written(self) -> str:
        separator = ";" if self.drop else ":"
        return f"{self.hours:02d}:{self.minutes:02d}:{self.seconds:02d}{separator}{self.frames:02d}"


@dataclass(slots=True)
class _Word:
    span: tuple[int, int]
    code: str  # lowercase
    line: int
    timecode: Timecode  # its line's
    index: int  # among its line's words: the frames after the timecode it is sent in

    @property
    def millis(self) -> int:
        return self.timecode.millis(self.index)


def parse_line(line: str, number: int, path: Path | None) -> tuple[Timecode, list[re.Match[str]]]:
    """A line's timecode and its words (with their places in the line); a line that is not one is
    a ``FormatError`` naming it."""
    match = _LINE.fullmatch(line.rstrip())
    if match is None:
        raise FormatError(
            path, number, f"unreadable SCC line {line.strip()[:40]!r}; expected a timecode and hex words"
        )
    hours, minutes, seconds, separator, frames = match.group(1, 2, 3, 4, 5)
    if int(frames) >= 30 or int(minutes) > 59 or int(seconds) > 59:
        raise FormatError(
            path, number, f"SCC timecode {match.group(0)[:11]} runs past its frames, seconds or minutes"
        )
    words = list(_NOT_SPACE.finditer(line, match.start(7))) if match.group(7) else []
    for word in words:
        if not _WORD.fullmatch(word.group()):
            raise FormatError(
                path, number, f"{word.group()[:12]!r} is not an SCC caption word (four hex digits)"
            )
    timecode = Timecode(int(hours), int(minutes), int(seconds), int(frames), separator == ";")
    return timecode, words


def _words(text: str, path: Path | None) -> list[_Word]:
    """Every word of the file with its time; a file without the header, or with a line that is
    neither blank nor a timecode and words, is a ``FormatError``."""
    lines = text.split("\n")
    if lines[0].strip() != HEADER:
        raise FormatError(path, 1, f"no {HEADER!r} header: not SCC captions")
    words: list[_Word] = []
    offset = len(lines[0]) + 1
    for number, line in enumerate(lines[1:], start=2):
        if line.strip():
            timecode, found = parse_line(line, number, path)
            for index, word in enumerate(found):
                span = (offset + word.start(), offset + word.end())
                words.append(_Word(span, word.group().lower(), number, timecode, index))
        offset += len(line) + 1
    return words


@dataclass
class _Caption:
    first: int  # its codes' first and last word among the file's
    last: int
    start: int
    end: int | None = None


@dataclass
class _Screen:
    """What the codes have put where, as the file is read."""

    mode: str = "pop"
    loading: list[int] = field(default_factory=list)  # words of the caption being loaded
    painting: list[int] = field(default_factory=list)  # of the roll-up row or paint-on caption
    shown: _Caption | None = None  # a pop-on caption on screen
    captions: list[_Caption] = field(default_factory=list)
    open: list[_Caption] = field(default_factory=list)  # shown until the next caption starts
    last_word: int = -1  # the last word of the captions so far


def _captions(words: list[_Word], copies: list[bool]) -> list[_Caption]:
    screen = _Screen()
    channel = 1
    for index, (word, copy) in enumerate(zip(words, copies, strict=True)):
        code = word.code
        if cea608.is_control(code):
            if copy:
                continue
            channel = cea608.channel_of(code)
            if channel == 1:
                _command(screen, words, index)
        elif channel == 1 and cea608.characters(code):
            _character(screen, index)
    _flush(screen, words, None)
    for caption in screen.open + ([screen.shown] if screen.shown else []):
        caption.end = caption.start + _LAST_CAPTION_MS
    return sorted(screen.captions, key=lambda caption: caption.first)


def _character(screen: _Screen, index: int) -> None:
    (screen.loading if screen.mode == "pop" else screen.painting).append(index)


def _command(screen: _Screen, words: list[_Word], index: int) -> None:
    code, time = words[index].code, words[index].millis
    if cea608.code_text(code) is not None:
        _character(screen, index)
    elif code == END_OF_CAPTION:
        _flush(screen, words, time)
        _show(screen, time)
        if screen.loading:
            screen.shown = _begin(screen, words, screen.loading, time)
            screen.loading = []
    elif code == ERASE_DISPLAYED:
        _flush(screen, words, time)
        _show(screen, time)
    elif code == ERASE_NON_DISPLAYED:
        screen.loading = []
    elif code in ROLL_UP or code in (POP_ON, PAINT_ON):
        if code != POP_ON:
            _flush(screen, words, None)
        screen.mode = "pop" if code == POP_ON else "paint" if code == PAINT_ON else "roll"
    elif code == cea608.CARRIAGE_RETURN and screen.mode == "roll":
        _flush(screen, words, None)


def _begin(screen: _Screen, words: list[_Word], indexes: list[int], start: int) -> _Caption:
    """A caption of the words ``indexes``, from its position code (when one comes just before)
    to its last character; the captions still open end where it starts."""
    first = indexes[0]
    while first > 0 and words[first - 1].code in cea608.TAB_OFFSETS:
        first -= 1
    if first > 0 and cea608.pac_row(words[first - 1].code) is not None:
        first -= 1
        if first > 0 and words[first - 1].code == words[first].code:
            first -= 1
    # Its position code may not be the previous caption's; its characters sent among another
    # caption's are two memories filled at once, which ``read`` refuses.
    first = max(first, screen.last_word + 1) if indexes[0] > screen.last_word else indexes[0]
    caption = _Caption(first, indexes[-1], start)
    screen.last_word = max(screen.last_word, caption.last)
    for waiting in screen.open:
        waiting.end = start
    screen.open = []
    screen.captions.append(caption)
    return caption


def _flush(screen: _Screen, words: list[_Word], time: int | None) -> None:
    """The roll-up row or paint-on caption being sent is a caption, shown from its first
    character; ``time``: when it is cleared (None: when the next caption starts)."""
    if not screen.painting:
        return
    caption = _begin(screen, words, screen.painting, words[screen.painting[0]].millis)
    screen.painting = []
    if time is None:
        screen.open.append(caption)
    else:
        caption.end = time


def _show(screen: _Screen, time: int) -> None:
    """The pop-on caption on screen goes at ``time``; so do the captions still open."""
    if screen.shown is not None:
        screen.shown.end = time
        screen.shown = None
    for waiting in screen.open:
        waiting.end = time
    screen.open = []


def read(text: str, path: Path | None) -> tuple[list[Cue], str, list[str]]:
    """Cues, the text before the first caption's codes, and warnings, from ``\\n``-separated SCC."""
    words = _words(text, path)
    copies = list(cea608.copies((word.code, word.line) for word in words))
    captions = _captions(words, copies)
    cues: list[Cue] = []
    kept: list[_Caption] = []
    for caption in captions:
        if kept and caption.first <= kept[-1].last:
            line = words[caption.first].line
            raise FormatError(
                path, line, "two SCC captions are sent into two memories at once; Punctum reads one at a time"
            )
        if caption.last + 1 < len(words) and copies[caption.last + 1]:  # its last code's copy too
            caption.last += 1
        base = words[caption.first].span[0]
        codes = text[base : words[caption.last].span[1]]
        own = words[caption.first : caption.last + 1]
        shown = cea608.codes_of(
            codes,
            [(w.span[0] - base, w.span[1] - base) for w in own],
            [w.code for w in own],
            [w.line for w in own],
        ).text
        if not shown.strip():
            continue  # spaces alone: nothing to read, kept as the file has it
        end = caption.end if caption.end is not None else caption.start + _LAST_CAPTION_MS
        cues.append(make_cue(None, caption.start, end, shown, AsWritten(None, "", codes, None)))
        kept.append(caption)
    if not cues:
        return [], text, ["the file has no captions"]
    starts = [words[caption.first].span[0] for caption in kept]
    ends = [words[caption.last].span[1] for caption in kept]
    for number, cue in enumerate(cues):
        cue.after_text = text[ends[number] : starts[number + 1] if number + 1 < len(cues) else len(text)]
    warnings = timing_warnings(cues, [words[caption.first].line for caption in kept])
    return cues, text[: starts[0]], warnings


def as_subrip(document: Document) -> str:
    """An SCC document as SubRip text, for writing in another format: each caption's rows as
    lines, the spaces that place them left out."""
    blocks = []
    for number, cue in enumerate(document.cues, start=1):
        rows = "\n".join(row.strip() for row in cue.text().split("\n") if row.strip())
        blocks.append(f"{number}\n{clock(cue.start, 2, ',')} --> {clock(cue.end, 2, ',')}\n{rows}\n")
    return "\n".join(blocks)


def as_read(document: Document) -> bool:
    """Whether ``document`` is an SCC file's captions, each with its codes (not a re-cut's)."""
    return document.format == "scc" and all(cue.timing_line is not None for cue in document.cues)
