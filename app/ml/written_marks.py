"""The captions' own marks as a third reading: where a file already carries punctuation (captions
Punctum transcribed, with the recogniser's marks, or any punctuated file), the mark written at a
gap is evidence beside the text model's and the listener's readings.

The readers' distribution gets a bonus on the class the captions write, ``log p'(c) = log p(c) +
b[w] [c = w]``, renormalised: ``b`` is one figure where the captions write no mark, one where they
write a mark. A file that carries almost no marks (ASR captions, a few marks typed by hand) says
nothing by its blank gaps, so it is read as before.

Why the bonus is large: on the development speech the recogniser's own marks on its own words
read above both readers (``tests/benchmarks/bench_own_marks.py``: 75.4 F1 on LJSpeech and 64.9
pooled over ``audio/real``, against 68.1 and 64.0 for its bare words punctuated with the media).
Chosen by F1 over both uses (with the media and without), every recording pooled: from a bonus
of (3, 6) on, F1 is the same (68.3; (2, 3) gives 67.4) and the written marks change at 5 gaps of
3,892 or fewer; (4, 6) is the smallest there at which no recording reads below its written marks.
Left out one recording at a time, every fold chose a bonus on that plateau. So the readers' doubts
about a written mark are suggestions only where they are overwhelming, and punctuating a
transcribed file never reads below its own marks there (docs/transcription.md, "Punctuating
captions that carry marks").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.ml.combination import PROBABILITY_FLOOR

#: The log-odds added to the class the captions write: where they write no mark, where they write one.
WRITTEN_MARK_BONUS = (4.0, 6.0)
#: A file carries marks when it has at least one every this many words (speech has one every 6 to
#: 12); fewer, and its blank gaps are not the writer's choice of no mark.
WORDS_PER_MARK = 25


def carries_marks(written: Sequence[int]) -> bool:
    """Whether a file whose gaps write the classes ``written`` (``MODEL_MARKS`` indices, per word)
    is punctuated: a mark at least every ``WORDS_PER_MARK`` words, and more than one (a lone
    "whammy!" in a line of ASR captions says nothing of the gaps around it)."""
    marks = sum(1 for c in written if c)
    return marks > 1 and marks * WORDS_PER_MARK >= len(written)


def with_written_marks(probabilities: Sequence[Sequence[float]], written: Sequence[int]) -> list[list[float]]:
    """Per gap, the readers' ``probabilities`` (gaps x ``MODEL_MARKS``) read with the class the
    captions write there (``written``, per gap)."""
    if not len(probabilities):
        return []
    logits = np.log(np.maximum(np.asarray(probabilities, dtype=np.float64), PROBABILITY_FLOOR))
    classes = np.asarray(written, dtype=int)
    no_mark, mark = WRITTEN_MARK_BONUS
    logits[np.arange(len(classes)), classes] += np.where(classes == 0, no_mark, mark)
    logits -= logits.max(axis=1, keepdims=True)
    weighed = np.exp(logits)
    weighed /= weighed.sum(axis=1, keepdims=True)
    result: list[list[float]] = weighed.tolist()
    return result
