"""Gap evidence for training and evaluation corpora. The vector itself is defined in
``app.core.evidence`` and computed by ``app.audio.evidence``; the model's runtime reads the
vectors it is given and never the media."""

from __future__ import annotations

from collections.abc import Sequence

from app.audio.evidence import timed_gaps as timed_gaps
from app.core.evidence import FEATURES as FEATURES
from app.core.evidence import SIZE as SIZE
from app.core.evidence import TIMING_FEATURES as TIMING_FEATURES
from app.core.evidence import GapVectors
from app.core.evidence import restrict as restrict


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
