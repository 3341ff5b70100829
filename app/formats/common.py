"""What the SRT and WebVTT readers and writers share: building cues, timing checks, rendering."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

from app.core.model import Cue, Document
from app.formats.cuetext import tokenize

#: A cue block's text and the blank lines after it (SRT and SBV blocks).
TEXT_AND_SPACING = re.compile(r"(.*?)((?:[ \t]*\n)*)", re.DOTALL)


def clock_millis(hours: str, minutes: str, seconds: str, fraction: str | None) -> int | None:
    """Milliseconds of a timestamp's parts as written ("1", "02", "03", "5" -> 3723500); None
    where minutes or seconds run past 59."""
    if int(minutes) > 59 or int(seconds) > 59:
        return None
    millis = int((fraction or "0").ljust(3, "0"))
    return ((int(hours) * 60 + int(minutes)) * 60 + int(seconds)) * 1000 + millis


@dataclass(frozen=True)
class AsWritten:
    """The file's text around a cue, kept so an untouched cue writes back as read (the ``Cue``
    fields of the same names): its SRT number or VTT identifier line, its settings, its timing line
    and what follows its text up to the next cue."""

    identifier: str | None = None
    settings: str = ""
    timing_line: str | None = None
    after_text: str | None = None


def make_cue(
    index: int | None,
    start: int,
    end: int,
    text: str,
    written: AsWritten = AsWritten(),
    *,
    timed: bool = True,
    ass_escapes: bool = False,
) -> Cue:
    words, layout = tokenize(text, start, end, ass_escapes)
    if timed and len(words) == 1 and words[0].start is None:
        # A one-word cue (word-level captions, or a lone "yes") times its word.
        words[0] = replace(words[0], start=start, end=end)
    return Cue(index, start, end, words, text, layout, **asdict(written))


def timing_warnings(cues: list[Cue], lines: list[int]) -> list[str]:
    """Odd timings load as they are, but the editor should know of them."""
    warnings = []
    previous_end: int | None = None
    for cue, line in zip(cues, lines, strict=True):
        if cue.end < cue.start:
            warnings.append(f"line {line}: cue ends before it starts")
        elif cue.end == cue.start:
            warnings.append(f"line {line}: cue has zero duration")
        if previous_end is not None and cue.start < previous_end:
            warnings.append(f"line {line}: cue overlaps the one before")
        previous_end = cue.end if previous_end is None else max(previous_end, cue.end)
    return warnings


def render(document: Document, head: Callable[[Cue], str], default_after: str) -> str:
    """The document's text with ``\\n`` line ends: preamble, each cue's head, text and spacing."""
    parts = [document.preamble]
    last = len(document.cues) - 1
    for number, cue in enumerate(document.cues):
        after = cue.after_text
        if after is None:
            after = "\n" if number == last else default_after
        parts += [head(cue), cue.text(), after]
    parts.append(document.trailer)
    return "".join(parts)


def cue_head(
    label: object,
    cue: Cue,
    as_read: bool,
    format_time: Callable[[int], str],
    style: Callable[[int, int], str] | None = None,
) -> str:
    """A cue's label line (when it has one) and its timing line: the line as read where the
    document came in this format, else written as the document writes its own (``style``, from
    ``timing_style``) or afresh with the format's ``format_time``."""
    timing = cue.timing_line if as_read else None
    if timing is None and as_read and style is not None and not cue.settings:
        timing = style(cue.start, cue.end)
    if timing is None:
        timing = f"{format_time(cue.start)} --> {format_time(cue.end)}"
        if cue.settings:
            timing += " " + cue.settings
        timing += "\n"
    return (f"{label}\n" if label is not None else "") + timing


def render_timed(
    document: Document, as_read: bool, label: Callable[[Cue], object], format_time: Callable[[int], str]
) -> str:
    """SRT or WebVTT text: each cue under its ``label`` line (None: none) and timing line, as
    ``cue_head`` writes them (``as_read``: the document came in this format)."""
    style = timing_style(document) if as_read else None
    return render(document, lambda cue: cue_head(label(cue), cue, as_read, format_time, style), "\n\n")


#: A timing line written as the standard writes it, but for the spacing, the digits of the hours
#: (which WebVTT may leave out) and the separator before the milliseconds.
_TIMING = re.compile(r"([ \t]*)(?:(\d+):)?(\d\d):(\d\d)([,.])(\d\d\d)([ \t]*-->[ \t]*)\S+[ \t]*\n?")


def timing_example(cues: Sequence[Cue]) -> str | None:
    """The first timing line of ``cues`` written plainly (no cue settings), as ``timing_style``
    reads it; None when there is none."""
    return next(
        (c.timing_line for c in cues if not c.settings and _TIMING.fullmatch(c.timing_line or "")), None
    )


def timing_style(document: Document) -> Callable[[int, int], str] | None:
    """How the document writes a timing line, as a function of a cue's times, for cues it did not
    read (a re-cut's new cues); None when no line reads plainly (the writer's own style then)."""
    match = _TIMING.fullmatch(document.timing_example or "")
    if match is None or (document.format == "srt" and match.group(2) is None):
        return None
    indent, hours, _, _, separator, _, arrow = match.groups()
    hour_digits = len(hours) if hours is not None else 0
    return lambda start, end: (
        f"{indent}{clock(start, hour_digits, separator)}{arrow}{clock(end, hour_digits, separator)}\n"
    )


def clock(millis: int, hour_digits: int, separator: str) -> str:
    """``millis`` as a timestamp with hours of ``hour_digits`` digits (left out at 0 when the file
    leaves them out, as WebVTT may) and ``separator`` before the milliseconds."""
    hour, rest = divmod(millis, 3_600_000)
    minute, rest = divmod(rest, 60_000)
    second, fraction = divmod(rest, 1000)
    head = f"{hour:0{hour_digits}d}:" if hour_digits or hour else ""
    return f"{head}{minute:02d}:{second:02d}{separator}{fraction:03d}"
