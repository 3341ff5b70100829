"""Gap feature vectors (``app.core.gap_features``) from captions' timings, a media's audio, or word
timings alone. A gap without any evidence is None, and the model puts a learned stand-in
("virtual") embedding there, so one model serves captions with audio, with timings only, and
plain text."""

from __future__ import annotations

import math
from collections.abc import Sequence

from app.audio.analysis import AudioTrack
from app.audio.prosody import GapProsody, gap_prosody
from app.audio.timing import TimingSource, WordTiming, word_timings
from app.core.gap_features import GapVectors
from app.core.model import Document


def gap_vector(gap: GapProsody | None) -> list[float] | None:
    """The model's input for one gap, or None when nothing is known about it."""
    if gap is None or gap.pause is None:
        return None
    return [
        math.log1p(10 * max(0.0, gap.pause)) / 3,
        1.0 if gap.pause >= 0.25 else 0.0,
        max(-2.0, min(2.0, gap.rate_change or 0.0)),
        max(-3.0, min(3.0, (gap.energy or 0.0) / 10)),
        max(-3.0, min(3.0, (gap.pitch_slope or 0.0) / 50)),
        1.0 if gap.heard else 0.0,
    ]


def caption_gaps(
    document: Document, track: AudioTrack | None
) -> tuple[GapVectors, list[GapProsody], list[WordTiming]]:
    """Gap vectors of captions from their own timings and, with a media's ``track``, its audio;
    with the prosody and word timings they came from."""
    timings = word_timings(document, track)
    gaps = gap_prosody([w.text for w in document.words()], timings, track)
    return [gap_vector(g) for g in gaps], gaps, timings


def timed_gaps(
    words: Sequence[str], starts: Sequence[float | None], ends: Sequence[float | None]
) -> GapVectors:
    """Gap vectors from word timings alone (no audio): pauses and speaking-rate changes."""
    timings = []
    for index in range(len(words)):
        start, end = starts[index], ends[index]
        following = starts[index + 1] if index + 1 < len(words) else None
        pause = max(0.0, following - end) if end is not None and following is not None else None
        source = TimingSource.GIVEN if start is not None else TimingSource.NONE
        timings.append(WordTiming(start, end, pause, source))
    return [gap_vector(gap) for gap in gap_prosody(list(words), timings, None)]
