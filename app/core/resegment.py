"""Cues cut again at sentence ends once the marks are in: a new document, no I/O.

A recogniser cuts its cues by the clock, so a sentence starts at the end of one cue and runs on
into the next. With the marks back, ``resegment`` cuts the cues again as ``cue_segmentation.plan_cues``
plans them: a sentence a cue where it fits, a long one split at a clause, short ones sharing a cue,
within the limits of ``RECUT_RULES`` (two lines of 42 characters, 1 to 7 s, 21 characters a second,
two frames between cues). Lines and the longest duration are kept but where one word is longer,
and a new cue ends two frames before the next cue; the shortest duration and the reading speed are
kept as far as the words' own pace allows.

Only where cues begin and end changes, and their line breaks: every word stays, in order, with its
prefix, mark and capitals exactly. A cue keeps its own cut and times, and splits the re-cutting into
runs either side of it, when it holds anything but words and plain spaces (styling tags, entities,
symbols such as a speaker's dash, a word glued to the next), a description line ("(laughing)"),
a speaker's dash against a word ("-Hi."), positioning, or times that run backwards or overlap another cue's. (A cue with VTT inline
timestamps is styled too: re-cut, it would lose them.) New cues take their words' times: those the
document gives (a cue of one word times its word), else the heard ones passed in, else the cue's
time spread over its words by their length, an estimate that never leaves the word's own cue.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from app.core.checks import visible_lines
from app.core.cue_segmentation import CueRules, PlannedCue, TimedWord, ends_sentence, line_words, plan_cues

# Re-breaking's own tests of which cues can be rewritten, so the two features never disagree.
from app.core.line_breaks import has_description_line, word_gaps
from app.core.model import Casing, Cue, Document, LayoutPiece, Slot, Word, apply_casing, casing_of
from app.core.sentences import starts_sentence
from app.core.weak_words import weak_words

#: Broadcasters' and streaming services' guidelines for cues cut afresh: 2 lines of 42 characters,
#: 1 to 7 s, at most 21 characters a second, 2 frames (at 24 fps) between one cue and the next.
RECUT_RULES = CueRules(max_cps=21.0, min_gap_ms=84)

#: Why a cue keeps its own cut.
POSITIONED = "positioned"  # cue settings, which would not fit the words of other cues
STYLED = "styled"  # tags, entities, symbols or glued words between the words
DESCRIPTION = "description"  # a line in brackets, read apart from the speech
DIALOGUE = "dialogue"  # a speaker's dash ("-Hi.\n-Hello."): each turn keeps its line
TIMING = "timing"  # no duration, or overlapping another cue: new cues could not keep clear of it
EMPTY = "empty"  # no words to move


@dataclass(frozen=True)
class Resegmented:
    """A re-cut document and what happened: how many of the words re-cut had their times estimated
    from their cues (nothing heard or given placed them), the cue counts, how many cues kept their
    own cut, by reason (``POSITIONED``, ``STYLED`` …), and the time each word was cut by (None for
    the words of a cue that kept its cut)."""

    document: Document
    estimated_words: int
    cues_before: int
    cues_after: int
    kept: dict[str, int]
    word_times: list[tuple[int, int] | None]
    changed: bool  # whether any cue begins, ends or breaks its lines elsewhere than before
    cut_words: int = 0  # the words of the cues re-cut

    @property
    def estimated(self) -> bool:
        return self.estimated_words > 0

    @property
    def kept_cues(self) -> int:
        return sum(self.kept.values())


def resegment(
    document: Document,
    times: Sequence[tuple[int, int] | None] | None = None,
    rules: CueRules = RECUT_RULES,
    language: str | None = None,
) -> Resegmented:
    """``document``'s cues cut again (see the module's text); ``document`` is not changed.

    ``times``: per word of ``document.words()``, when it was heard (start, end) in ms, or None.
    ``language`` (the document's own unless given) chooses the words a line should not end on.
    """
    language = language or document.language
    cues = document.cues
    reasons = _keep_reasons(cues)
    firsts = list(itertools.accumulate((len(cue.words) for cue in cues), initial=0))
    timing_line = _timing_style(document)
    new_cues: list[Cue] = []
    kept: Counter[str] = Counter()
    estimated = cut = 0
    word_times: list[tuple[int, int] | None] = [None] * firsts[-1]
    starts = _sentence_starts(document)
    number = 0
    while number < len(cues):
        reason = reasons[number]
        if reason is not None:
            new_cues.append(_copy(cues[number]))
            kept[reason] += 1
            number += 1
            continue
        stop = number + 1
        # A NOTE block after a cue stays where it is: the run ends with that cue.
        while stop < len(cues) and reasons[stop] is None and not (cues[stop - 1].after_text or "").strip():
            stop += 1
        # The last new cue may go on into the silence before the next cue, and stops two frames
        # short of it even where the cue it replaces did not.
        until = cues[stop - 1].end if stop == len(cues) else cues[stop].start - rules.min_gap_ms
        words = _run_words(cues[number:stop], firsts[number], times, starts)
        runs_on = stop < len(cues) and not _ends_sentence_before(cues[stop - 1], cues, stop)
        planned = plan_cues([word for word, _ in words], rules, until, runs_on, weak_words(language))
        if _fits(planned, cues[number].start, until, rules):
            new_cues += _new_cues(cues[number:stop], planned, rules, language, timing_line)
            estimated += sum(1 for _, guessed in words if guessed)
            cut += len(words)
            for index, (word, _) in enumerate(words, start=firsts[number]):
                word_times[index] = (word.start, word.end)
        else:  # words heard far from their cues, or no time to show them: leave the run as it is
            new_cues += [_copy(cue) for cue in cues[number:stop]]
            kept[TIMING] += stop - number
        number = stop
    _number_cues(cues, new_cues, document.format)
    changed = [_cut_of(cue) for cue in new_cues] != [_cut_of(cue) for cue in cues]
    result = dataclasses.replace(
        document,
        cues=new_cues,
        warnings=list(document.warnings),
        suggestions=list(document.suggestions),
        changes_since_save=document.changes_since_save + changed,
    )
    return Resegmented(result, estimated, len(cues), len(new_cues), dict(kept), word_times, changed, cut)


def _ends_sentence_before(cue: Cue, cues: Sequence[Cue], later: int) -> bool:
    """Whether ``cue``'s last word ends a sentence, or no words follow it in ``cues[later:]``."""
    following = next(
        (other.words[0].rendered() for other in itertools.islice(cues, later, None) if other.words), None
    )
    return following is None or ends_sentence(cue.words[-1].rendered(), following)


def _cut_of(cue: Cue) -> tuple[object, ...]:
    return cue.start, cue.end, tuple(cue.words), tuple(cue.layout)


def _copy(cue: Cue) -> Cue:
    return dataclasses.replace(cue, words=list(cue.words), layout=list(cue.layout))


def _keep_reasons(cues: Sequence[Cue]) -> list[str | None]:
    """Why each cue keeps its own cut, or None where it may be cut again."""
    latest_end = list(itertools.accumulate((cue.end for cue in cues), max, initial=-1))
    earliest_start: list[float] = list(itertools.accumulate((cue.start for cue in reversed(cues)), min))
    earliest_start = [*earliest_start[::-1], math.inf]
    reasons: list[str | None] = []
    for number, cue in enumerate(cues):
        in_order = latest_end[number] <= cue.start < cue.end <= earliest_start[number + 1]
        between = _between_words(cue)
        if not cue.words:
            reasons.append(EMPTY)
        elif cue.settings.strip():
            reasons.append(POSITIONED)
        elif between is None:
            reasons.append(STYLED)
        elif _is_description(cue, between):
            reasons.append(DESCRIPTION)
        elif any(word.prefix[:1] in _DIALOGUE_DASHES for word in cue.words if word.prefix):
            reasons.append(DIALOGUE)
        elif not in_order:
            reasons.append(TIMING)
        else:
            reasons.append(None)
    return reasons


def _between_words(cue: Cue) -> list[str] | None:
    """The whitespace between each word and the next, or None when the layout holds anything but
    words and whitespace (``line_breaks.word_gaps``, which also takes a cue of one word)."""
    if len(cue.words) == 1:
        slots = [piece for piece in cue.layout if not isinstance(piece, str)]
        plain = all(piece.isspace() for piece in cue.layout if isinstance(piece, str))
        return [] if plain and slots == [(Slot.WORD, 0), (Slot.MARK, 0)] else None
    gaps = word_gaps(cue)
    return None if gaps is None else [str(cue.layout[index]) for index in gaps]


#: Dashes a speaker's turn starts with, written against its first word ("-Hi."); a dash with a
#: space after it is a symbol of its own, and the cue is styled.
_DIALOGUE_DASHES = "-‐–—"


def _is_description(cue: Cue, between: list[str]) -> bool:
    """Whether a line of the cue, or the whole cue, is in brackets ("(computer playing / electronic
    melody)"): a description a viewer reads apart from the speech."""
    opening, closing = cue.words[0].prefix, cue.words[-1].mark
    whole = any(opening.startswith(o) and c in closing for o, c in (("(", ")"), ("[", "]")))
    return whole or has_description_line(cue.words, between)


def _sentence_starts(document: Document) -> set[int]:
    """The words that start a sentence by the marks before them: export gives them their capital,
    so the cuts are planned as it will write them (the editor's words are not capitalised yet)."""
    words = list(document.words())
    return {index for index in range(len(words)) if starts_sentence(words, index)}


def _as_planned(word: Word, sentence_start: bool) -> str:
    """A word as written, with the capital a sentence start will have."""
    if sentence_start and casing_of(word.text) is Casing.LOWER:
        return word.prefix + apply_casing(word.text, Casing.CAPITALISED) + word.mark
    return word.rendered()


def _run_words(
    cues: Sequence[Cue],
    first_word: int,
    times: Sequence[tuple[int, int] | None] | None,
    sentence_starts: Collection[int] = (),
) -> list[tuple[TimedWord, bool]]:
    """The run's words as written (sentence starts with their capital) with their times, and
    whether each time is an estimate.

    A word's own times win, then the heard ones; heard times are kept within the run and in order
    so no new cue can reach past it. A word with neither gets its share of its cue's time by its
    length (the space after it included), so an estimate never leaves its cue.
    """
    run_start, run_end = cues[0].start, cues[-1].end
    result: list[tuple[TimedWord, bool]] = []
    index = first_word
    latest_start = run_start
    for cue in cues:
        weights = [len(word.rendered()) + 1 for word in cue.words]
        total = sum(weights)
        before = 0
        for word, weight in zip(cue.words, weights, strict=True):
            share_start = cue.start + (cue.end - cue.start) * before // total
            before += weight
            share_end = cue.start + (cue.end - cue.start) * before // total
            heard = times[index] if times is not None and index < len(times) else None
            if word.start is not None and word.end is not None:
                start, end, guessed = word.start, word.end, False
            elif heard is not None:
                start, end, guessed = heard[0], heard[1], False
            else:
                start, end, guessed = share_start, share_end, True
            if not guessed:
                start = min(max(start, run_start, latest_start), run_end)
                end = min(max(end, start), run_end)
            latest_start = max(latest_start, start)
            result.append((TimedWord(_as_planned(word, index in sentence_starts), start, end), guessed))
            index += 1
    return result


def _fits(planned: Sequence[PlannedCue], run_start: int, until: int, rules: CueRules) -> bool:
    """Whether the planned cues stay within their run, each with a duration, in order and apart."""
    if not planned or planned[0].start < run_start or planned[-1].end > until:
        return False
    if any(cue.end <= cue.start for cue in planned):
        return False
    return all(later.start - cue.end >= rules.min_gap_ms for cue, later in itertools.pairwise(planned))


def _new_cues(
    run: Sequence[Cue],
    planned: Sequence[PlannedCue],
    rules: CueRules,
    language: str | None,
    timing_line: Callable[[int, int], str] | None,
) -> list[Cue]:
    """Cues holding the run's words as planned, their lines laid out as ``line_words`` lays them
    out; a cue ending where one of the run's cues ended keeps what followed it (the spacing),
    and a cue planned and laid out just as it was is that cue, written as it was read."""
    words = [word for cue in run for word in cue.words]
    endings = {}  # the word each cue of the run ended with -> what the file had after the cue
    originals = {}  # (first word, start, end) of each cue of the run -> the cue
    total = 0
    for cue in run:
        originals[total, cue.start, cue.end] = cue
        total += len(cue.words)
        endings[total] = cue.after_text
    cues: list[Cue] = []
    taken = 0
    for plan in planned:
        group = words[taken : taken + len(plan.words)]
        original = originals.get((taken, plan.start, plan.end))
        taken += len(group)
        texts = [word.rendered() for word in group]
        counts = line_words(texts, rules, language=language)
        line_ends = set(itertools.accumulate(counts[:-1]))
        layout: list[LayoutPiece] = []
        for position in range(len(group)):
            if position:
                layout.append("\n" if position in line_ends else " ")
            layout += [(Slot.WORD, position), (Slot.MARK, position)]
        cue = Cue(
            index=None,
            start=plan.start,
            end=plan.end,
            words=list(group),
            original_text="",
            layout=layout,
            timing_line=timing_line(plan.start, plan.end) if timing_line else None,
            after_text=endings.get(taken),
        )
        cue.original_text = cue.text()
        same = original is not None and original.words == cue.words and original.text() == cue.original_text
        cues.append(_copy(original) if same and original is not None else cue)
    return cues


def _number_cues(before: Sequence[Cue], after: list[Cue], file_format: str) -> None:
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


#: A timing line written as the standard writes it, but for the spacing, the digits of the hours
#: (which WebVTT may leave out) and the separator before the milliseconds.
_TIMING = re.compile(r"([ \t]*)(?:(\d+):)?(\d\d):(\d\d)([,.])(\d\d\d)([ \t]*-->[ \t]*)\S+[ \t]*\n?")


def _timing_style(document: Document) -> Callable[[int, int], str] | None:
    """How the document writes a timing line, as a function of a cue's times; None when no line
    reads plainly (the writer's own style then)."""
    plain = (_TIMING.fullmatch(cue.timing_line or "") for cue in document.cues if not cue.settings)
    match = next((found for found in plain if found is not None), None)
    if match is None or (document.format == "srt" and match.group(2) is None):
        return None
    indent, hours, _, _, separator, _, arrow = match.groups()
    hour_digits = len(hours) if hours is not None else 0
    return lambda start, end: (
        f"{indent}{_clock(start, hour_digits, separator)}{arrow}{_clock(end, hour_digits, separator)}\n"
    )


def _clock(millis: int, hour_digits: int, separator: str) -> str:
    """``millis`` as a timestamp with hours of ``hour_digits`` digits (left out at 0 when the file
    leaves them out, as WebVTT may) and ``separator`` before the milliseconds."""
    hour, rest = divmod(millis, 3_600_000)
    minute, rest = divmod(rest, 60_000)
    second, fraction = divmod(rest, 1000)
    head = f"{hour:0{hour_digits}d}:" if hour_digits or hour else ""
    return f"{head}{minute:02d}:{second:02d}{separator}{fraction:03d}"


@dataclass(frozen=True)
class CutChecks:
    """Where a document's cues are cut: how many cues end at a sentence end, how many end with
    the start of a sentence that runs on into the next cue (a dangling start), and how many go
    over ``rules`` where more than one word is to blame: lines (count, characters), duration
    (``min_ms`` to ``max_ms``), reading speed, and the gap before the next cue."""

    cues: int
    sentence_ends: int = 0
    dangling_starts: int = 0
    over_lines: int = 0
    over_duration: int = 0
    over_speed: int = 0
    short_gaps: int = 0

    def __add__(self, other: CutChecks) -> CutChecks:
        return CutChecks(
            *(a + b for a, b in zip(dataclasses.astuple(self), dataclasses.astuple(other), strict=True))
        )

    @property
    def share_at_sentence_end(self) -> float:
        return self.sentence_ends / self.cues if self.cues else 0.0


def cut_checks(
    document: Document, rules: CueRules = RECUT_RULES, among: Collection[int] | None = None
) -> CutChecks:
    """The checks of ``CutChecks`` for any document: a cue of one word is over no limit, nor is a
    line of one word over the characters a line holds. ``among``: the cues (by number) whose
    limits are checked, all unless given (the cues a re-cut made, not those that kept their cut)."""
    starts = _sentence_starts(document)
    texts: list[list[str]] = []
    index = 0
    for cue in document.cues:
        texts.append([_as_planned(word, index + n in starts) for n, word in enumerate(cue.words)])
        index += len(cue.words)
    counts = Counter[str]()
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
        counts["short_gaps"] += later is not None and later.start - cue.end < rules.min_gap_ms
        if len(words) == 1:
            continue
        lines = visible_lines(cue)
        too_wide = any(len(line) > rules.max_line_chars and " " in line for line in lines)
        counts["over_lines"] += len(lines) > rules.max_lines or too_wide
        counts["over_duration"] += not rules.min_ms <= cue.duration <= rules.max_ms
        characters = sum(len(line) for line in lines) + len(lines) - 1
        if rules.max_cps is not None:
            counts["over_speed"] += characters * 1000 > rules.max_cps * max(cue.duration, 0)
    return CutChecks(len(document.cues), **counts)
