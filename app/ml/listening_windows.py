"""Where the listener listens: the captions' words cut into windows of audio that Whisper hears in
one encoder pass, each within what its decoder can follow.

A window holds whole cues in the captions' order, up to ``WINDOW_SECONDS`` of audio and a budget of
forced tokens; a cue longer than either is cut between its words. A window never spans cues that
run backwards in time: its audio is one stretch from its first word to its last.

Windows do not overlap. Begun again with the last cue of the window before, so that no cue ends at
a window's last gap, they read the same F1 pooled over the development sets (72.2 both; LJSpeech
73.1 -> 70.4, ``audio/real`` 71.8 -> 73.0) for a tenth more encoder passes: the decoder's reading
of a window's last gap, against the next word or the end of the text, is not blind.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

#: Whisper reads 30 s at a time; windows of whole cues stay under this, with room for margins.
WINDOW_SECONDS = 29.0
#: Audio taken before a window's first word and after its last: caption timings are loose.
LEAD_SECONDS, TAIL_SECONDS = 0.3, 0.6
#: A cue that starts this much before the one it follows runs backwards: a new window begins.
BACKWARDS_SECONDS = 1.0
#: More words a second of a window's audio (its margins counted) than anyone says: the captions'
#: times cannot be where the words are said, and the decoder, given a text that repeats itself, reads
#: it from the text alone (5,000 one-word cues in 10 s were all "heard", for 240 s). Speech runs at
#: 2-4 words a second (the sample, LJSpeech), the fastest speakers at 7.
MAX_WORDS_PER_SECOND = 10.0


@dataclass(frozen=True)
class Window:
    first: int  # index of its first word
    stop: int  # one past its last word
    start: float  # seconds into the audio
    end: float


@dataclass(frozen=True)
class Plan:
    windows: list[Window]
    past_the_end: int  # words that end after the audio does: not listened to
    too_long: int  # single words with more tokens than the decoder can follow
    too_dense: int = 0  # words in windows holding more than anyone says in their time


def plan_windows(
    times: Sequence[tuple[float, float]],
    cues: Sequence[int],
    tokens: Sequence[int],
    duration: float,
    budget: int,
) -> Plan:
    """Windows over the words (``times`` in seconds and the cue of each, ``tokens`` each takes in
    the forced text), for audio of ``duration`` seconds, each of at most ``budget`` tokens."""
    heard = [i for i, (_, end) in enumerate(times) if end <= duration + TAIL_SECONDS]
    too_long = sum(1 for i in heard if tokens[i] > budget)
    units = _units([i for i in heard if tokens[i] <= budget], times, cues, tokens, budget)
    groups: list[list[tuple[int, int]]] = []
    for unit in units:
        if groups and _fits([*groups[-1], unit], times, tokens, budget):
            groups[-1].append(unit)
        else:
            groups.append([unit])
    windows = [_window(group, times) for group in groups]
    sayable = [w for w in windows if w.stop - w.first <= MAX_WORDS_PER_SECOND * _heard_seconds(w)]
    too_dense = sum(w.stop - w.first for w in windows) - sum(w.stop - w.first for w in sayable)
    return Plan(sayable, len(times) - len(heard), too_long, too_dense)


def _heard_seconds(window: Window) -> float:
    return window.end - window.start + LEAD_SECONDS + TAIL_SECONDS


def spread(times: Sequence[tuple[float, float]], cues: Sequence[int]) -> list[tuple[float, float]]:
    """Words that share their cue's times get an even share of it each, in order (a cue longer
    than a window is then cut near where its words are said); words with times of their own keep
    them."""
    spread_times: list[tuple[float, float]] = []
    for (_, (start, end)), sharing in itertools.groupby(zip(cues, times, strict=False)):
        count = len(list(sharing))
        step = (end - start) / count
        spread_times += [(start + step * offset, start + step * (offset + 1)) for offset in range(count)]
    return spread_times


def _units(
    heard: list[int],
    times: Sequence[tuple[float, float]],
    cues: Sequence[int],
    tokens: Sequence[int],
    budget: int,
) -> list[tuple[int, int]]:
    """Runs of consecutive heard words of one cue, ``(first, stop)``, a long cue cut between its
    words so that each run fits a window."""
    units: list[tuple[int, int]] = []
    for index in heard:
        if units:
            first, stop = units[-1]
            if (
                stop == index
                and cues[index] == cues[first]
                and _fits([(first, index + 1)], times, tokens, budget)
            ):
                units[-1] = (first, index + 1)
                continue
        units.append((index, index + 1))
    return units


def _fits(
    units: list[tuple[int, int]], times: Sequence[tuple[float, float]], tokens: Sequence[int], budget: int
) -> bool:
    """Whether these runs can be one window: consecutive words, under the budget and the window's
    length, and never running backwards in time."""
    for (_, stop), (first, _) in itertools.pairwise(units):
        if first != stop or times[first][0] < times[first - 1][0] - BACKWARDS_SECONDS:
            return False
    window = _window(units, times)
    return sum(tokens[window.first : window.stop]) <= budget and window.end - window.start <= WINDOW_SECONDS


def _window(units: list[tuple[int, int]], times: Sequence[tuple[float, float]]) -> Window:
    first, stop = units[0][0], units[-1][1]
    span = times[first:stop]
    return Window(first, stop, min(start for start, _ in span), max(end for _, end in span))


def window_samples(window: Window, samples: int, rate: int) -> tuple[int, int]:
    """The stretch of audio a window hears, ``(first, last)`` samples at ``rate`` of ``samples``:
    its words with margins, at most the encoder's 30 s."""
    first = max(0, int((window.start - LEAD_SECONDS) * rate))
    return first, min(samples, int((window.end + TAIL_SECONDS) * rate), first + 30 * rate)


def verdict(windows: list[Window], outcomes: list[tuple[bool, str | None]]) -> list[str]:
    """What the user is told of windows that could not be heard: per window heard, whether its
    audio says its words and why it failed (None if it did not)."""
    warnings: list[str] = []
    failed = [failure for _, failure in outcomes if failure]
    if failed:
        warnings.append(
            f"the recogniser failed on {counted(len(failed), 'stretch')} ({failed[0]}): not listened to there"
        )
    judged = [(w, matches) for w, (matches, failure) in zip(windows, outcomes, strict=False) if not failure]
    wrong = [w for w, matches in judged if not matches]
    if not wrong:
        return warnings
    if len(wrong) == len(judged):
        warnings.append(
            "the audio does not say the captions' words (another video?): marks read from the text alone"
        )
    else:
        warnings.append(
            f"the audio does not say the captions' words in {len(wrong)} of {counted(len(judged), 'stretch')} "
            f"(from {clock(wrong[0].start)}): marks read from the text alone there"
        )
    return warnings


def counted(count: int, noun: str) -> str:
    if count != 1:
        noun += "es" if noun.endswith("ch") else "s"
    return f"{count} {noun}"


def clock(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}:{rest:02d}"
