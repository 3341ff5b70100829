"""Gap evidence for training and evaluation corpora. The vector itself is defined in
``app.core.gap_features`` and computed by ``app.audio.gap_features``; the model's runtime reads the
vectors it is given and never the media."""

from __future__ import annotations

from collections.abc import Sequence

from app.audio.gap_features import timed_gaps as timed_gaps
from app.core.gap_features import FEATURES as FEATURES
from app.core.gap_features import SIZE as SIZE
from app.core.gap_features import TIMING_FEATURES as TIMING_FEATURES
from app.core.gap_features import GapVectors
from app.core.gap_features import restrict as restrict


def document_gaps(extras: dict[str, object], words: Sequence[str]) -> GapVectors | None:
    """Gap vectors of a labelled corpus document that carries them (synthesised speech) or word
    timings (Earnings-22), else None."""
    given = extras.get("gaps")
    if isinstance(given, list):
        return given
    starts, ends = extras.get("starts"), extras.get("ends")
    if not isinstance(starts, list) or not isinstance(ends, list):
        return None
    return timed_gaps(words, starts, ends)
