"""The caption limits, and the checks an editor watches while punctuating against them.

One set of limits serves every part that lays out or judges cues: the editor's checks and its
Settings, ``check``, re-breaking lines and re-cutting cues. Marks add characters, so accepting
suggestions can push a cue over a limit; the editor shows these live. Counts are of what a viewer
reads: styling tags are left out, line breaks are not characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.core.model import Cue

_TAG = re.compile(r"<[^>]*>|\{\\[^}]*\}")


@dataclass(frozen=True)
class CaptionLimits:
    """The limits a cue keeps to. The defaults are those of streaming services' English style
    guides (Netflix's English timed-text style guide: 42 characters a line, 2 lines, 17 characters
    a second, 5/6 s to 7 s on screen, 2 frames between cues, a cue staying up to 12 frames after
    its speech); every one can be changed in the editor's Settings and on the command line."""

    max_line_chars: int = 42
    max_lines: int = 2
    #: Characters (spaces included) a viewer is given a second to read, where the words' times
    #: leave room for it; None leaves reading speed to the other limits.
    max_cps: float | None = 17.0
    min_ms: int = 833
    max_ms: int = 7000
    #: The least time from one cue's end to the next one's start (2 frames at 24 fps is 84 ms).
    min_gap_ms: int = 84
    #: How long a cue cut from timed words stays up after its last word is said, where the next
    #: cue leaves room (12 frames at 24 fps); reading speed and the shortest duration may keep it
    #: up longer.
    linger_ms: int = 500
    #: What starts each line of a cue two speakers share, where a re-cut cannot keep them apart
    #: (``SPEAKER_DASHES``); "" (the default, as in styles that mark no speakers): each speaker
    #: still starts a line of their own, with nothing before it.
    speaker_dash: str = ""

    def __post_init__(self) -> None:
        if self.max_line_chars < 1 or self.max_lines < 1 or self.max_ms < 1:
            raise ValueError("a cue needs room for one character, one line and one millisecond")
        if min(self.min_ms, self.min_gap_ms, self.linger_ms) < 0:
            raise ValueError("durations cannot be negative")
        if self.max_cps is not None and not self.max_cps > 0:
            raise ValueError("a reading speed must be positive")
        if self.min_ms > self.max_ms:
            raise ValueError("a cue's shortest duration cannot exceed its longest")
        if self.speaker_dash not in SPEAKER_DASHES.values():
            raise ValueError(f"a speaker's line starts with one of {', '.join(SPEAKER_DASHES)}")


#: The dashes style guides start a speaker's line with, by name: Netflix's English guide writes a
#: hyphen with no space ("-Really?"); other guides write a hyphen, or an en dash, and a space.
SPEAKER_DASHES = {"none": "", "hyphen": "-", "hyphen-space": "- ", "en-dash": "\u2013 "}


#: The limits a cue keeps to unless a person sets others.
STYLE_GUIDE_LIMITS = CaptionLimits()


@dataclass(frozen=True)
class CueCheck:
    cps: float
    longest_line: int
    lines: int
    problems: tuple[str, ...]
    #: Which limits the problems are of, by ``CutChecks``' names: "over_speed", "over_duration",
    #: "over_lines", "short_gaps" (the re-cut's summary counts them so).
    over: frozenset[str] = frozenset()

    @property
    def ok(self) -> bool:
        return not self.problems


def visible_lines(cue: Cue) -> list[str]:
    text = _TAG.sub("", cue.text()).replace("&nbsp;", " ").replace("&amp;", "&")
    text = text.replace("&lt;", "<").replace("&gt;", ">")
    return [line.strip() for line in text.splitlines() if line.strip()]


def longest_breakable(lines: list[str]) -> int:
    """The longest of ``lines`` that holds more than one word (0 for none): one word longer than a
    line may go over the limit alone, as nothing could break it."""
    return max((len(line) for line in lines if len(line.split()) > 1), default=0)


def check_cue(cue: Cue, limits: CaptionLimits, following: Cue | None = None) -> CueCheck:
    """What a viewer would find over ``limits`` in ``cue``: its reading speed, time on screen,
    lines and, given the ``following`` cue, the gap before it (a re-cut sets the gaps; the
    editor's own checks leave them to the file's timings, which Punctum never moves)."""
    lines = visible_lines(cue)
    characters = sum(len(line) for line in lines)
    seconds = cue.duration / 1000
    cps = characters / seconds if seconds > 0 else float("inf") if characters else 0.0
    longest = max((len(line) for line in lines), default=0)
    problems: list[tuple[str, str]] = []  # (the limit, what a viewer finds)
    if seconds <= 0 and characters:
        # No reading time at all: say so rather than print an infinite rate.
        shown_for = "no time" if seconds == 0 else "a negative time"
        problems.append(("over_speed", f"{characters} characters shown for {shown_for}"))
    elif limits.max_cps is not None and cps > limits.max_cps:
        problems.append(("over_speed", f"{cps:.1f} characters per second (limit {limits.max_cps:g})"))
    if characters and seconds > 0 and not limits.min_ms <= cue.duration <= limits.max_ms:
        bound = (
            f"at least {limits.min_ms / 1000:g}"
            if cue.duration < limits.min_ms
            else f"at most {limits.max_ms / 1000:g}"
        )
        problems.append(("over_duration", f"on screen {seconds:.2f} s ({bound} s)"))
    if (too_long := longest_breakable(lines)) > limits.max_line_chars:
        problems.append(("over_lines", f"a line of {too_long} characters (limit {limits.max_line_chars})"))
    if len(lines) > limits.max_lines:
        problems.append(("over_lines", f"{len(lines)} lines (limit {limits.max_lines})"))
    if following is not None and following.start - cue.end < limits.min_gap_ms:
        gap = following.start - cue.end
        problems.append(
            (
                "short_gaps",
                f"overlaps the next cue by {-gap} ms"
                if gap < 0
                else f"{gap} ms before the next cue (at least {limits.min_gap_ms})",
            )
        )
    rate = round(cps, 1) if cps != float("inf") else cps
    return CueCheck(
        rate, longest, len(lines), tuple(text for _, text in problems), frozenset(k for k, _ in problems)
    )
