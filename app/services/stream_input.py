"""The input of ``punctum stream``: lines of JSON read off a byte stream within a size limit and
parsed into words with their times. A line that cannot be read is a ``StreamInputError``, and the
stream goes on without it."""

from __future__ import annotations

import contextlib
import json
import math
import queue
import re
from typing import IO, Any

from app.core.errors import PunctumError


class StreamInputError(PunctumError):
    """A line or word of the stream that cannot be read; the stream goes on without it."""


#: The most one input line may hold: a recogniser's segment is a few dozen words. Longer lines are
#: refused (one warning) rather than read: their words would all wait for one model run.
MAX_LINE_BYTES = 1_000_000
MAX_LINE_WORDS = 10_000
#: JSON nested deeper than this is refused before it is parsed (a word needs two levels).
MAX_NESTING = 32


def parse_line(line: str) -> list[tuple[str, float | None, float | None]]:
    """The words of one input line, which are read together: ``{"word": ..., "start": s, "end":
    s}`` (times in seconds, optional), a JSON list of those (a recogniser's segment), or a JSON
    string of words without times."""
    if _nesting(line) > MAX_NESTING:
        raise StreamInputError(f"JSON nested more than {MAX_NESTING} deep")
    try:
        item = json.loads(line)
    except json.JSONDecodeError as error:
        raise StreamInputError(f"not JSON ({error.msg})") from None
    except (ValueError, RecursionError) as error:  # e.g. an integer of thousands of digits
        raise StreamInputError(f"not readable JSON ({str(error).split(';')[0]})") from None
    words: list[tuple[str, float | None, float | None]]
    if isinstance(item, str):
        words = [(_text(word), None, None) for word in item.split()]
        if not words:
            raise StreamInputError("an empty string: no word")
    elif isinstance(item, list) and item:
        words = [word for element in item for word in _timed_word(element)]
    else:
        words = _timed_word(item)
    if len(words) > MAX_LINE_WORDS:
        raise StreamInputError(
            f"{len(words):,} words in one line, more than {MAX_LINE_WORDS:,}; send a segment per line"
        )
    return words


def _nesting(line: str) -> int:
    """How deep the line's brackets go, strings left out: cheap, and safe on any input."""
    depth = deepest = 0
    for bracket in re.findall(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', line):
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif bracket in "]}":
            depth -= 1
    return deepest


def _text(word: str) -> str:
    """A word that can be written out again: text with a lone surrogate (JSON "\\ud800") cannot."""
    try:
        word.encode("utf-8")
    except UnicodeEncodeError:
        raise StreamInputError(f"{json.dumps(word)} is not valid Unicode (a lone surrogate)") from None
    return word


def _timed_word(item: Any) -> list[tuple[str, float | None, float | None]]:
    if not isinstance(item, dict) or not isinstance(item.get("word"), str):
        raise StreamInputError(
            'give {"word": "...", "start": seconds, "end": seconds}, a list of them or a JSON string'
        )
    start, end = _seconds(item, "start"), _seconds(item, "end")
    if start is not None and end is not None and end < start:
        raise StreamInputError(f"end {end} is before start {start}")
    return [(_text(item["word"]), start, end)]


def _seconds(item: dict[str, Any], key: str) -> float | None:
    value = item.get(key)
    if value is None:
        return None
    refused = StreamInputError(f'"{key}" must be a number of seconds (0 or more), not {_shown(value)}')
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise refused
    try:
        seconds = float(value)
    except OverflowError:  # an integer beyond any float
        raise refused from None
    if not math.isfinite(seconds) or seconds < 0:
        raise refused
    return seconds


def _shown(value: Any) -> str:
    """A refused value as the message shows it: JSON, cut short."""
    text = str(value) if isinstance(value, int) else json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 40 else text[:37] + "..."


#: What the input thread puts in place of a line longer than ``MAX_LINE_BYTES``.
OVERLONG = b"\x00overlong line"


def read_lines(source: IO[bytes], lines: queue.Queue[bytes | None]) -> None:
    """The input thread of ``punctum stream``: each line of ``source`` put on ``lines`` as it comes
    (``OVERLONG`` in place of one longer than ``MAX_LINE_BYTES``), then None at its end."""
    # An input that fails (a closed or broken pipe) ends the stream like its end does.
    with contextlib.suppress(OSError, ValueError):
        while line := source.readline(MAX_LINE_BYTES + 1):
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                # The rest of an overlong line is read and dropped, never held whole.
                while (rest := source.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                    pass
                line = OVERLONG
            lines.put(line)
    lines.put(None)
