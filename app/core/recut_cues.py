"""Cues built from a cut (how many words each holds, its times and lines), and a cut recorded so a
project reopens with exactly the cues a person approved, whatever the re-cut's rules are by then.

A cut that ends where a cue of the document ended keeps what followed it in the file (spacing, a
NOTE block), and a cut that is a cue of the document as it was read is that cue, copied (its
styling, number and identifier too). New cues' timing lines are written as the file writes its
own (by the format writers); SRT numbers are counted again where the file counted its cues.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from app.core.checks import SPEAKER_DASHES
from app.core.model import Cue, Document, LayoutPiece, Slot, Word, first_words


@dataclass(frozen=True)
class CueCut:
    """One cue of a cut: how many words it holds, its times (ms), and how many of its words go on
    each line; ``lines`` empty: the cue as the document has it (kept, styling and all)."""

    words: int
    start: int
    end: int
    lines: tuple[int, ...] = ()
    #: What starts each line: a speaker dash (``CaptionLimits.speaker_dash``) where each line is
    #: one speaker's, else "".
    dash: str = ""


class RecordedCutError(ValueError):
    """A recorded cut that does not fit the document (its words changed since)."""


def copied(cue: Cue) -> Cue:
    return dataclasses.replace(cue, words=list(cue.words), layout=list(cue.layout))


def cut_of(before: Sequence[Cue], after: Sequence[Cue]) -> tuple[CueCut, ...]:
    """``after``, the cues of a re-cut of ``before``, as a cut to record: a cue of ``before`` kept
    as it was is recorded as kept."""
    kept = {
        (first, cue.start, cue.end, cue.text())
        for first, cue in zip(first_words(before), before, strict=True)
    }
    cuts = []
    for first, cue in zip(first_words(after), after, strict=True):
        same = (first, cue.start, cue.end, cue.text()) in kept
        if same:
            cuts.append(CueCut(len(cue.words), cue.start, cue.end))
        else:
            cuts.append(CueCut(len(cue.words), cue.start, cue.end, _line_counts(cue), _dash_of(cue)))
    return tuple(cuts)


def _dash_of(cue: Cue) -> str:
    """The speaker dash a built cue starts its lines with ("" for none)."""
    first = cue.layout[0] if cue.layout else None
    return first if isinstance(first, str) and first in SPEAKER_DASHES.values() else ""


def _line_counts(cue: Cue) -> tuple[int, ...]:
    counts = [0]
    for piece in cue.layout:
        if isinstance(piece, str):
            counts.extend([0] * piece.count("\n"))
        elif piece[0] is Slot.WORD:
            counts[-1] += 1
    return tuple(count for count in counts if count)


def cut_as(document: Document, cut: Sequence[CueCut]) -> list[Cue]:
    """``document``'s cues as ``cut`` records them (``RecordedCutError`` when it does not fit)."""
    cues = document.cues
    total = sum(len(cue.words) for cue in cues)
    if sum(one.words for one in cut) != total or any(one.words < 0 or one.end < one.start for one in cut):
        raise RecordedCutError(
            f"a re-cut of {sum(one.words for one in cut)} words does not fit {total} words"
        )
    originals = {
        (first, len(cue.words), cue.start, cue.end): cue
        for first, cue in zip(first_words(cues), cues, strict=True)
    }
    result: list[Cue] = []
    first = 0
    for one in cut:
        original = originals.get((first, one.words, one.start, one.end))
        if not one.lines:
            if original is None:
                raise RecordedCutError(f"no cue of {one.words} words at {one.start} ms to keep")
            result.append(copied(original))
        else:
            if sum(one.lines) != one.words or not one.words:
                raise RecordedCutError(f"lines of {sum(one.lines)} words in a cue of {one.words}")
            result += built_cues(cues, [one], first)
        first += one.words
    number_cues(cues, result, document.format)
    return result


def built_cues(run: Sequence[Cue], cuts: Sequence[CueCut], first_word: int = 0) -> list[Cue]:
    """Cues holding the run's words as cut (the first cut from its ``first_word``); a cue ending
    where one of the run's cues ended keeps what followed it (the spacing), and a cue cut and
    laid out just as it was is that cue, written as it was read."""
    words = [word for cue in run for word in cue.words]
    firsts = list(zip(first_words(run), run, strict=True))
    # (first word, start, end) of each cue of the run -> the cue
    originals = {(first, cue.start, cue.end): cue for first, cue in firsts}
    # the word each cue of the run ended with -> what the file had after the cue
    endings = {first + len(cue.words): cue.after_text for first, cue in firsts}
    # Where a cue of the run began: the words on either side were never written side by side, and
    # in a script written without spaces (Chinese, Japanese) none goes between them, unless the
    # run's own cues set such words a space apart (subtitles often part phrases so).
    cue_starts = {first for first, _ in firsts} if not spaces_unspaced_words(run) else set()
    cues: list[Cue] = []
    taken = first_word
    for cut in cuts:
        group = words[taken : taken + cut.words]
        original = originals.get((taken, cut.start, cut.end))
        source = next((cue for first, cue in reversed(firsts) if first <= taken), run[0])
        unspaced = {
            n
            for n in range(1, len(group))
            if taken + n in cue_starts and written_unspaced(group[n - 1], group[n])
        }
        taken += len(group)
        cue = Cue(
            index=None,
            start=cut.start,
            end=cut.end,
            words=list(group),
            original_text="",
            layout=plain_layout(len(group), set(itertools.accumulate(cut.lines[:-1])), unspaced, cut.dash),
            after_text=endings.get(taken),
            source_timing_line=source.timing_line or source.source_timing_line,
        )
        cue.original_text = cue.text()
        same = original is not None and original.words == cue.words and original.text() == cue.original_text
        cues.append(copied(original) if same and original is not None else cue)
    return cues


def plain_layout(
    count: int, line_ends: Collection[int] = (), unspaced: Collection[int] = (), dash: str = ""
) -> list[LayoutPiece]:
    """The layout of ``count`` words, each with its mark, one space apart but for a line break
    before each word of ``line_ends`` and nothing before each of ``unspaced``; ``dash`` starts
    each line."""
    layout: list[LayoutPiece] = []
    for position in range(count):
        if position in line_ends:
            layout.append("\n")
        elif position and position not in unspaced:
            layout.append(" ")
        if dash and (position == 0 or position in line_ends):
            layout.append(dash)
        layout += [(Slot.WORD, position), (Slot.MARK, position)]
    return layout


def _unspaced_script(character: str) -> bool:
    """Whether ``character`` belongs to a script written without spaces between words: Han,
    Hiragana, Katakana (and their punctuation and full-width forms), Thai, Lao, Khmer, Myanmar."""
    point = ord(character)
    return (
        0x2E80 <= point <= 0x30FF  # CJK radicals and punctuation, Hiragana, Katakana
        or 0x3400 <= point <= 0x9FFF  # CJK ideographs
        or 0xF900 <= point <= 0xFAFF
        or 0xFF00 <= point <= 0xFFEF  # full-width forms
        or 0x0E00 <= point <= 0x0EFF  # Thai, Lao
        or 0x1000 <= point <= 0x109F  # Myanmar
        or 0x1780 <= point <= 0x17FF  # Khmer
        or 0x20000 <= point <= 0x2FFFF
    )


def written_unspaced(before: Word, after: Word) -> bool:
    """Whether two words, set side by side, are written with no space between them: both in a
    script written without spaces where they meet."""
    end = (before.text + before.mark).rstrip()[-1:]
    start = (after.prefix + after.text).lstrip()[:1]
    return bool(end and start) and _unspaced_script(end) and _unspaced_script(start)


def spaces_unspaced_words(cues: Sequence[Cue]) -> bool:
    """Whether any of ``cues`` sets two words of a script written without spaces apart with
    whitespace other than a line break (as Chinese subtitles part phrases): then a join of such
    words does too."""
    for cue in cues:
        between: list[str] = []
        last: int | None = None
        for piece in cue.layout:
            if isinstance(piece, str):
                between.append(piece)
            elif piece[0] is Slot.MARK:
                last, between = piece[1], []
            elif last is not None and piece[1] == last + 1:
                before, after = cue.words[last], cue.words[piece[1]]
                gap = "".join(between)
                if gap.isspace() and "\n" not in gap and written_unspaced(before, after):
                    return True
    return False


def number_cues(before: Sequence[Cue], after: list[Cue], file_format: str) -> None:
    """SRT numbers: 1..N again where the file counted its cues so; where it numbered them some
    other way, a new cue takes the number after the cue before it. A VTT identifier names one
    cue, so a new cue has none."""
    # A cue numbered by an earlier re-cut has its number and no identifier: it is numbered too.
    if file_format != "srt" or not any(cue.identifier is not None or cue.index is not None for cue in before):
        return
    first = before[0].index if before[0].index is not None else 1
    counted = all(cue.index == first + n for n, cue in enumerate(before))
    previous = first - 1
    for cue in after:
        if counted:
            cue.index, cue.identifier = previous + 1, None
        elif cue.identifier is None:
            cue.index = previous + 1
        previous = cue.index if cue.index is not None else previous + 1
