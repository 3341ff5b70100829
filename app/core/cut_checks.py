"""Where a document's cues are cut, checked: cues ending at a sentence end, sentence starts left
dangling at a cue's end, and cues over the caption limits; what ``punctuate --recut`` and the
editor's re-cut report before and after, and what the benchmarks count."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass

from app.core.checks import STYLE_GUIDE_LIMITS, CaptionLimits, check_cue
from app.core.cue_segmentation import ends_sentence
from app.core.model import Casing, Document, Word, apply_casing, casing_of, first_words
from app.core.sentences import starts_sentence


def sentence_starts(document: Document) -> set[int]:
    """The words that start a sentence by the marks before them: export gives them their capital,
    so the cuts are planned as it will write them (the editor's words are not capitalised yet)."""
    words = list(document.words())
    return {index for index in range(len(words)) if starts_sentence(words, index)}


def as_planned(word: Word, sentence_start: bool) -> str:
    """A word as written, with the capital a sentence start will have."""
    if sentence_start and casing_of(word.text) is Casing.LOWER:
        return word.prefix + apply_casing(word.text, Casing.CAPITALISED) + word.mark
    return word.rendered()


@dataclass(frozen=True)
class CutChecks:
    """Where a document's cues are cut: how many cues end at a sentence end, how many end with
    the start of a sentence that runs on into the next cue (a dangling start), and how many go
    over the caption limits: lines (count, characters; a line of one word longer than a line
    is not counted), duration (``min_ms`` to ``max_ms``), reading speed (as the editor counts it,
    ``core.checks.check_cue``), and the gap before the next cue. ``over``: the numbers (from 1)
    of the cues over any of these limits, for one document (a sum names none)."""

    cues: int
    sentence_ends: int = 0
    dangling_starts: int = 0
    over_lines: int = 0
    over_duration: int = 0
    over_speed: int = 0
    short_gaps: int = 0
    over_any: int = 0  # cues over one limit or more
    over: tuple[int, ...] = ()

    def __add__(self, other: CutChecks) -> CutChecks:
        counts = zip(dataclasses.astuple(self)[:-1], dataclasses.astuple(other)[:-1], strict=True)
        return CutChecks(*(a + b for a, b in counts))

    @property
    def share_at_sentence_end(self) -> float:
        return self.sentence_ends / self.cues if self.cues else 0.0


def cut_checks(
    document: Document, limits: CaptionLimits = STYLE_GUIDE_LIMITS, among: Collection[int] | None = None
) -> CutChecks:
    """The checks of ``CutChecks`` for any document. ``among``: the cues (by number from 0) whose
    limits are checked, all unless given (the cues a re-cut made, not those that kept their cut)."""
    starts = sentence_starts(document)
    texts = [
        [as_planned(word, first + n in starts) for n, word in enumerate(cue.words)]
        for first, cue in zip(first_words(document.cues), document.cues, strict=True)
    ]
    counts = Counter[str]()
    over: list[int] = []
    for number, cue in enumerate(document.cues):
        words = texts[number]
        if not words:
            continue
        following = next((later[0] for later in texts[number + 1 :] if later), None)
        ends = [
            ends_sentence(text, after) for text, after in zip(words, [*words[1:], following], strict=True)
        ]
        counts["sentence_ends"] += ends[-1]
        counts["dangling_starts"] += following is not None and not ends[-1] and any(ends[:-1])
        later = document.cues[number + 1] if number + 1 < len(document.cues) else None
        if among is not None and number not in among:
            continue
        # Counted as ``check_cue`` finds them, so the re-cut's summary and its preview agree.
        check = check_cue(cue, limits, later)
        counts.update(check.over)
        if not check.ok:
            counts["over_any"] += 1
            over.append(number + 1)
    return CutChecks(len(document.cues), **counts, over=tuple(over))
