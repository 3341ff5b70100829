"""Lines that read well once the marks are in: a cue's line breaks laid out again (opt-in, at export).

A recogniser breaks a cue's lines by length alone; with the marks back, a subtitler breaks after
the full stop ("we went to the park and then. / So we came home"), keeps lines of at most 42
characters and balanced, and never leaves an article at a line's end. ``cue_segmentation.line_words``
knows those rules; here they are applied to a cue as it stands.

Only where the cue's line breaks fall changes, and the spaces around them: cue count, timings,
words, marks and every other character stay. A cue is left as it is when it holds anything but
words and plain spaces and line breaks between them (styling tags, which may span a break;
entities; positioning, in its text or its settings), when a word is glued to the next (split by a
tag), when a line is a description in brackets ("(laughing)", read apart from the speech), or when it keeps more lines than the rules allow anyway.
"""

from __future__ import annotations

import itertools
from dataclasses import astuple, dataclass

from app.core.checks import STYLE_GUIDE_LIMITS, CaptionLimits, visible_lines
from app.core.cue_segmentation import line_words
from app.core.marks import REPLACEABLE
from app.core.model import Cue, Document, LayoutPiece, Slot, Word
from app.core.orthography import is_abbreviation
from app.core.recut_cues import spaces_unspaced_words, written_unspaced


@dataclass(frozen=True)
class LineChecks:
    """What the guidelines check of a document's lines: cues with a line over the limit or more
    lines than allowed, and how many line breaks fall right after a mark."""

    cues_over_limits: int
    line_breaks: int
    breaks_after_a_mark: int

    def __add__(self, other: LineChecks) -> LineChecks:
        return LineChecks(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    @property
    def share_after_a_mark(self) -> float:
        return self.breaks_after_a_mark / self.line_breaks if self.line_breaks else 0.0


def line_checks(document: Document, rules: CaptionLimits = STYLE_GUIDE_LIMITS) -> LineChecks:
    """The checks of the lines a viewer reads (``core.checks.visible_lines``, as the editor counts
    them)."""
    over = breaks = after_mark = 0
    for cue in document.cues:
        lines = visible_lines(cue)
        if len(lines) > rules.max_lines or any(len(line) > rules.max_line_chars for line in lines):
            over += 1
        for line in lines[:-1]:
            breaks += 1
            last = line.rstrip()
            after_mark += last[-1:] in REPLACEABLE and not is_abbreviation(last.rsplit(" ", 1)[-1])
    return LineChecks(over, breaks, after_mark)


def rebreak_document(
    document: Document, rules: CaptionLimits = STYLE_GUIDE_LIMITS, language: str | None = None
) -> int:
    """Lay out the lines of every cue that may be again, in place; how many cues changed.
    ``language`` (the document's own unless given) chooses the words a line should not end on."""
    language = language or document.language
    return sum(rebreak_cue(cue, rules, language) for cue in document.cues)


def rebreak_cue(cue: Cue, rules: CaptionLimits = STYLE_GUIDE_LIMITS, language: str | None = None) -> bool:
    """Lay out ``cue``'s lines again if it may be (see the module's text); whether it changed."""
    gaps = word_gaps(cue)
    if gaps is None or cue.settings.strip():
        return False
    between = [str(cue.layout[index]) for index in gaps]
    if has_description_line(cue.words, between):
        return False
    breaks = [text for text in between if "\n" in text]
    newline = "\r\n" if any("\r\n" in text for text in breaks) else "\n"
    texts = [word.rendered() for word in cue.words]
    now = {word for word, text in enumerate(between) if "\n" in text}
    counts = line_words(texts, rules, min(len(breaks) + 1, rules.max_lines), language, now)
    if len(counts) > rules.max_lines:
        return False
    after = {total - 1 for total in itertools.accumulate(counts[:-1])}  # a break after these words
    layout: list[LayoutPiece] = list(cue.layout)
    spaced = spaces_unspaced_words([cue])
    for word, (index, text) in enumerate(zip(gaps, between, strict=True)):
        if word in after:
            layout[index] = newline
        elif "\n" in text:  # the break taken out: a space, or none in a script written without
            unspaced = not spaced and written_unspaced(cue.words[word], cue.words[word + 1])
            layout[index] = "" if unspaced else " "
    if layout == cue.layout:
        return False
    cue.layout = layout
    return True


#: The brackets a sound description or a speaker's name is written in: "(laughing)", "[MUSIC]".
_DESCRIPTION_BRACKETS = ("(", ")"), ("[", "]")


def has_description_line(words: list[Word], between: list[str]) -> bool:
    """Whether a line of the cue (words split by the line breaks ``between`` them) is all in
    brackets: a description a viewer reads apart from the speech, never joined onto it."""
    first = 0
    for last in range(len(words)):
        if last == len(words) - 1 or "\n" in between[last]:
            opening, closing = words[first].prefix, words[last].mark
            if any(opening.startswith(o) and c in closing for o, c in _DESCRIPTION_BRACKETS):
                return True
            first = last + 1
    return False


def word_gaps(cue: Cue) -> list[int] | None:
    """The layout index of the whitespace between each word and the next, or None when the cue
    holds anything else (tags, entities, symbols) or a word glued to the next."""
    if len(cue.words) < 2 or any(isinstance(piece, str) and piece.strip() for piece in cue.layout):
        return None
    slots = [(index, piece) for index, piece in enumerate(cue.layout) if not isinstance(piece, str)]
    expected = [(slot, position) for position in range(len(cue.words)) for slot in (Slot.WORD, Slot.MARK)]
    if [piece for _, piece in slots] != expected:
        return None
    gaps: list[int] = []
    for (mark_index, _), (word_index, _) in zip(slots[1::2], slots[2::2], strict=False):
        if word_index - mark_index != 2:
            return None  # glued (nothing between) or more than one piece between
        gaps.append(mark_index + 1)
    return gaps
