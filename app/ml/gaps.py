"""Word-gap evidence as model input: what timings and audio say about each gap, as a small vector.

A gap without any evidence is marked absent and the model uses a learned stand-in ("virtual")
embedding there, so one model serves captions with audio, with timings only, and plain text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from app.audio.analysis import AudioTrack
from app.audio.prosody import GapProsody, gap_prosody
from app.audio.timing import TimingSource, WordTiming, word_timings
from app.core.model import Document

FEATURES = ("pause", "long_pause", "rate_change", "energy", "pitch_slope", "heard")
SIZE = len(FEATURES)
# What word timings alone give; loudness and pitch need heard (or synthesised) audio in training.
TIMING_FEATURES = FEATURES[:3]


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


def restrict(
    vectors: list[list[float] | None] | None, names: Sequence[str] | None
) -> list[list[float] | None] | None:
    """Only the features a model was trained with (``gap_inputs`` in its settings); the others are
    zeroed, as in its training data, rather than shown values it never learned to read."""
    if vectors is None or names is None:
        return vectors
    keep = [name in names for name in FEATURES]
    if all(keep):
        return vectors
    return [None if v is None else [x if k else 0.0 for x, k in zip(v, keep, strict=True)] for v in vectors]


def caption_gaps(
    document: Document, track: AudioTrack | None
) -> tuple[list[list[float] | None], list[GapProsody], list[WordTiming]]:
    """Gap vectors of captions from their own timings and, with a media's ``track``, its audio;
    with the prosody and word timings they came from."""
    timings = word_timings(document, track)
    gaps = gap_prosody([w.text for w in document.words()], timings, track)
    return [gap_vector(g) for g in gaps], gaps, timings


def document_gaps(extras: dict[str, object], words: Sequence[str]) -> list[list[float] | None] | None:
    """Gap vectors of a labelled corpus document that carries them (synthesised speech) or word
    timings (Earnings-22), else None."""
    given = extras.get("gaps")
    if isinstance(given, list):
        return given
    starts, ends = extras.get("starts"), extras.get("ends")
    if not isinstance(starts, list) or not isinstance(ends, list):
        return None
    return timed_gaps(words, starts, ends)


def timed_gaps(
    words: Sequence[str], starts: Sequence[float | None], ends: Sequence[float | None]
) -> list[list[float] | None]:
    """Gap vectors from word timings alone (no audio): pauses and speaking-rate changes."""
    timings = []
    for index in range(len(words)):
        start, end = starts[index], ends[index]
        following = starts[index + 1] if index + 1 < len(words) else None
        pause = None
        if end is not None and following is not None:
            pause = max(0.0, following - end)
        source = TimingSource.GIVEN if start is not None else TimingSource.NONE
        timings.append(WordTiming(start, end, pause, source))
    return [gap_vector(gap) for gap in gap_prosody(list(words), timings, None)]
