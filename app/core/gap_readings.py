"""What the model's readers said at every gap of a file, kept so that the gaps can be read again
later (``app.ml.house_style``) without running the model: a person's decisions teach the style, and
the gaps nobody has decided yet are re-read with it.

One ``GapReading`` per word, in document order, kept with the file's results in the project.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from app.core.errors import PunctumError
from app.core.marks import MODEL_MARKS


class GapReadingsError(PunctumError):
    pass


@dataclass(frozen=True)
class GapReading:
    """The gap after one word: the combined mark distribution (``MODEL_MARKS`` order), the text
    model's, the recogniser's (None where it did not hear the gap), the pause as the model reads
    it (None without timing) and whether the word ends its cue."""

    combined: tuple[float, ...]
    read: tuple[float, ...]
    heard: tuple[float, ...] | None = None
    pause: float | None = None
    cue_end: bool = False


def _distribution(values: object) -> tuple[float, ...]:
    if not isinstance(values, list) or len(values) != len(MODEL_MARKS):
        raise GapReadingsError(f"a distribution of {len(MODEL_MARKS)} marks was expected")
    numbers = tuple(float(v) for v in values)
    if not all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in numbers):
        raise GapReadingsError("a distribution holds a value outside 0 to 1")
    return numbers


def readings_json(readings: Sequence[GapReading] | None) -> str | None:
    """The readings as one compact JSON list (probabilities to 4 places), as ``parse_readings``
    reads them back."""
    if readings is None:
        return None

    def rounded(values: Sequence[float] | None) -> list[float] | None:
        return None if values is None else [round(float(v), 4) for v in values]

    return json.dumps(
        [[rounded(r.combined), rounded(r.read), rounded(r.heard), r.pause, int(r.cue_end)] for r in readings],
        separators=(",", ":"),
    )


def parse_readings(text: str) -> list[GapReading]:
    """The readings ``readings_json`` wrote; ``GapReadingsError`` for anything else."""
    try:
        rows = json.loads(text)
        if not isinstance(rows, list):
            raise GapReadingsError("not a list")
        return [
            GapReading(
                _distribution(combined),
                _distribution(read),
                None if heard is None else _distribution(heard),
                None if pause is None else float(pause),
                bool(cue_end),
            )
            for combined, read, heard, pause, cue_end in rows
        ]
    except (ValueError, TypeError) as error:
        raise GapReadingsError(f"the gaps' readings are malformed ({error})") from None
