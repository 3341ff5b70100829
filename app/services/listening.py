"""The listener in a file's analysis: the recogniser forced along the captions' words, its reading
combined with the text model's at every gap it heard.

What cannot be heard keeps the text reading, with one warning each: audio with too little speech
in it, captions running past the end of the media, a language the recogniser lacks, and captions
the audio does not say at all (the wrong video: the forced words far less likely than speech that
matches them ever makes them).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from app.core.errors import PunctumError
from app.core.gap_features import GapMeasure
from app.core.model import Document
from app.ml.combination import shipped_combination
from app.ml.listener import Hearing, Listening
from app.services.gap_evidence import too_little_speech

if TYPE_CHECKING:
    from app.ml.listener import Listener

#: A lowercase word is written with a capital in the forced text above this casing probability.
_CAPITAL = 0.5


@dataclass
class Readings:
    """Per gap: the listener's distribution (None where not heard) and the one suggested from."""

    heard: list[list[float] | None]
    combined: list[list[float]]
    warnings: list[str] = field(default_factory=list)
    #: Per word: (start, end) in seconds where the recogniser heard it, else None.
    word_times: list[tuple[float, float] | None] = field(default_factory=list)
    past_the_end: str | None = None  # as ``Hearing.past_the_end``

    @property
    def any_heard(self) -> bool:
        return any(h is not None for h in self.heard)


class TextReading(Protocol):
    """What listening takes of the text model's reading (``suggestions.TextReading``)."""

    language: str | None
    marks: list[list[float]]
    casing: list[list[float]]


def listen(
    document: Document,
    reading: TextReading,
    track: Any,
    listener: Callable[[], Listener],
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    word_times: bool = True,
) -> Readings:
    """The listener's reading of ``document`` against the media's ``track`` (``AudioTrack`` with
    its samples), combined with the text model's ``reading`` (in its language, which it must
    have) by the shipped combination. ``listener`` gives the loaded recogniser: it is loaded only
    when there is something to hear. ``word_times``: whether it also places each word in the
    audio (an eighth more time)."""
    assert reading.language is not None, "the text reading's language decides what is heard"
    combination, language, casing = shipped_combination(), reading.language, reading.casing
    text = [list(row) for row in reading.marks]
    unheard = Readings([None] * len(text), text)
    if track is None or track.samples is None or not len(track.samples):
        return unheard
    too_little = too_little_speech(document, track)
    if too_little is not None:
        unheard.warnings.append(too_little)
        return unheard
    cues = [number for number, cue in enumerate(document.cues) for _ in cue.words]
    # A word's own time where the captions or a timing file give it, else its cue's.
    times = [
        (word.start / 1000, word.end / 1000)
        if word.start is not None and word.end is not None and word.end >= word.start
        else (cue.start / 1000, cue.end / 1000)
        for cue in document.cues
        for word in cue.words
    ]
    try:
        loaded = listener()
    except PunctumError as error:  # no recogniser installed: the text reading, said once
        unheard.warnings.append(f"the audio was not listened to: {error}")
        return unheard
    listening = Listening(
        [unicodedata.normalize("NFC", w.text) for w in document.words()],
        times,
        cues,
        language,
        capitals=[row[1] + row[2] > _CAPITAL for row in casing],
        first_marks=[int(np.argmax(row)) for row in text],
        read=text,
        combination=combination,
    )
    hearing: Hearing = loaded.read(
        listening,
        np.asarray(track.samples),
        progress=progress,
        cancelled=cancelled,
        word_times=word_times,
    )
    combined = combination.combine_heard(text, hearing.marks).tolist()
    return Readings(hearing.marks, combined, hearing.warnings, list(hearing.word_times), hearing.past_the_end)


def with_heard_times(
    measures: list[GapMeasure], document: Document, word_times: Sequence[tuple[float, float] | None]
) -> list[GapMeasure]:
    """``measures`` with each word's start and end as heard, where it was heard; the captions'
    own word times (a VTT's inline times, a timing file) win over what was heard."""
    result = list(measures)
    for index, word in zip(range(len(result)), document.words(), strict=False):
        heard = word_times[index] if index < len(word_times) else None
        if word.start is not None and word.end is not None:
            result[index] = replace(result[index], start_ms=word.start, end_ms=word.end)
        elif heard is not None:
            result[index] = replace(
                result[index], start_ms=round(heard[0] * 1000), end_ms=round(heard[1] * 1000)
            )
    return result
