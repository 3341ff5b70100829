"""Word timings from a recogniser's timing file, attached to the caption words they belong to.

The timing file and the captions come from the same recognition but may differ in places (the
captions were edited, numbers written differently), so the two word lists are aligned by minimum
edit distance and only aligned words take times. A caption word left without one, between two
timed words of its cue, gets a share of the time between them; a cue with no timed word keeps none
(its words are then placed by speech activity when there is audio).
"""

from __future__ import annotations

from dataclasses import replace

from app.align.alignment import align
from app.align.normalize import tokens
from app.core.model import Document, Word, first_words


def attach_timings(document: Document, timed: list[Word], language: str = "en") -> dict[str, int]:
    """Give the document's words start and end times from ``timed``; returns counts."""
    words = list(document.words())
    caption_keys = [" ".join(tokens(w.text, language)) or w.text.lower() for w in words]
    timed_keys = [" ".join(tokens(w.text, language)) or w.text.lower() for w in timed]
    alignment = align(caption_keys, timed_keys)
    times: list[tuple[int, int] | None] = [None] * len(words)
    for index, counterpart in enumerate(alignment.hyp_to_ref):
        if counterpart >= 0:
            start, end = timed[counterpart].start, timed[counterpart].end
            if start is not None and end is not None:
                times[index] = (start, end)
    aligned = sum(1 for t in times if t is not None)
    filled = 0
    for first, cue in zip(first_words(document.cues), document.cues, strict=True):
        span = range(first, first + len(cue.words))
        known = [i for i in span if times[i] is not None]
        if not known:
            continue
        filled += _fill(times, span, cue.start, cue.end)
        for i in span:
            start, end = times[i]  # type: ignore[misc]
            document.put_word(i, replace(document.word(i), start=start, end=end))
    return {"words": len(words), "aligned": aligned, "interpolated": filled, "timed_words": len(timed)}


def _fill(times: list[tuple[int, int] | None], span: range, cue_start: int, cue_end: int) -> int:
    """Spread the untimed words of a cue over the time between their timed neighbours."""
    filled = 0
    i = span.start
    while i < span.stop:
        if times[i] is not None:
            i += 1
            continue
        run_end = i
        while run_end < span.stop and times[run_end] is None:
            run_end += 1
        before = times[i - 1][1] if i > span.start and times[i - 1] else cue_start  # type: ignore[index]
        after = times[run_end][0] if run_end < span.stop and times[run_end] else cue_end  # type: ignore[index]
        after = max(after, before)
        step = (after - before) / (run_end - i)
        for k in range(i, run_end):
            times[k] = (round(before + (k - i) * step), round(before + (k - i + 1) * step))
            filled += 1
        i = run_end
    return filled
