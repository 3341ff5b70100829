"""Plan caption cues from recognised words and their times: which words share a cue, and its lines.

Speech-to-text gives a run of timed words; a caption editor expects them laid out as subtitle
guidelines ask. With the limits of ``CaptionLimits``:

- Every word appears once, in order; cues are in time order and never overlap.
- A cue has at most ``max_lines`` lines of at most ``max_line_chars`` characters (words joined by
  one space). A word longer than a line gets a line of its own and is never cut.
- A cue spans at most ``max_ms`` from its first word's start to its last word's end, unless it is
  one word that is longer. It starts at its first word and ends at its last word's end, then is
  extended into the silence after it to last ``min_ms`` and to stay ``linger_ms`` after its speech,
  as far as the next cue's start (less ``min_gap_ms``) and ``max_ms`` allow.
- Cues break preferably at a sentence end (``. ? ! …`` or their CJK forms, closing quotes and
  brackets allowed after them, and no lower-case word next) or at a pause of ``PAUSE_MS`` or more,
  then at a clause mark (``, ; :`` or a dash); a shorter pause makes any break cheaper. A sentence
  end or a long pause inside a cue costs something, a cue with little text or too little time to
  be read costs more, and every cue costs a little, so short sentences share a cue instead of
  flashing by one at a time, and a long sentence is split evenly rather than leaving a scrap.
- With a reading speed (``max_cps``) a cue also goes on into the silence after it until its text
  can be read, and a cue that cannot be costs more, as does one shorter than ``min_ms``.
  Re-cutting captions (``core.resegment``) keeps to the caption limits in full; transcription
  (``TRANSCRIPT_LIMITS``) asks for no reading speed, gap or lingering.
- Within a cue the text stays on one line when it fits; otherwise it takes as few lines as it
  can, as balanced in length as possible (either line may be the longer), broken after
  punctuation where that costs little balance, and without a one-word line where avoidable.

Both choices are small dynamic programmes over break positions, so the result is deterministic
and the work grows with the number of words times the number of words a cue can hold.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from app.core.checks import CaptionLimits
from app.core.orthography import is_abbreviation
from app.core.weak_words import is_number, weak_words


@dataclass(frozen=True)
class TimedWord:
    """A recognised word as written, with any punctuation ("Hello,"), and its times in ms."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class PlannedCue:
    """A cue's times (ms) and its lines, each a run of words."""

    start: int
    end: int
    lines: tuple[tuple[TimedWord, ...], ...]

    @property
    def words(self) -> tuple[TimedWord, ...]:
        return tuple(word for line in self.lines for word in line)


#: Silence between two words (ms) that makes a natural place to end a cue.
PAUSE_MS = 500
#: The most a gap between cues takes from the speech before it: a recogniser's word ends run over
#: by about that much, so a cue may end so early; a wider gap (``--min-gap 5000``) is kept only
#: where the speech leaves room for it, rather than cutting cues to a millisecond.
GAP_TAKES_AT_MOST_MS = 120

#: Cues planned from a transcript's words: each follows the speech as said, with no reading speed,
#: gap or lingering asked of it.
TRANSCRIPT_LIMITS = CaptionLimits(max_cps=None, min_ms=1000, min_gap_ms=0, linger_ms=0)

_NONE, _CLAUSE, _SENTENCE, _WEAK, _TURN = 0, 1, 2, 3, 4

_SENTENCE_ENDS = frozenset(".?!…。？！‼⁇⁈⁉")
_CLAUSE_MARKS = frozenset(",;:，、；：—–")
_CLOSERS = "\"'”’»›)]}」』）】〉》"

# Costs, in a common unit; the values only matter relative to one another.
_CUE = 15.0  # every cue: fewer, fuller cues read better than many small ones
_CLAUSE_BREAK = 30.0  # ending a cue after , ; : rather than at a sentence end
_PLAIN_BREAK = 80.0  # ending a cue mid-clause
_WEAK_END = 40.0  # ending a cue on an article or a preposition, read with the word after it
_INNER_SENTENCE = 40.0  # a sentence end inside a cue: a new sentence reads best from a new cue
_INNER_TURN = 100.0  # a turn inside a cue (``turn_after``): the answer joined to its question
_INNER_PAUSE = 20.0  # per pause_ms of silence inside a cue: its text shows before it is said
_SHORT_TEXT = 40.0  # a cue with a scrap of text flashes by (scaled by the missing part of a line)
_SHORT_TIME = 100.0  # a cue with less than min_ms before the next one flashes by, unread
_FLASH = 100.0  # and any such cue, however little short: costlier than a break mid-clause
_DANGLING = 40.0  # a cue ending with the start of a sentence that runs on past the words
_FAST_TEXT = 100.0  # per share of max_cps a cue is over: its text goes before it can be read
# And any cue over it at all, however little: a viewer meets it. Without it a cue 6% over cost 6,
# less than any break, and re-cut LJSpeech had 12 cues over 17 cps where its own cut had 9.
_OVER_SPEED = 60.0
# Within a cue, in characters of imbalance between lines that a better break is worth.
_LINE_CLAUSE_BREAK = 2.0
_LINE_PLAIN_BREAK = 8.0
#: Re-breaking a cue whose marks are now in: punctuation counts for more than balance.
_REBREAK_COSTS = {_SENTENCE: 0.0, _CLAUSE: 3.0, _NONE: 40.0, _WEAK: 60.0, _TURN: -30.0}
#: Re-breaking: a break where the captions have none costs this much (in characters of imbalance),
#: so a break that reads as well stays where it is rather than moving for a little balance.
_MOVED_BREAK = 10.0
_ORPHAN = 10.0


def as_shown(text: str) -> str:
    """A word as a caption shows it: recognisers may write spaces around it."""
    return " ".join(text.split())


def _break_kind(word: TimedWord, following: TimedWord) -> int:
    """How good a break after ``word`` is, by its punctuation."""
    core = as_shown(word.text).rstrip(_CLOSERS)
    last = core[-1:]
    if is_abbreviation(core):  # "the U.S. / team": its stop ends no sentence and no clause
        return _NONE
    if last in _SENTENCE_ENDS:
        # "e.g. the", "… and then": a stop before a lower-case word ends no sentence.
        letter = next((c for c in as_shown(following.text) if c.isalpha()), "")
        return _CLAUSE if letter.islower() else _SENTENCE
    if last in _CLAUSE_MARKS:
        return _CLAUSE
    return _NONE


#: A sentence end followed by this much silence is taken for a turn to another speaker.
TURN_PAUSE_MS = 700


def turn_after(word: TimedWord, following: TimedWord) -> bool:
    """Whether another speaker may start after ``word``: a question ends there, or a sentence and
    a long pause (captions do not say who speaks; style guides keep speakers apart)."""
    if _break_kind(word, following) != _SENTENCE:
        return False
    asked = as_shown(word.text).rstrip(_CLOSERS)[-1:] in "?？"
    return asked or following.start - word.end >= TURN_PAUSE_MS


def _read_with_next(word: TimedWord, following: TimedWord, weak: Collection[str]) -> bool:
    """Whether a viewer reads ``word`` with the one after it: a ``weak`` word, a number in digits,
    or a part of a name."""
    shown = as_shown(word.text)
    return shown.lower() in weak or is_number(shown) or _inside_a_name(word, following)


def _inside_a_name(word: TimedWord, following: TimedWord) -> bool:
    """Whether the break after ``word`` would split a name ("Maple / Street", "New / York"): two
    words with capitals and nothing between them."""
    text, after = as_shown(word.text), as_shown(following.text)
    return text[:1].isupper() and after[:1].isupper() and text[-1:].isalnum() and after != "I"


def ends_sentence(text: str, following: str | None = None) -> bool:
    """Whether a word as written (marks included) ends a sentence when ``following`` (the next
    word as written; None at the end) comes after it, as ``plan_cues`` reads its marks."""
    return _break_kind(TimedWord(text, 0, 0), TimedWord(following or "", 0, 0)) == _SENTENCE


def plan_cues(
    words: Sequence[TimedWord],
    rules: CaptionLimits = TRANSCRIPT_LIMITS,
    until: int | None = None,
    runs_on: bool = False,
    weak: Collection[str] = (),
    turns: bool = False,
) -> list[PlannedCue]:
    """The words laid out in cues and lines by the rules above; [] for no words. ``until``: the
    latest the last cue may end (the next caption's start), which else only its words decide.
    ``runs_on``: the last sentence goes on after the words (in a caption kept as it is), so a last
    cue holding a sentence end would end with the start of a sentence, which costs more.

    With ``rules.max_cps`` a cue is also extended into the silence after it until it can be read,
    and kept to where its text can be read in the time before the next cue (a cost, as the words'
    own pace may not allow it); with ``rules.min_gap_ms`` a cue ends that long before the next.
    ``weak``: words a cue should not end on either (``core.weak_words``: "by / a similar process"),
    nor, then, in the middle of a name ("Maple / Street"). ``turns``: a cue should not go on past
    where another speaker may start (``turn_after``; the re-cut's, not transcription's).
    """
    count = len(words)
    if count == 0:
        return []
    lengths = [len(as_shown(word.text)) for word in words]
    kinds = [_break_kind(words[b], words[b + 1]) for b in range(count - 1)]
    end_costs, inner_costs = _boundary_costs(words, kinds, rules, weak, turns)
    spans = _cue_spans(words, lengths, end_costs, inner_costs, rules, until, kinds if runs_on else None)

    cues: list[PlannedCue] = []
    previous_end = -rules.min_gap_ms
    for first, stop in spans:
        group = words[first:stop]
        # Recognisers may let a word overlap the next: a cue starts no earlier than the one before
        # it ends (nor before 0, which a caption file cannot write).
        start = max(group[0].start, previous_end + min(rules.min_gap_ms, GAP_TAKES_AT_MOST_MS), 0)
        end = max(start, *(word.end for word in group))
        limit = until
        if stop < count:
            following = words[stop].start
            limit = max(following - rules.min_gap_ms, min(end, following) - GAP_TAKES_AT_MOST_MS)
        wanted = max(rules.min_ms, _reading_ms(sum(lengths[first:stop]) + stop - first - 1, rules))
        target = max(start + min(wanted, rules.max_ms), min(end + rules.linger_ms, start + rules.max_ms))
        if limit is not None:
            target = min(target, limit)
        end = max(end, target)
        if limit is not None and (rules.min_gap_ms or stop == count):
            end = max(start + 1, min(end, limit))
        lines = _layout(group, lengths[first:stop], kinds[first : stop - 1], rules)
        cues.append(PlannedCue(start, end, lines))
        previous_end = end
    return cues


def _boundary_costs(
    words: Sequence[TimedWord],
    kinds: list[int],
    rules: CaptionLimits,
    weak: Collection[str] = (),
    turns: bool = False,
) -> tuple[list[float], list[float]]:
    """For each gap between two words: the cost of ending a cue there, and of a cue spanning it
    (more after a ``weak`` word, which a viewer reads with the next)."""
    pause = max(PAUSE_MS, 1)
    end_costs: list[float] = []
    inner_costs: list[float] = []
    for b, kind in enumerate(kinds):
        gap = max(0, words[b + 1].start - words[b].end)
        is_pause = gap >= PAUSE_MS
        if kind == _SENTENCE or is_pause:
            end_costs.append(0.0)
        else:
            base = _CLAUSE_BREAK if kind == _CLAUSE else _PLAIN_BREAK
            if kind == _NONE and _read_with_next(words[b], words[b + 1], weak):
                base += _WEAK_END
            end_costs.append(base * (1 - gap / pause))
        inner = _INNER_SENTENCE if kind == _SENTENCE else 0.0
        if turns and kind == _SENTENCE and turn_after(words[b], words[b + 1]):
            inner += _INNER_TURN
        if is_pause:
            inner += _INNER_PAUSE * gap / pause
        inner_costs.append(inner)
    return end_costs, inner_costs


def _cue_spans(
    words: Sequence[TimedWord],
    lengths: list[int],
    end_costs: list[float],
    inner_costs: list[float],
    rules: CaptionLimits,
    until: int | None = None,
    kinds_if_runs_on: list[int] | None = None,
) -> list[tuple[int, int]]:
    """The cheapest split of the words into cues, as (first, stop) index pairs.

    ``best[j]`` is the cheapest cost of laying out ``words[:j]``; the last cue of that layout
    is grown backwards word by word while it still fits its lines and its time limit.
    """
    count = len(words)
    width = rules.max_line_chars
    best = [0.0] + [math.inf] * count
    back = [0] * (count + 1)
    for stop in range(1, count + 1):
        lines = 0
        front = 0  # characters on the cue's top line while filling lines from the bottom
        chars = -1
        inner = 0.0
        sentence_inside = False
        latest = words[stop - 1].end
        # The latest the cue may end: the next cue's start less the gap, or ``until`` for the last.
        limit = words[stop].start - rules.min_gap_ms if stop < count else until
        for first in range(stop - 1, -1, -1):
            # Filling lines from the bottom, each as full as it goes, gives the fewest lines.
            if lines and front + 1 + lengths[first] <= width:
                front += 1 + lengths[first]
            else:
                lines += 1
                front = lengths[first]
            latest = max(latest, words[first].end)
            if first < stop - 1:
                if lines > rules.max_lines or latest - words[first].start > rules.max_ms:
                    break
                inner += inner_costs[first]
                sentence_inside = sentence_inside or (
                    kinds_if_runs_on is not None and kinds_if_runs_on[first] == _SENTENCE
                )
            chars += lengths[first] + 1
            cost = best[first] + _CUE + inner
            cost += _SHORT_TEXT * (max(0, width - chars) / width) ** 2
            if stop < count:
                cost += end_costs[stop - 1]
            else:
                cost += _DANGLING if sentence_inside else 0.0
            room = None if limit is None else limit - words[first].start
            if room is not None and room < rules.min_ms:
                cost += _FLASH + _SHORT_TIME * (rules.min_ms - room) / rules.min_ms
            if rules.max_cps is not None:
                shown_until = latest if limit is None else max(limit, latest)
                shown = min(rules.max_ms, shown_until - words[first].start)
                over = chars * 1000 / max(shown, 1) / rules.max_cps - 1
                cost += _FAST_TEXT * over + _OVER_SPEED if over > 0 else 0.0
            if cost < best[stop]:
                best[stop], back[stop] = cost, first
    spans: list[tuple[int, int]] = []
    stop = count
    while stop > 0:
        spans.append((back[stop], stop))
        stop = back[stop]
    return spans[::-1]


def _reading_ms(chars: int, rules: CaptionLimits) -> int:
    """How long ``chars`` characters take to read at ``rules.max_cps`` (0 without a limit)."""
    return 0 if rules.max_cps is None else math.ceil(chars * 1000 / rules.max_cps)


def _lines_needed(lengths: list[int], width: int) -> int:
    lines, used = 0, 0
    for length in lengths:
        if lines and used + 1 + length <= width:
            used += 1 + length
        else:
            lines, used = lines + 1, length
    return lines


def line_words(
    texts: Sequence[str],
    rules: CaptionLimits,
    at_least: int = 1,
    language: str | None = None,
    breaks: Collection[int] | None = None,
    turns: Collection[int] = (),
) -> list[int]:
    """How many of a cue's words (as written, marks included) go on each line, laid out as
    ``plan_cues`` lays out a cue: as few lines as they need (but ``at_least``), balanced, broken
    after punctuation, not after an article or a preposition of ``language``
    (``core.weak_words``) nor inside a name, without a one-word line where avoidable. ``breaks``: the words the
    cue's lines now end after, kept unless another break reads better by more than a little.
    ``turns``: the words after which another speaker may start (``turn_after``), each then
    starting a line of its own where the lines allow (after the limits' speaker dash)."""
    words = [TimedWord(text, 0, 0) for text in texts]
    lengths = [len(as_shown(text)) for text in texts]
    if turns and rules.speaker_dash:
        for first in {0, *(b + 1 for b in turns)}:
            lengths[first] += len(rules.speaker_dash)
    weak = weak_words(language)
    kinds = [_break_kind(word, following) for word, following in itertools.pairwise(words)]
    kinds = [
        _TURN
        if b in turns
        else _WEAK
        if kind == _NONE and _read_with_next(words[b], words[b + 1], weak)
        else kind
        for b, kind in enumerate(kinds)
    ]
    if turns:
        at_least = max(at_least, min(rules.max_lines, len(words), len(set(turns)) + 1))
    moved = None if breaks is None else [0.0 if b in breaks else _MOVED_BREAK for b in range(len(kinds))]
    return [len(line) for line in _layout(words, lengths, kinds, rules, at_least, _REBREAK_COSTS, moved)]


def _layout(
    words: Sequence[TimedWord],
    lengths: list[int],
    kinds: list[int],
    rules: CaptionLimits,
    at_least: int = 1,
    costs: dict[int, float] | None = None,
    moved: Sequence[float] | None = None,
) -> tuple[tuple[TimedWord, ...], ...]:
    """A cue's words on as few lines as they need, balanced, broken after punctuation if it helps.

    ``kinds[k]`` is the break quality after word ``k``, ``moved[k]`` what a break there costs
    besides (re-breaking: a break the captions do not have). The cost of a layout is each line's
    distance from the average length (for two lines, their difference) plus the cost of each break.
    """
    size = len(words)
    width = rules.max_line_chars
    needed = min(size, max(_lines_needed(lengths, width), at_least))
    if needed == 1:
        return (tuple(words),)
    target = (sum(lengths) + size - needed) / needed
    break_cost = costs or {_SENTENCE: 0.0, _CLAUSE: _LINE_CLAUSE_BREAK, _NONE: _LINE_PLAIN_BREAK}
    # Where each word would start on one long line.
    starts = list(itertools.accumulate((length + 1 for length in lengths), initial=0))
    # best[k][e]: the cheapest layout of words[:e] on k lines. Shorter top lines are tried first,
    # so of two equally balanced layouts the one with the longer bottom line wins.
    best = [[math.inf] * (size + 1) for _ in range(needed + 1)]
    back = [[0] * (size + 1) for _ in range(needed + 1)]
    best[0][0] = 0.0
    for line in range(1, needed + 1):
        for stop in range(line, size + 1):
            for first in range(line - 1, stop):
                length = starts[stop] - starts[first] - 1
                if (length > width and stop - first > 1) or best[line - 1][first] == math.inf:
                    continue
                cost = best[line - 1][first] + abs(length - target)
                if stop < size:
                    cost += break_cost[kinds[stop - 1]] + (moved[stop - 1] if moved else 0.0)
                if stop - first == 1 and size > needed:
                    cost += _ORPHAN
                if cost < best[line][stop]:
                    best[line][stop], back[line][stop] = cost, first
    result: list[tuple[TimedWord, ...]] = []
    stop = size
    for line in range(needed, 0, -1):
        first = back[line][stop]
        result.append(tuple(words[first:stop]))
        stop = first
    return tuple(result[::-1])
