"""The CEA-608 codes of a caption as an SCC file holds them: what a run of codes shows, and the
same run written again with other text.

An SCC line is a timecode and two-byte words in hex, one word a frame. A word whose first byte
(parity bit set aside) is below 0x20 is a control code: a command, a position (PAC), a mid-row style,
or a special or extended character; the others carry two standard characters, ``80`` (a null)
filling an odd one. Control codes are usually sent twice, and a code that repeats the one just
before it is that copy, not a second command. An extended character replaces the standard
character before it on its row (the stand-in for decoders that lack it).

A caption's codes are read here as pieces: a run of character words, or a control code with its
copy. What a piece shows: its characters; a position on a new row, a carriage return: a line
break; a mid-row style: the space it takes on screen; other commands: nothing. ``rewrite`` keeps
every piece whose characters did not change as the file has it, word for word, and writes only
the changed runs anew (a new mark joins the run of the word before it), with nulls after them
where a run got shorter, so that every code after them is sent in the frame it was.

The code tables are pycaption's (``pycaption.scc.constants``), of channel 1; codes of channel 2
and the characters after them are kept but not read.
"""

from __future__ import annotations

import difflib
import functools
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

#: A word of the codes (four hex digits), or a line's timecode between two words of a caption.
_TOKEN = re.compile(r"(?P<time>\d{2}:\d{2}:\d{2}[:;]\d{2})|(?P<word>[0-9A-Fa-f]{4})")
NULL = 0x80
CARRIAGE_RETURN, BACKSPACE = "94ad", "94a1"
#: The lowest of the screen's 15 rows.
BOTTOM_ROW = 15
TAB_OFFSETS = frozenset(("97a1", "97a2", "9723"))


@functools.cache
def tables() -> Any:
    """pycaption's CEA-608 tables (imported when an SCC file is first read: it takes 0.3 s)."""
    from pycaption.scc import constants

    return constants


@functools.cache
def _standard() -> dict[int, str]:
    """A standard character byte, parity bit set aside, -> its character."""
    return {int(code, 16) & 0x7F: char for code, char in tables().CHARACTERS.items() if char}


@functools.cache
def is_control(word: str) -> bool:
    return 0x10 <= int(word[:2], 16) & 0x7F < 0x20


@functools.cache
def characters(word: str) -> str:
    """The standard characters a word that is not a control code carries (nulls carry none)."""
    return "".join(_standard().get(byte & 0x7F, "") for byte in bytes.fromhex(word))


@functools.cache
def channel_of(word: str) -> int:
    """The channel a control code speaks to: 1 (data channel 1, as 0x10-0x17) or 2."""
    return 2 if int(word[:2], 16) & 0x08 else 1


@functools.cache
def pac_row(word: str) -> int | None:
    """The row a Preamble Address Code puts the cursor on; None for any other word."""
    rows = tables().PAC_BYTES_TO_POSITIONING_MAP.get(word[:2], {})
    position = rows.get(word[2:])
    return None if position is None else int(position[0])


def code_text(word: str) -> str | None:
    """The character a special or extended character code shows; None for other codes."""
    constants = tables()
    char = constants.SPECIAL_CHARS.get(word) or constants.EXTENDED_CHARS.get(word)
    return str(char) if char else None


def is_extended(word: str) -> bool:
    return word in tables().EXTENDED_CHARS


def copies(words: Iterable[tuple[str, int]]) -> Iterator[bool]:
    """For each of ``words`` (a code and its line), whether it repeats the control code just
    before it on its line: the copy a decoder ignores, not a second command (a copy's copy is a
    command again)."""
    previous, previous_line = "", -1
    for word, line in words:
        copy = word == previous and line == previous_line
        yield copy
        previous, previous_line = ("" if copy or not is_control(word) else word), line


@dataclass
class Piece:
    """A run of character words, or a control code and its copy, of one line of a caption."""

    words: list[int]  # their indexes among the caption's words
    text: str  # what they show
    is_run: bool
    hidden: str = ""  # a run's last character, replaced on screen by the extended one after it


@dataclass
class Codes:
    """A caption's codes as the file writes them, read into pieces."""

    source: str
    spans: list[tuple[int, int]] = field(default_factory=list)  # each word's place in ``source``
    words: list[str] = field(default_factory=list)  # lowercase
    lines: list[int] = field(default_factory=list)  # each word's line among the caption's
    pieces: list[Piece] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(piece.text for piece in self.pieces)


def sent_twice(source: str) -> bool:
    """Whether codes as a file writes them (``read_codes``) send their control codes twice: the
    first copy says so."""
    return any(copies((match.group().lower(), line) for match, line in _words_of(source)))


def _words_of(source: str) -> Iterator[tuple[re.Match[str], int]]:
    """The words of codes as a file writes them, each with its line among theirs."""
    line = 0
    for match in _TOKEN.finditer(source):
        if match.group("time"):
            line += 1
        else:
            yield match, line


def read_codes(source: str) -> Codes:
    """The pieces of a caption's codes (``source``: its words as the file writes them, the lines
    and timecodes between them included)."""
    codes = Codes(source)
    for match, line in _words_of(source):
        codes.spans.append(match.span())
        codes.words.append(match.group().lower())
        codes.lines.append(line)
    _read_pieces(codes)
    return codes


def codes_of(source: str, spans: list[tuple[int, int]], words: list[str], lines: list[int]) -> Codes:
    """The pieces of a caption's codes already found in ``source``: each word's place in it, the
    word (lowercase) and its line."""
    codes = Codes(source, spans, words, lines)
    _read_pieces(codes)
    return codes


def _read_pieces(codes: Codes) -> None:
    pieces = codes.pieces
    row: int | None = None
    channel = 1
    sent_again = copies(zip(codes.words, codes.lines, strict=True))
    for index, (word, copy) in enumerate(zip(codes.words, sent_again, strict=True)):
        same_line = bool(index) and codes.lines[index - 1] == codes.lines[index]
        if not is_control(word):
            if channel != 1:
                continue
            text = characters(word)
            last = pieces[-1] if pieces else None
            if last is not None and last.is_run and same_line and last.words[-1] == index - 1:
                last.words.append(index)
                last.text += text
            else:
                pieces.append(Piece([index], text, True))
            continue
        if copy:
            if pieces and pieces[-1].words[-1] == index - 1:
                pieces[-1].words.append(index)
            continue
        channel = channel_of(word)
        if channel != 1:
            continue
        pieces.append(Piece([index], _shown(word, row, pieces), False))
        row = pac_row(word) if pac_row(word) is not None else row
        if is_extended(word) or word == BACKSPACE:
            _erase_before(pieces)


def _shown(word: str, row: int | None, pieces: list[Piece]) -> str:
    """What a control code shows where it stands."""
    char = code_text(word)
    if char is not None:
        return char
    new_row = pac_row(word)
    if new_row is not None:
        if not any(piece.text for piece in pieces):
            return ""  # the caption's first position
        return " " if new_row == row else "\n"
    if word == CARRIAGE_RETURN:
        return "\n"
    if word in tables().MID_ROW_CODES:
        return " "
    return ""


def _erase_before(pieces: list[Piece]) -> None:
    """An extended character (or a backspace) takes the place of the standard character before it
    on its row: that one is kept in the run, not shown."""
    before = pieces[-2] if len(pieces) > 1 else None
    if before is not None and before.is_run and before.text and not before.text.endswith("\n"):
        before.hidden = before.text[-1] + before.hidden
        before.text = before.text[:-1]


def rewrite(codes: Codes, text: str, doubled: bool, upper: bool) -> str:
    """The caption's codes showing ``text`` instead: unchanged pieces as the file writes them,
    changed runs written anew, followed by nulls where they got shorter. ``doubled``: the file
    sends its control codes twice; ``upper``: it writes hex in capitals."""
    pieces = codes.pieces
    owners = [position for position, piece in enumerate(pieces) for _ in piece.text]
    runs = ["" for _ in pieces]  # each run's new characters
    kept = [True] * len(pieces)  # a control code whose character is gone is left out
    extra: dict[int, str] = {}  # new runs, after the piece at that position (-1: before all)
    matcher = difflib.SequenceMatcher(None, codes.text, text, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                runs[owners[i]] += text[j]
            continue
        for i in range(i1, i2):
            kept[owners[i]] = pieces[owners[i]].is_run
        if j2 == j1:
            continue
        # New characters take the place of the run they replace, else join the run of the
        # character before them, else of the one after, else make a run of their own there.
        replaced = owners[i1] if i2 > i1 and pieces[owners[i1]].is_run else None
        before = owners[i1 - 1] if i1 > 0 else None
        after = owners[i2] if i2 < len(owners) else None
        if replaced is not None:
            runs[replaced] += text[j1:j2]
        elif before is not None and pieces[before].is_run:
            runs[before] += text[j1:j2]
        elif after is not None and pieces[after].is_run:
            runs[after] += text[j1:j2]
        else:
            key = before if before is not None else (after if after is not None else len(pieces)) - 1
            extra[key] = extra.get(key, "") + text[j1:j2]
    style = _Style(doubled, upper)

    def stand_in(position: int, chars: str) -> str:
        """A space for an extended character after a run that had none to replace."""
        later = next((p for p in pieces[position + 1 :] if p.text or not p.is_run), None)
        return " " if chars and later is not None and is_extended(codes.words[later.words[0]]) else ""

    rows = _Rows(codes, kept, style)
    written: dict[int, list[str]] = {}
    for position, piece in enumerate(pieces):
        if not kept[position]:
            written[position] = []
        elif piece.is_run and runs[position] != piece.text:
            hidden = piece.hidden or stand_in(position, runs[position])
            written[position] = style.pack(runs[position] + hidden, rows, position)
    new_runs = {key: style.pack(chars + stand_in(key, chars), rows, key) for key, chars in extra.items()}
    return _edited(codes, written, new_runs, style)


class _Rows:
    """Where a changed caption's text breaks a row it did not break before: the position code of a
    break it no longer has, in order (a break moved), else a new one on the row below the one
    before; at the bottom row, none (a space, and ``scc_writer.changes`` says so)."""

    def __init__(self, codes: Codes, kept: list[bool], style: _Style) -> None:
        self.style = style
        self.free = [
            [codes.source[slice(*codes.spans[index])] for index in piece.words]
            for piece, keep in zip(codes.pieces, kept, strict=True)
            if not keep and piece.text == "\n"
        ]
        self.rows: list[int | None] = []  # the row each piece is on
        row: int | None = None
        for piece in codes.pieces:
            row = pac_row(codes.words[piece.words[0]]) or row
            self.rows.append(row)
        self.made: int | None = None  # the last row a new code was made for

    def words(self, position: int) -> list[str]:
        if self.free:
            return self.free.pop(0)
        row = self.made or (self.rows[position] if 0 <= position < len(self.rows) else None)
        if row is None or row >= BOTTOM_ROW:
            return []
        self.made = row + 1
        high, low = tables().POSITIONING_TO_PAC_MAP[row + 1][0][0]
        return self.style.code(high + low)


@dataclass(frozen=True)
class _Style:
    """How the file writes its codes: control codes twice or once, hex in capitals or not."""

    doubled: bool
    upper: bool

    def code(self, word: str) -> list[str]:
        """A control code as the file sends them."""
        word = word.upper() if self.upper else word
        return [word, word] if self.doubled else [word]

    def pack(self, text: str, rows: _Rows | None = None, position: int = -1) -> list[str]:
        """Words showing ``text``: standard characters two to a word (a null after an odd one),
        special and extended ones as control codes, each after a stand-in for the latter; a
        line break as a position code on the next row (``rows``: for the piece at ``position``)."""
        constants = tables()
        words: list[str] = []
        pending: list[str] = []

        def flush() -> None:
            while pending:
                pair = pending[:2]
                del pending[:2]
                words.append(_pair(pair))

        for char in text:
            if char == "\n":
                flush()
                new_row = rows.words(position) if rows is not None else []
                words.extend(new_row)
                if not new_row:
                    pending.append(constants.CHARACTER_TO_CODE[" "])
                continue
            for each in encodable(char):
                code = constants.CHARACTER_TO_CODE.get(each) if each != "" else None
                if code is not None and len(code) == 2 and code not in ("80", "7f"):
                    pending.append(code)
                    continue
                control = constants.SPECIAL_OR_EXTENDED_CHAR_TO_CODE[each]
                if control in constants.EXTENDED_CHARS:
                    stand_in = constants.SUBSTITUTE_CHARACTERS.get(each, [" "])[0]
                    pending.append(constants.CHARACTER_TO_CODE.get(stand_in, "20"))
                flush()
                words.extend([control, control] if self.doubled else [control])
        flush()
        return [word.upper() if self.upper else word for word in words]


def _pair(pair: list[str]) -> str:
    return pair[0] + (pair[1] if len(pair) > 1 else f"{NULL:02x}")


def encodable(char: str) -> str:
    """``char`` as SCC can show it: itself, or what Unicode decomposes it into ("..." for "…"),
    or nothing."""
    constants = tables()
    if char in constants.CHARACTER_TO_CODE or char in constants.SPECIAL_OR_EXTENDED_CHAR_TO_CODE:
        return char
    decomposed = unicodedata.normalize("NFKD", char)
    return "".join(c for c in decomposed if c in constants.CHARACTER_TO_CODE)


def _edited(codes: Codes, written: dict[int, list[str]], extra: dict[int, list[str]], style: _Style) -> str:
    """``codes.source`` with the pieces in ``written`` replaced by their words (none: left out),
    ``extra`` runs after the pieces they follow, and nulls where a line got shorter."""
    source, spans, pieces = codes.source, codes.spans, codes.pieces
    null = f"{NULL:02x}" * 2
    null = null.upper() if style.upper else null
    shrunk: dict[int, int] = {}  # a line's words lost, to be made good after its last change
    last_change: dict[int, int] = {}
    edits: list[tuple[int, int, str]] = []
    for position, piece in enumerate(pieces):
        line = codes.lines[piece.words[0]]
        new = written.get(position)
        if new is not None:
            shrunk[line] = shrunk.get(line, 0) + len(piece.words) - len(new)
            last_change[line] = position
        if position in extra:
            shrunk[line] = shrunk.get(line, 0) - len(extra[position])
            last_change[line] = position
    for position, piece in enumerate(pieces):
        line = codes.lines[piece.words[0]]
        start, end = spans[piece.words[0]][0], spans[piece.words[-1]][1]
        new = written.get(position)
        after = list(extra.get(position, []))
        if last_change.get(line) == position and shrunk.get(line, 0) > 0:
            after += [null] * shrunk[line]
        if new is not None:
            edits.append((start, end, " ".join(new + after)))
        elif after:
            edits.append((end, end, " " + " ".join(after)))
    if -1 in extra and pieces:
        first = spans[pieces[0].words[0]][0]
        edits.append((first, first, " ".join(extra[-1]) + " "))
    for start, end, replacement in sorted(edits, reverse=True):
        if not replacement:
            start, end = _without_gap(source, start, end)
        source = source[:start] + replacement + source[end:]
    return source


def _without_gap(source: str, start: int, end: int) -> tuple[int, int]:
    """The span of words left out with the space that parts them from the next word on their
    line, or else from the word before."""
    after = len(source[end:]) - len(source[end:].lstrip(" \t"))
    if after and source[end + after : end + after + 1] not in ("", "\n"):
        return start, end + after
    before = len(source[:start]) - len(source[:start].rstrip(" \t"))
    return start - before, end
