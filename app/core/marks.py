"""Punctuation marks: the classes models predict and metrics count, and how written marks map to them.

The product keeps the mark as written where it shows text to people; the four classes are what
the literature evaluates (``! ;`` count as PERIOD, ``: -`` as COMMA, as in the IWSLT papers).
"""

from __future__ import annotations

NONE, COMMA, PERIOD, QUESTION = "", ",", ".", "?"
CLASSES = (NONE, COMMA, PERIOD, QUESTION)
CLASS_NAMES = {NONE: "O", COMMA: "COMMA", PERIOD: "PERIOD", QUESTION: "QUESTION"}
LABELS = {name: mark for mark, name in CLASS_NAMES.items()}

#: Characters that carry meaning in a mark; quotes and brackets around them do not.
_SENTENCE_PUNCTUATION = frozenset(".,;:!?…-–—。，、；：！？")
_SPACES = frozenset(" \u00a0\u202f")
_STRENGTH = {NONE: 0, COMMA: 1, PERIOD: 2, QUESTION: 3}


def mark_class(mark: str) -> str:
    """The evaluation class of a written mark: '?"' -> '?', '!' -> '.', ' --' -> ','."""
    if "?" in mark or "？" in mark:
        return QUESTION
    if any(c in mark for c in ".!;…。！；"):
        return PERIOD
    if any(c in mark for c in ",:-–—，、："):
        return COMMA
    return NONE


#: What the model predicts: the four evaluated classes plus ! and : where the data has them.
MODEL_MARKS = (NONE, COMMA, PERIOD, QUESTION, "!", ":")


def model_class(mark: str) -> int:
    """Index into ``MODEL_MARKS`` of a written mark ('?"' -> 3, ';' -> period, ' --' -> comma)."""
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
