"""Plain text (.txt): a transcript without timings, one cue per non-blank line."""

from __future__ import annotations

import re

from app.core.model import Cue, Document
from app.formats.common import AsWritten, make_cue, render

_LINE = re.compile(r"[^\n]*\S[^\n]*")


def read(text: str) -> tuple[list[Cue], str]:
    """Cues (all at time zero) and the blank text before the first line."""
    matches = list(_LINE.finditer(text))
    after_ends = [*(match.start() for match in matches[1:]), len(text)]
    cues = [
        make_cue(None, 0, 0, match.group(), AsWritten(after_text=text[match.end() : after_end]), timed=False)
        for match, after_end in zip(matches, after_ends, strict=False)
    ]
    preamble = text[: matches[0].start()] if matches else text
    return cues, preamble


def write(document: Document) -> str:
    if document.format != "txt":
        document = Document(
            [Cue(c.index, c.start, c.end, c.words, c.original_text, c.layout) for c in document.cues],
            "txt",
        )
    return render(document, lambda cue: "", "\n")
