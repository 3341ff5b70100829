"""What the voice does at each word gap: pause, change of speaking rate, loudness and pitch slope.

A falling pitch and a long pause end statements; a rising pitch over the last word marks many
questions; a slower last word (final lengthening) comes before sentence and clause ends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from app.audio.analysis import AudioTrack
from app.audio.timing import TimingSource, WordTiming

RATE_CONTEXT = 5  # words before the gap whose mean speaking rate the last word is compared with


@dataclass(frozen=True)
class GapProsody:
    """Evidence about the gap after one word; None where it cannot be measured."""

    pause: float | None  # seconds
    timing: TimingSource
    rate_change: float | None = None  # log of (last word's characters per second / recent mean)
    energy: float | None = None  # dB of the last word relative to the recent words
    pitch_slope: float | None = None  # semitones per second over the last word's voiced frames
    pitch_change: float | None = None  # semitones over those frames (the slope times their span)

    @property
    def heard(self) -> bool:
        return self.energy is not None


def gap_prosody(words: list[str], timings: list[WordTiming], track: AudioTrack | None) -> list[GapProsody]:
    """One entry per word: the gap after it."""
    rates = [_rate(word, timing) for word, timing in zip(words, timings, strict=True)]
    levels = [_level(track, t) if track is not None else None for t in timings]
    result = []
    for index, timing in enumerate(timings):
        recent = [r for r in rates[max(0, index - RATE_CONTEXT) : index] if r is not None]
        rate, level = rates[index], levels[index]
        rate_change = math.log(rate / (sum(recent) / len(recent))) if rate is not None and recent else None
        recent_levels = [v for v in levels[max(0, index - RATE_CONTEXT) : index] if v is not None]
        energy = None
        if level is not None:
            energy = level - (sum(recent_levels) / len(recent_levels) if recent_levels else level)
        slope, change = _pitch_movement(track, timing) if track is not None else (None, None)
        result.append(GapProsody(timing.pause_after, timing.source, rate_change, energy, slope, change))
    return result


def _rate(word: str, timing: WordTiming) -> float | None:
    if timing.start is None or timing.end is None or timing.end - timing.start < 0.03:
        return None
    return (len(word) + 1) / (timing.end - timing.start)


def _level(track: AudioTrack, timing: WordTiming) -> float | None:
    if timing.start is None or timing.end is None:
        return None
    frames = track.frames(track.energy_db, timing.start, timing.end)
    return float(frames.mean()) if frames.size else None


def _pitch_movement(track: AudioTrack, timing: WordTiming) -> tuple[float | None, float | None]:
    """Least-squares slope of the pitch (semitones per second) over the word's voiced frames, and
    the semitones that line rises from the first voiced frame to the last; None for a word with
    fewer than 4 voiced frames, too short a track to tell."""
    if timing.start is None or timing.end is None:
        return None, None
    f0 = track.frames(track.f0, timing.start, timing.end)
    voiced = np.flatnonzero(~np.isnan(f0))
    if voiced.size < 4:
        return None, None
    semitones = 12 * np.log2(f0[voiced] / 100.0)
    seconds = voiced * 0.01
    slope = float(np.clip(np.polyfit(seconds, semitones, 1)[0], -200, 200))
    return slope, slope * float(seconds[-1] - seconds[0])
