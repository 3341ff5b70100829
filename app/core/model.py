"""The caption document: cues of words, and punctuation suggestions for the gaps between words.

A word's *gap* is the place right after it, where a punctuation mark may go; gaps are numbered by
the word's position in the whole document. Every word keeps the exact surface text it had in the
file, so a document that nobody changed writes back byte for byte.
"""

from __future__ import annotations

import bisect
import enum
import itertools
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path


class Casing(enum.Enum):
    LOWER = "lower"
    CAPITALISED = "capitalised"
    UPPER = "upper"
    MIXED = "mixed"
    UNCASED = "uncased"  # digits, or scripts without case


def casing_of(text: str) -> Casing:
    # A letter in title case ("ǅ", one letter for D and ž) is a capital at a word's start.
    letters = [c for c in text if c.isalpha() and (c.islower() or c.isupper() or c.istitle())]
    if not letters:
        return Casing.UNCASED
    if all(c.islower() for c in letters):
        return Casing.LOWER
    if all(c.isupper() for c in letters):
        return Casing.UPPER if len(letters) > 1 else Casing.CAPITALISED
    if (letters[0].isupper() or letters[0].istitle()) and all(c.islower() for c in letters[1:]):
        return Casing.CAPITALISED
    return Casing.MIXED


#: Capitals of letters whose full case mapping is two letters ("ß" -> "SS") but that have a
#: capital of their own: a capital is one letter, so the word keeps its length.
_ONE_LETTER_CAPITALS = {"ß": "ẞ"}


def _recased(text: str, case: str) -> str:
    """``text`` with each letter in ``case`` ("lower", "upper" or "title": "ǆ" -> "ǅ"), as one
    letter ("ß" -> "ẞ"); a letter whose case is no single letter ("ŉ" -> "ʼN") stays as it is."""
    out = []
    for letter in text:
        cased = getattr(letter, case)()
        out.append(cased if len(cased) == 1 else _ONE_LETTER_CAPITALS.get(letter, letter))
    return "".join(out)


def apply_casing(text: str, casing: Casing) -> str:
    """Recase ``text``, each letter staying one letter; MIXED and UNCASED leave it as it is."""
    if casing is Casing.LOWER:
        return _recased(text, "lower")
    if casing is Casing.UPPER:
        return _recased(text, "upper")
    if casing is Casing.CAPITALISED:
        for i, char in enumerate(text):
            if char.isalpha():
                return text[:i] + _recased(char, "title") + _recased(text[i + 1 :], "lower")
    return text


#: Characters a word may hold between its letters and still be cased as a word.
_WORD_INNER = frozenset("'’-‐.·")


@dataclass(frozen=True)
class Word:
    """One word as written in the captions.

    ``prefix`` holds opening punctuation glued to the word (quotes, an inverted question mark),
    ``mark`` the punctuation written after it, which may start with a space (French " ?").
    Times are in milliseconds; None when nothing says when the word was spoken.
    """

    text: str
    start: int | None = None
    end: int | None = None
    mark: str = ""
    prefix: str = ""
    #: Written against the word before with only styling between (``m<font>o</font>st``): a piece
    #: of one word, so no mark goes between them and only the first piece takes a capital.
    glued: bool = False

    @property
    def casing(self) -> Casing:
        return casing_of(self.text)

    @property
    def casable(self) -> bool:
        """Whether a capital may be put on this word: letters and digits, with apostrophes,
        hyphens and dots inside ("don't", "e.g"); never a symbol run such as ``<b<i<u``."""
        return (
            not self.glued
            and self.text[:1].isalnum()
            and all(char.isalnum() or char in _WORD_INNER for char in self.text)
        )

    def rendered(self) -> str:
        return self.prefix + self.text + self.mark


class Slot(enum.Enum):
    """Where a word's parts go in a cue's layout."""

    WORD = "word"  # prefix and text of the word
    MARK = "mark"  # the punctuation after it


#: One piece of a cue's layout: literal text (styling, spaces, line breaks) or a word's part.
LayoutPiece = str | tuple[Slot, int]


@dataclass
class Cue:
    """A timed caption block.

    ``layout`` interleaves the literal text that is not words (tags such as ``<i>`` or ``{\\an8}``,
    entities, spaces, line breaks, standalone symbols) with slots for the words, so rendering the
    layout with the original words gives back ``original_text`` exactly.
    """

    index: int | None
    start: int
    end: int
    words: list[Word]
    original_text: str
    layout: list[LayoutPiece] = field(default_factory=list)
    #: The file's text around the cue, kept so an untouched cue writes back as read: the SRT number
    #: or VTT identifier line as written, cue settings, the timing line as written with its line
    #: break (a file may end right after it).
    identifier: str | None = None
    settings: str = ""
    timing_line: str | None = None
    #: What follows the text up to the next cue: line breaks, blank lines, VTT NOTE blocks.
    after_text: str | None = None
    #: A re-cut's new cue: the timing line of the cue its first word came from, for the formats
    #: whose line says more than the times (an ASS dialogue's style and margins, a TTML
    #: paragraph's region), to write the new cue's as a copy of it with its own times.
    source_timing_line: str | None = None

    def text(self) -> str:
        """The cue's text with its current words, styling kept."""
        parts: list[str] = []
        for piece in self.layout:
            if isinstance(piece, str):
                parts.append(piece)
            else:
                slot, position = piece
                word = self.words[position]
                parts.append(word.prefix + word.text if slot is Slot.WORD else word.mark)
        return "".join(parts)

    def plain_text(self) -> str:
        """The words alone, separated by single spaces."""
        return " ".join(word.rendered() for word in self.words)

    @property
    def duration(self) -> int:
        return self.end - self.start


def first_words(cues: Sequence[Cue]) -> list[int]:
    """Where each cue's words start among all of theirs."""
    return list(itertools.accumulate((len(cue.words) for cue in cues), initial=0))[:-1]


class Source(enum.Enum):
    MODEL = "model"
    REFERENCE = "reference"
    EDITOR = "editor"


class Status(enum.Enum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


class Evidence(enum.StrEnum):
    """What a model suggestion's gap was read with, each adding to the one before."""

    TEXT = "text"
    TIMING = "timing"  # a pause known from word or cue times, or measured in the media
    HEARD = "heard"  # the recogniser listened along the words


@dataclass(frozen=True)
class Suggestion:
    """A proposed mark for the gap after word ``gap`` (an index into ``Document.words``).

    ``mark`` is the text to write there ("" proposes removing a mark); ``probabilities`` maps each
    candidate mark to its probability; ``confidence`` is what the editor ranks by, in [0, 1].
    A suggestion with ``casing`` set proposes recasing word ``gap`` instead, and ignores ``mark``.
    ``evidence`` says what a model suggestion rested on (an ``Evidence``; projects of older
    versions may hold "audio", measured in the media); ``readings`` then holds each reader's own choice and probability
    (``{"read": (".", 0.55), "heard": (",", 0.91)}``) beside the combined one.
    """

    id: int
    gap: int
    mark: str
    confidence: float
    source: Source
    probabilities: dict[str, float] = field(default_factory=dict, hash=False)
    status: Status = Status.PENDING
    casing: Casing | None = None
    evidence: str = Evidence.TEXT
    readings: dict[str, tuple[str, float]] = field(default_factory=dict, hash=False)

    def recalibrated(self, confidence: float, status: Status | None = None) -> Suggestion:
        """This suggestion with another confidence (and status): ``dataclasses.replace`` without
        its cost, as a long call's re-reading moves a thousand confidences at each decision and
        opening a project replays fifty such re-readings."""
        copy = object.__new__(Suggestion)
        copy.__dict__.update(self.__dict__)
        copy.__dict__["confidence"] = confidence
        if status is not None:
            copy.__dict__["status"] = status
        return copy


@dataclass(frozen=True)
class WordRef:
    """Where a document-wide word index lives."""

    cue: int
    position: int


def _suggestion_id(suggestion: Suggestion) -> int:
    return suggestion.id


@dataclass(eq=False)
class Document:
    """A caption file in memory, with what is needed to write it back as it was."""

    cues: list[Cue]
    format: str  # "srt", "vtt" or "txt"
    source_path: Path | None = None
    encoding: str = "utf-8"
    bom: bool = False
    line_ending: str = "\n"
    #: Format-specific text kept verbatim, such as the VTT header and its STYLE/NOTE/REGION blocks.
    preamble: str = ""
    trailer: str = ""
    #: A timing line as the file writes its own (the first without cue settings), for the cues
    #: it did not have (a re-cut's) to be written alike; None for a file that has none.
    timing_example: str | None = None
    #: How the file writes a line break inside a cue where that is a tag (TTML's ``<br/>``, as the
    #: file spells it: ``<br />``, ``<tt:br/>``); None where it has none.
    break_tag: str | None = None
    warnings: list[str] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)
    #: The language of the words once known (ISO 639-1); where a new mark goes beside a closing
    #: quote follows its convention.
    language: str | None = None
    #: Changes since the document last matched its file: done steps add one, undone steps take one
    #: away, so undoing back to the saved state makes the document clean again.
    changes_since_save: int = 0
    _refs: list[WordRef] = field(default_factory=list, init=False, repr=False)
    #: Where each suggestion sits in ``suggestions``; checked on use and rebuilt when the list has
    #: changed under it, so lookups stay O(1) on files with thousands of suggestions.
    _positions: dict[int, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.reindex()

    def reindex(self) -> None:
        """Rebuild the word index; call after changing which words the cues hold."""
        self._refs = [
            WordRef(cue_number, position)
            for cue_number, cue in enumerate(self.cues)
            for position in range(len(cue.words))
        ]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Document):
            return NotImplemented
        return self.state() == other.state()

    def state(self) -> tuple[object, ...]:
        """What the user can see of the document: cues with their words, and the suggestions."""
        return (
            self.format,
            self.encoding,
            self.bom,
            self.line_ending,
            self.preamble,
            self.trailer,
            [
                (c.index, c.start, c.end, tuple(c.words), tuple(c.layout), c.identifier, c.settings)
                for c in self.cues
            ],
            tuple(self.suggestions),
        )

    @property
    def is_modified(self) -> bool:
        return self.changes_since_save != 0

    def mark_saved(self) -> None:
        self.changes_since_save = 0

    @property
    def word_count(self) -> int:
        return len(self._refs)

    def words(self) -> Iterator[Word]:
        return itertools.chain.from_iterable(cue.words for cue in self.cues)

    def locate(self, index: int) -> WordRef:
        if not 0 <= index < len(self._refs):
            raise IndexError(f"no word {index}: the document has {len(self._refs)} words")
        return self._refs[index]

    def word(self, index: int) -> Word:
        ref = self.locate(index)
        return self.cues[ref.cue].words[ref.position]

    def put_word(self, index: int, word: Word) -> None:
        ref = self.locate(index)
        self.cues[ref.cue].words[ref.position] = word

    def _position(self, suggestion_id: int) -> int:
        suggestions = self.suggestions
        position = self._positions.get(suggestion_id)
        if position is not None and position < len(suggestions) and suggestions[position].id == suggestion_id:
            return position
        # Suggestions are kept in id order (``insert_suggestion``): one taken out or put in shifts
        # the places after it, found again by halving rather than by indexing every one again.
        position = bisect.bisect_left(suggestions, suggestion_id, key=_suggestion_id)
        if position < len(suggestions) and suggestions[position].id == suggestion_id:
            self._positions[suggestion_id] = position
            return position
        # Not in id order (a caller set the list): index them all.
        self._positions = {s.id: number for number, s in enumerate(suggestions)}
        found = self._positions.get(suggestion_id)
        if found is None:
            raise KeyError(f"no suggestion {suggestion_id}")
        return found

    def suggestion(self, suggestion_id: int) -> Suggestion:
        return self.suggestions[self._position(suggestion_id)]

    def put_suggestion(self, suggestion: Suggestion) -> None:
        self.suggestions[self._position(suggestion.id)] = suggestion

    def insert_suggestion(self, suggestion: Suggestion) -> None:
        """Put ``suggestion`` in id order, as suggestions are made: one taken out (the house style's
        re-reading drops one) comes back by undo where it was, not at the end."""
        suggestions = self.suggestions
        place = len(suggestions)
        while place and suggestions[place - 1].id > suggestion.id:
            place -= 1
        suggestions.insert(place, suggestion)

    def remove_suggestion(self, suggestion_id: int) -> None:
        """Take out the suggestion of ``suggestion_id``, found by its place rather than compared
        field by field with every other (a long file holds tens of thousands)."""
        del self.suggestions[self._position(suggestion_id)]

    def add_suggestions(self, suggestions: list[Suggestion]) -> None:
        for suggestion in suggestions:
            self.locate(suggestion.gap)
        self.suggestions.extend(suggestions)

    def status_counts(self) -> dict[str, int]:
        """How many suggestions are pending, accepted and rejected."""
        counts = Counter(suggestion.status for suggestion in self.suggestions)
        return {status.value: counts[status] for status in Status}

    def next_suggestion_id(self) -> int:
        return max((s.id for s in self.suggestions), default=0) + 1

    @property
    def duration(self) -> int:
        """Milliseconds from zero to the latest cue time (a cue may end before it starts)."""
        return max((max(cue.start, cue.end) for cue in self.cues), default=0)
