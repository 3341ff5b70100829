"""Split a cue's text into words and the literal text around them (styling, spaces, symbols).

The layout this builds renders back to the exact input, so styling survives any change of marks
and is never taken for a word. Tags (``<i>``, ``<font color=..>``, VTT ``<c.x>``, ``<v Name>``),
ASS overrides (``{\\an8}``; in ASS/SSA its ``\\n`` and ``\\h`` too) and entities (``&amp;``) are literal pieces. A VTT inline timestamp
(``<00:00:01.500>``) is literal too, and gives the start time of the word after it.
"""

from __future__ import annotations

import re
from dataclasses import replace

from app.core.model import LayoutPiece, Slot, Word

_TAGS = (
    r"<[^<>\n]*>"  # HTML-like and WebVTT tags
    r"|\{\\[^{}\n]*\}"  # ASS/SSA override blocks such as {\an8}
    r"|&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});"  # entities
)
_MARKUP = re.compile(f"({_TAGS})")
#: In an ASS/SSA dialogue, its soft line break and hard space too (its hard break ``\N`` is read
#: as a line break); in SRT and WebVTT they are text as written.
_ASS_MARKUP = re.compile(rf"({_TAGS}|\\[nh])")
#: ASS/SSA escapes that part words as a space does.
_ASS_SPACES = frozenset(("\\n", "\\h"))
#: A line-break tag (``<br/>``, TTML's ``<tt:br />``): it parts words as a space does.
_BREAK_TAG = re.compile(r"<(?:[\w.-]+:)?br\b[^<>]*>", re.IGNORECASE)
_INLINE_TIME = re.compile(r"<((?:\d+:)?\d{2}:\d{2}\.\d{3})>")
_SPACE = re.compile(r"(\s+)")
_LETTER_OR_DIGIT = re.compile(r"[^\W_]")

#: Punctuation that may open a word ("¿qué", "(aside", "-dialogue").
OPENING = frozenset("\"'“‘«‹([{¿¡-–—")
#: Punctuation that may follow a word; the run of these at a word's end is its mark.
CLOSING = frozenset(",.;:!?…\"'”’»›)]}-–—。，、；：！？")


def split_token(token: str) -> tuple[str, str, str]:
    """``'"¿Qué?"'`` -> (prefix, text, mark) = ('"¿', 'Qué', '?"'); text is "" for pure symbols."""
    if token[0].isalnum() and token[-1].isalnum():
        return "", token, ""  # the common case in ASR captions
    start = 0
    while start < len(token) and token[start] in OPENING:
        start += 1
    end = len(token)
    while end > start and token[end - 1] in CLOSING:
        end -= 1
    core = token[start:end]
    if _LETTER_OR_DIGIT.search(core) is None:
        return "", "", token
    return token[:start], core, token[end:]


def _only_markup(pieces: list[str]) -> bool:
    """Pieces laid out between two words that are styling alone, with no space: one word split
    by tags. An inline timestamp separates words, so it does not count."""
    return bool(pieces) and all(
        _ASS_MARKUP.fullmatch(piece)
        and parse_inline_time(piece) is None
        and piece not in _ASS_SPACES
        and not _BREAK_TAG.fullmatch(piece)
        for piece in pieces
    )


def parse_inline_time(tag: str) -> int | None:
    """Milliseconds of a VTT inline timestamp tag, or None for any other tag."""
    match = _INLINE_TIME.fullmatch(tag)
    if match is None:
        return None
    *upper, seconds = match.group(1).split(":")
    hours = int(upper[0]) if len(upper) == 2 else 0
    minutes = int(upper[-1])
    whole, millis = seconds.split(".")
    return ((hours * 60 + minutes) * 60 + int(whole)) * 1000 + int(millis)


def tokenize(
    text: str, cue_start: int, cue_end: int, ass_escapes: bool = False
) -> tuple[list[Word], list[LayoutPiece]]:
    """Words of a cue and its layout. Word times come from inline timestamps when the cue has any.
    ``ass_escapes``: the text is an ASS/SSA dialogue's (``_ASS_MARKUP``)."""
    markup = _ASS_MARKUP if ass_escapes else _MARKUP
    words: list[Word] = []
    layout: list[LayoutPiece] = []
    starts: list[int | None] = []
    pending_start: int | None = None
    timed = False
    since_word: list[str] = []  # literal pieces laid out since the last word's mark slot

    def attach_mark(symbols: str) -> bool:
        """Glue closing punctuation written apart from its word ("word</i>," or French "mot ?")."""
        if not words or words[-1].mark or any(c not in CLOSING for c in symbols):
            return False
        last = len(words) - 1
        if since_word and all(markup.fullmatch(piece) for piece in since_word):
            layout.remove((Slot.MARK, last))
            layout.append((Slot.MARK, last))
            words[-1] = replace(words[-1], mark=symbols)
            return True
        if (
            len(since_word) == 1
            and since_word[0] in (" ", "\u00a0", "\u202f")
            and layout[-1] == since_word[0]
        ):
            layout.pop()
            words[-1] = replace(words[-1], mark=since_word[0] + symbols)
            return True
        return False

    for part in markup.split(text):
        if not part:
            continue
        if markup.fullmatch(part):
            time = parse_inline_time(part)
            if time is not None:
                pending_start, timed = time, True
            layout.append(part)
            since_word.append(part)
            continue
        for chunk in _SPACE.split(part):
            if not chunk:
                continue
            if chunk.isspace():
                layout.append(chunk)
                since_word.append(chunk)
                continue
            prefix, core, mark = split_token(chunk)
            if not core:
                if not attach_mark(chunk):
                    layout.append(chunk)
                    since_word.append(chunk)
                continue
            position = len(words)
            glued = bool(words) and not words[-1].mark and not prefix and _only_markup(since_word)
            words.append(Word(core, mark=mark, prefix=prefix, glued=glued))
            starts.append(pending_start)
            pending_start = None
            layout.extend([(Slot.WORD, position), (Slot.MARK, position)])
            since_word = []
    if timed and words:
        words = _timed(words, starts, cue_start, cue_end)
    return words, layout


def _timed(words: list[Word], starts: list[int | None], cue_start: int, cue_end: int) -> list[Word]:
    """Give words their inline start times; a word ends where the next timed word starts."""
    if starts[0] is None:
        starts[0] = cue_start
    ends = [*starts[1:], cue_end]
    return [
        replace(word, start=start, end=end if start is not None else None)
        for word, start, end in zip(words, starts, ends, strict=True)
    ]
