"""When each word was spoken and how long the pause after it lasts.

Timings come, in order of preference, from the captions themselves (VTT inline timestamps, or an
ASR timing file mapped onto the words), from the audio (speech activity inside each cue, words
spread over the speech by their length, boundaries snapped to the silences), or not at all. Every
gap records how its pause was obtained, so suggestions can say which evidence they used.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from app.audio.analysis import AudioTrack, silent_runs
from app.audio.vad import VAD_FRAME
from app.core.audio_format import SAMPLE_RATE
from app.core.model import Document, Word

FRAME = VAD_FRAME / SAMPLE_RATE  # seconds per speech-activity frame
MIN_SILENCE = 0.1  # shorter dips in speech activity are stops and breaths inside words
# Subtitle timing closes gaps shorter than about half a second between cues ("chaining"), and ASR
# captions often let cues touch, so a short gap between two cues says nothing about a pause.
CHAINED_CUE_GAP = 0.5


class TimingSource(enum.StrEnum):
    GIVEN = "given"
    ESTIMATED = "estimated"
    NONE = "none"


@dataclass(frozen=True)
class WordTiming:
    start: float | None  # seconds
    end: float | None
    pause_after: float | None  # seconds of silence before the next word; None if unknown
    source: TimingSource


def word_timings(document: Document, track: AudioTrack | None = None) -> list[WordTiming]:
    """One timing per word of the document, in reading order."""
    timings: list[WordTiming] = []
    for cue in document.cues:
        if not cue.words:
            continue
        start, end = cue.start / 1000, cue.end / 1000
        if all(w.start is not None for w in cue.words):
            timings.extend(_given(cue.words, end, track))
        elif track is not None:
            timings.extend(_estimated(cue.words, start, end, track))
        else:
            timings.extend(
                WordTiming(
                    start if i == 0 else None,
                    end if i == len(cue.words) - 1 else None,
                    None,
                    TimingSource.NONE,
                )
                for i in range(len(cue.words))
            )
    return _link_cues(timings, track)


def _given(words: list[Word], cue_end: float, track: AudioTrack | None) -> list[WordTiming]:
    starts = [float(w.start) / 1000 for w in words if w.start is not None]
    result = []
    for index, word in enumerate(words):
        begin = starts[index]
        following = starts[index + 1] if index + 1 < len(words) else None
        finish = (
            word.end / 1000 if word.end is not None else (following if following is not None else cue_end)
        )
        pause = None
        if following is not None:
            if track is not None:
                # Inline timestamps give starts only; the audio says how much of the span is silence.
                pause = _trailing_silence(track, begin, following)
            else:
                pause = max(0.0, following - finish)
        result.append(WordTiming(begin, finish, pause, TimingSource.GIVEN))
    return result


def _trailing_silence(track: AudioTrack, start: float, end: float) -> float:
    """The pause after a word spoken from ``start``, when the next begins at ``end``: the longest
    silence between the two (timestamps are approximate, so the next word's onset may already be
    inside the span; a silence inside a single word is rarely this long)."""
    flags = track.speaking(start, end)
    if flags.size == 0:
        return 0.0
    longest = max((stop - first for first, stop in silent_runs(flags)), default=0) * FRAME
    return longest if longest >= MIN_SILENCE else 0.0


def _estimated(words: list[Word], start: float, end: float, track: AudioTrack) -> list[WordTiming]:
    """Spread the words over the cue's speech by length; silences become pauses at the nearest gap."""
    count = len(words)
    flags = track.speaking(start, end)
    if not flags.any():
        step = (end - start) / count
        return [
            WordTiming(start + i * step, start + (i + 1) * step, None, TimingSource.ESTIMATED)
            for i in range(count)
        ]
    # Dips shorter than MIN_SILENCE are part of the speech (stops, breaths).
    speaking = flags.copy()
    silences = []
    for first, stop in silent_runs(flags):
        if (stop - first) * FRAME < MIN_SILENCE:
            speaking[first:stop] = True
        else:
            silences.append((first, stop))
    speech_frames = np.flatnonzero(speaking)  # clock frame of each speech position
    total = speech_frames.size
    weights = np.array([len(w.text) + 2 for w in words], dtype=float)
    boundaries = np.cumsum(weights)[:-1] / weights.sum() * total  # speech positions
    pauses: list[float | None] = [0.0] * (count - 1) + [None]
    taken: set[int] = set()
    mean_word = total / count
    for first, stop in silences:
        position = int(np.searchsorted(speech_frames, first))  # speech frames before the silence
        if count < 2 or position in (0, total):
            continue  # before the first word or after the last: the gap to the next cue
        nearest = int(np.argmin(np.abs(boundaries - position)))
        if nearest not in taken and abs(boundaries[nearest] - position) <= mean_word:
            taken.add(nearest)
            boundaries[nearest] = position
            pauses[nearest] = (stop - first) * FRAME
    edges = [0, *np.round(boundaries).astype(int).tolist(), total]
    timings = []
    for index in range(count):
        low = min(max(edges[index], 0), total - 1)
        high = min(max(edges[index + 1] - 1, low), total - 1)
        timings.append(
            WordTiming(
                start + float(speech_frames[low]) * FRAME,
                start + float(speech_frames[high] + 1) * FRAME,
                pauses[index],
                TimingSource.ESTIMATED,
            )
        )
    return timings


def _link_cues(timings: list[WordTiming], track: AudioTrack | None) -> list[WordTiming]:
    """Fill the pause after each cue's last word from the next cue's first word (left unknown when
    only the cue edges are known and they nearly touch)."""
    linked = list(timings)
    for index in range(len(linked) - 1):
        current, following = linked[index], linked[index + 1]
        if current.pause_after is not None or current.end is None or following.start is None:
            continue
        if track is not None and current.start is not None:
            pause = _trailing_silence(track, current.start, following.start)
        elif track is not None:
            pause = track.silence_between(current.end, following.start)
        else:
            gap = following.start - current.end
            if TimingSource.NONE in (current.source, following.source) and gap < CHAINED_CUE_GAP:
                continue  # cue edges this close are layout, not a measured pause
            pause = max(0.0, gap)
        source = current.source if current.source != TimingSource.NONE else TimingSource.GIVEN
        linked[index] = WordTiming(current.start, current.end, pause, source)
    return linked
