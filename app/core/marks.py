"""Punctuation marks: the classes models predict and metrics count, and how written marks map to them.

The product keeps the mark as written where it shows text to people; the four classes are what
the literature evaluates (``! ;`` count as PERIOD, ``: -`` as COMMA, as in the IWSLT papers).
"""

from __future__ import annotations

import functools
import re

NONE, COMMA, PERIOD, QUESTION = "", ",", ".", "?"
CLASS_NAMES = {NONE: "O", COMMA: "COMMA", PERIOD: "PERIOD", QUESTION: "QUESTION"}
LABELS = {name: mark for mark, name in CLASS_NAMES.items()}

#: Characters that carry meaning in a mark; quotes and brackets around them do not.
_SENTENCE_PUNCTUATION = frozenset(".,;:!?…-–—。，、；：！？")
_SPACES = frozenset(" \u00a0\u202f")
_STRENGTH = {NONE: 0, COMMA: 1, PERIOD: 2, QUESTION: 3}


def mark_class(mark: str) -> str:
    """The evaluation class of a written mark: '?"' -> '?', '!' -> '.', ' --' -> ','; where an
    ellipsis or dash comes with a plain mark ('...,'), the plain mark decides."""
    return _EVALUATED[model_class(mark)]


#: What the model predicts: the four evaluated classes plus ! and : where the data has them.
MODEL_MARKS = (NONE, COMMA, PERIOD, QUESTION, "!", ":")
#: The evaluation class of each of ``MODEL_MARKS``: ! counts as a period, : as a comma.
_EVALUATED = (NONE, COMMA, PERIOD, QUESTION, PERIOD, COMMA)


@functools.lru_cache(maxsize=4096)
def model_class(mark: str) -> int:
    """Index into ``MODEL_MARKS`` of a written mark ('?"' -> 3, ';' -> period, ' --' -> comma)."""
    plain = replaceable_part(mark)
    if plain:
        mark = plain
    if "?" in mark or "？" in mark:
        return 3
    if "!" in mark or "！" in mark:
        return 4
    if any(c in mark for c in ".;…。；"):
        return 2
    if ":" in mark or "：" in mark:
        return 5
    if any(c in mark for c in ",-–—，、"):
        return 1
    return 0


def clean_mark(mark: str) -> str:
    """The part of a written mark worth carrying to another text: '."' -> '.', ' ?' stays ' ?'."""
    kept = "".join(c for c in mark if c in _SENTENCE_PUNCTUATION)
    if kept and mark[:1] in _SPACES:
        return mark[0] + kept  # French spacing before ? ! : ;
    return kept


def strength(mark: str) -> int:
    """Which mark wins when two land in one gap: question over period over comma over none."""
    return _STRENGTH[mark_class(mark)]


# --- writing a mark into a word's trailing punctuation ------------------------------------------

#: The marks Punctum writes and may replace. Ellipses, dashes, quotes, brackets and apostrophes
#: in a word's trailing run are the captions' own and always stay.
REPLACEABLE = frozenset(",.;:!?。，、；：！？")
#: A written mark split into units: an ellipsis, a plain mark with the space French puts before
#: it, or any other single character.
_UNITS = re.compile(r"\.{2,}|…|[ \u00a0\u202f]?[,.;:!?。，、；：！？]|.", re.DOTALL)
_DOUBLE_CLOSING_QUOTES = frozenset('"”')
#: Languages that put a comma, full stop, question or exclamation mark inside a closing double
#: quote (US English); the others put it after the quote.
_MARK_INSIDE_QUOTES = frozenset({"en"})


def _units(written: str) -> list[str]:
    return _UNITS.findall(written)


def _is_replaceable(unit: str) -> bool:
    return unit[-1:] in REPLACEABLE and not unit.endswith("..")


def replaceable_part(written: str) -> str:
    """The plain marks of a written trailing run, with their spacing: '?"' -> '?', '...,' -> ','."""
    return "".join(unit for unit in _units(written) if _is_replaceable(unit))


def protected_part(written: str) -> str:
    """What of a written trailing run no mark change touches: quotes, brackets, ellipses, dashes."""
    return "".join(unit for unit in _units(written) if not _is_replaceable(unit))


def has_protected_punctuation(written: str) -> bool:
    """An ellipsis or a dash after a word: the captioner's deliberate mark, left to them."""
    if not written:
        return False  # most words: asked of every gap after every decision
    return any(char in "…-–—" for char in written) or ".." in written


def set_mark(written: str, mark: str, language: str | None = None) -> str:
    """``written`` (a word's trailing run) with its plain marks replaced by ``mark``; quotes,
    brackets, apostrophes, ellipses and dashes stay where they are.

    The new mark takes the place of the old one. Where there was none it goes after the run,
    except that a language writing marks inside quotes (US English) puts ``, . ? !`` before a
    closing double quote: ``"Whammy"`` -> ``"Whammy."``; a bracket always keeps it outside.
    """
    units = _units(written)
    first = next((n for n, unit in enumerate(units) if _is_replaceable(unit)), None)
    kept = [unit for unit in units if not _is_replaceable(unit)]
    if first is not None:
        position = sum(1 for unit in units[:first] if not _is_replaceable(unit))
    else:
        position = len(kept)
        base = (language or "").lower().replace("_", "-").split("-")[0]
        if base in _MARK_INSIDE_QUOTES and mark.strip() in (",", ".", "?", "!"):
            while position > 0 and kept[position - 1] in _DOUBLE_CLOSING_QUOTES:
                position -= 1
    return "".join(kept[:position]) + mark + "".join(kept[position:])


def same_mark(written: str, mark: str) -> bool:
    """Whether a word's trailing run already carries ``mark`` (and no other plain mark)."""
    return replaceable_part(written) == replaceable_part(mark) and protected_part(mark) in protected_part(
        written
    )


#: Indices into ``MODEL_MARKS`` after which the next word starts a sentence: . ? ! (``;`` and
#: an ellipsis count as a period; a comma after an ellipsis, "...,", ends nothing).
SENTENCE_END_CLASSES = frozenset(model_class(mark) for mark in ".?!")
