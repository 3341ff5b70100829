"""Caption checks an editor watches while punctuating: reading speed and line layout.

Marks add characters, so accepting suggestions can push a cue over a limit; the editor shows these
live. Counts are of what a viewer reads: styling tags are left out, line breaks are not characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.core.model import Cue

_TAG = re.compile(r"<[^>]*>|\{\\[^}]*\}")


@dataclass(frozen=True)
class CaptionLimits:
    """Common broadcast limits; every one can be changed in the editor's settings."""

    max_cps: float = 17.0  # characters per second
    max_line_length: int = 42
    max_lines: int = 2


@dataclass(frozen=True)
class CueCheck:
    cps: float
    longest_line: int
    lines: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def visible_lines(cue: Cue) -> list[str]:
    text = _TAG.sub("", cue.text()).replace("&nbsp;", " ").replace("&amp;", "&")
    text = text.replace("&lt;", "<").replace("&gt;", ">")
    return [line.strip() for line in text.splitlines() if line.strip()]


def check_cue(cue: Cue, limits: CaptionLimits) -> CueCheck:
    lines = visible_lines(cue)
    characters = sum(len(line) for line in lines)
    seconds = cue.duration / 1000
    cps = characters / seconds if seconds > 0 else float("inf") if characters else 0.0
    longest = max((len(line) for line in lines), default=0)
    problems = []
    if seconds <= 0 and characters:
        # No reading time at all: say so rather than print an infinite rate.
        problems.append(
            f"{characters} characters shown for {'no time' if seconds == 0 else 'a negative time'}"
        )
    elif cps > limits.max_cps:
        problems.append(f"{cps:.1f} characters per second (limit {limits.max_cps:g})")
    if longest > limits.max_line_length:
        problems.append(f"a line of {longest} characters (limit {limits.max_line_length})")
    if len(lines) > limits.max_lines:
        problems.append(f"{len(lines)} lines (limit {limits.max_lines})")
    return CueCheck(round(cps, 1) if cps != float("inf") else cps, longest, len(lines), tuple(problems))
