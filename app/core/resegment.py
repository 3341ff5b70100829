"""Cues cut again at sentence ends once the marks are in: a new document, no I/O.

A recogniser cuts its cues by the clock, so a sentence starts at the end of one cue and runs on
into the next. With the marks back, ``resegment`` cuts the cues again as ``cue_segmentation.plan_cues``
plans them: a sentence a cue where it fits, a long one split at a clause, short ones sharing a cue,
within the caption limits (``core.checks.CaptionLimits``: by default two lines of 42 characters,
5/6 s to 7 s, 17 characters a second, two frames between cues). Lines and the longest duration
are kept but where one word is longer; a new cue starts at its first word, ends no earlier than
its last word and stays up after it (for reading speed, the shortest duration, and a little
lingering) as far as the next cue allows, two frames before it. A run of cues whose words cannot
be cut again without a cue shorter than the shortest duration, where none of its own cues was,
keeps its cut: a flash of one word is worse than a sentence's start at a cue's end.

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
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from app.core.checks import STYLE_GUIDE_LIMITS, CaptionLimits
from app.core.cue_segmentation import PlannedCue, TimedWord, ends_sentence, line_words, plan_cues, turn_after
from app.core.cut_checks import as_planned, sentence_starts

# Re-breaking's own tests of which cues can be rewritten, so the two features never disagree.
from app.core.line_breaks import has_description_line, word_gaps
from app.core.model import Cue, Document, Slot
from app.core.recut_cues import CueCut, built_cues, copied, number_cues
from app.core.weak_words import weak_words

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


def resegment(
    document: Document,
    times: Sequence[tuple[int, int] | None] | None = None,
    rules: CaptionLimits = STYLE_GUIDE_LIMITS,
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
    new_cues: list[Cue] = []
    kept: Counter[str] = Counter()
    estimated = cut = 0
    word_times: list[tuple[int, int] | None] = [None] * firsts[-1]
    starts = sentence_starts(document)
    number = 0
    while number < len(cues):
        reason = reasons[number]
        if reason is not None:
            new_cues.append(copied(cues[number]))
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
        following = _first_word_after(cues, stop)
        # The run's last sentence goes on after it: words follow, and its last word ends none.
        runs_on = following is not None and not ends_sentence(cues[stop - 1].words[-1].rendered(), following)
        planned = plan_cues(
            [word for word, _, _ in words], rules, until, runs_on, weak_words(language), turns=True
        )
        planned = _within_estimates(planned, words)
        texts = [planned_word.text for planned_word, _, _ in words]
        was = list(itertools.accumulate(len(cue.words) for cue in cues[number:stop]))
        now = list(itertools.accumulate(len(plan.words) for plan in planned))
        no_worse = _dangling(texts, now, following) <= _dangling(texts, was, following)
        if no_worse and _fits(planned, words, cues[number].start, until, rules.min_gap_ms):
            new_cues += built_cues(cues[number:stop], _layouts(planned, rules, language))
            estimated += sum(1 for _, guessed, _ in words if guessed)
            cut += len(words)
            for index, (word, _, _) in enumerate(words, start=firsts[number]):
                word_times[index] = (word.start, word.end)
        else:  # words heard far from their cues, or no time to show them all: the run as it is
            new_cues += [copied(cue) for cue in cues[number:stop]]
            kept[TIMING] += stop - number
        number = stop
    number_cues(cues, new_cues, document.format)
    changed = [_cut_of(cue) for cue in new_cues] != [_cut_of(cue) for cue in cues]
    result = dataclasses.replace(
        document,
        cues=new_cues,
        warnings=list(document.warnings),
        suggestions=list(document.suggestions),
        changes_since_save=document.changes_since_save + changed,
    )
    return Resegmented(result, estimated, len(cues), len(new_cues), dict(kept), word_times, changed, cut)


def _first_word_after(cues: Sequence[Cue], later: int) -> str | None:
    """The first word of ``cues[later:]`` as written, or None when they hold none."""
    return next(
        (other.words[0].rendered() for other in itertools.islice(cues, later, None) if other.words), None
    )


def _dangling(texts: Sequence[str], stops: Sequence[int], following: str | None) -> int:
    """How many cues, ending after the words ``stops`` count, end with the start of a sentence
    that runs on into the next cue (``following``: the first word after ``texts``)."""
    ends = [ends_sentence(text, after) for text, after in zip(texts, [*texts[1:], following], strict=True)]
    count = 0
    for first, stop in zip([0, *stops[:-1]], stops, strict=True):
        runs_on = stop < len(texts) or following is not None
        count += runs_on and not ends[stop - 1] and any(ends[first : stop - 1])
    return count


def _cut_of(cue: Cue) -> tuple[object, ...]:
    return cue.start, cue.end, tuple(cue.words), tuple(cue.layout)


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


def _run_words(
    cues: Sequence[Cue],
    first_word: int,
    times: Sequence[tuple[int, int] | None] | None,
    sentence_starts: Collection[int] = (),
) -> list[tuple[TimedWord, bool, int]]:
    """The run's words as written (sentence starts with their capital) with their times, whether
    each time is an estimate, and the end of the cue each word was in.

    A word's own times win, then the heard ones; heard times are kept within the run and in order
    so no new cue can reach past it. A word with neither gets its share of its cue's time by its
    length (the space after it included), so an estimate never leaves its cue.
    """
    run_start, run_end = cues[0].start, cues[-1].end
    result: list[tuple[TimedWord, bool, int]] = []
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
            planned = TimedWord(as_planned(word, index in sentence_starts), start, end)
            result.append((planned, guessed, cue.end))
            index += 1
    return result


def _layouts(planned: Sequence[PlannedCue], rules: CaptionLimits, language: str | None) -> list[CueCut]:
    """The planned cues as cuts: their words laid out on lines as ``line_words`` lays them out,
    each line starting with the limits' speaker dash where each holds one speaker's words."""
    cuts = []
    for plan in planned:
        turns = _turns(plan.words)
        lines = line_words([w.text for w in plan.words], rules, language=language, turns=turns)
        line_ends = {end - 1 for end in itertools.accumulate(lines[:-1])}
        dash = rules.speaker_dash if turns and line_ends == turns else ""
        cuts.append(CueCut(len(plan.words), plan.start, plan.end, tuple(lines), dash))
    return cuts


def _turns(words: Sequence[TimedWord]) -> set[int]:
    """Where another speaker may start inside a cue's words (``turn_after``): each starts a line."""
    return {k for k in range(len(words) - 1) if turn_after(words[k], words[k + 1])}


def _within_estimates(
    planned: list[PlannedCue], words: Sequence[tuple[TimedWord, bool, int]]
) -> list[PlannedCue]:
    """The planned cues, each ending by the end of the cue its last word was in where that word's
    time is an estimate: an estimate says nothing of silence after the word, so a cue stays up
    after it no longer than the cue it came from did."""
    result = []
    taken = 0
    for plan in planned:
        taken += len(plan.words)
        _, guessed, cue_end = words[taken - 1]
        if guessed and plan.end > cue_end:
            plan = dataclasses.replace(plan, end=max(cue_end, plan.start + 1))
        result.append(plan)
    return result


def _fits(
    planned: Sequence[PlannedCue],
    words: Sequence[tuple[TimedWord, bool, int]],
    run_start: int,
    until: int,
    gap: int,
) -> bool:
    """Whether the planned cues stay within their run, each with a duration, in order and ``gap``
    apart, and each cue starting on an estimated word starts before the cue that word was in
    ended (a cue pushed later and later by the gaps before it would leave its words behind)."""
    if not planned or planned[0].start < run_start or planned[-1].end > until:
        return False
    if any(cue.end <= cue.start for cue in planned):
        return False
    if any(later.start - cue.end < gap for cue, later in itertools.pairwise(planned)):
        return False
    firsts = itertools.accumulate((len(plan.words) for plan in planned[:-1]), initial=0)
    return all(
        not words[first][1] or plan.start < words[first][2]
        for first, plan in zip(firsts, planned, strict=True)
    )
