"""Opening caption files and describing them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.core.checks import SPEAKER_DASHES as SPEAKER_DASHES
from app.core.checks import STYLE_GUIDE_LIMITS as STYLE_GUIDE_LIMITS
from app.core.checks import CaptionLimits as CaptionLimits
from app.core.model import Document
from app.formats import read_document, render_document

#: The command line reads captions and writes them out as text through these (it may not
#: import ``app.formats`` itself).
open_document = read_document
render = render_document


def left_out_writing(document: Document, path: Path) -> list[str]:
    """What writing ``document`` to ``path``, in the format its name says, leaves out: a line a
    cue (``formats.conversion``); none where the format is the document's own."""
    from app.formats import format_of
    from app.formats.conversion import left_out

    return left_out(document, format_of(path))


_LINE_ENDING_NAMES = {"\n": "LF", "\r\n": "CRLF", "\r": "CR"}


def attach_timing_file(document: Document, path: Path, language: str = "en") -> dict[str, int]:
    """Word times from a recogniser's CTM or JSON word list, for the words that match the captions."""
    from app.align.timings import attach_timings
    from app.formats.timings import read_timings

    return attach_timings(document, read_timings(path), language)


@dataclass(frozen=True)
class Summary:
    path: str
    format: str
    encoding: str
    bom: bool
    line_endings: str
    cues: int
    words: int
    duration_ms: int
    timed_words: int
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def summarize(document: Document) -> Summary:
    return Summary(
        path=str(document.source_path) if document.source_path else "",
        format=document.format,
        encoding=document.encoding,
        bom=document.bom,
        line_endings=_LINE_ENDING_NAMES[document.line_ending],
        cues=len(document.cues),
        words=document.word_count,
        duration_ms=document.duration,
        timed_words=sum(1 for word in document.words() if word.start is not None),
        warnings=list(document.warnings),
    )


def format_duration(millis: int) -> str:
    seconds, millis = divmod(millis, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}.{millis:03d}"


def caption_limits(**given: float) -> CaptionLimits:
    """The style guides' caption limits (``STYLE_GUIDE_LIMITS``) with ``given`` ones changed; a
    ``ValueError`` says what cannot hold."""
    return dataclasses.replace(STYLE_GUIDE_LIMITS, **given)  # type: ignore[arg-type]


def cues_over_limits(document: Document, limits: CaptionLimits) -> list[tuple[int, int, list[str]]]:
    """(cue number, start in ms, problems) of each cue over the caption limits."""
    from app.core.checks import check_cue

    return [
        (number, cue.start, list(problems))
        for number, cue in enumerate(document.cues, start=1)
        if (problems := check_cue(cue, limits).problems)
    ]


def save_together(
    document: Document | None, path: Path | str | None, texts: Sequence[tuple[Path, str]]
) -> None:
    """``document`` as ``formats.write_document`` writes it (when ``path`` is given) and ``texts`` as UTF-8,
    all landing together or none: a report never describes captions a full disk kept from being
    written."""
    from app.formats import document_bytes, write_files

    files = [(Path(name), text.encode()) for name, text in texts]
    if document is not None and path is not None:
        files.insert(0, (Path(path), document_bytes(document, path)))
    write_files(files)
