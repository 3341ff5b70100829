"""Marks as each language writes them."""

from __future__ import annotations

#: Languages whose typography puts a (non-breaking) space before these marks.
_SPACED_MARKS = {"fr": set("?!:;")}


_CJK_MARKS = {".": "。", "?": "？", "!": "！", ":": "："}


#: Languages with marks of their own: Chinese writes its comma "，", Japanese "、".
_FULL_WIDTH_MARKS = {"zh": {**_CJK_MARKS, ",": "，"}, "ja": {**_CJK_MARKS, ",": "、"}}


def render_mark(mark: str, language: str) -> str:
    """A mark as the language writes it: French puts a no-break space before ? ! : ;, Chinese and
    Japanese write their own full-width marks (``。`` ``，`` or ``、``)."""
    if mark in _FULL_WIDTH_MARKS.get(language, {}):
        return _FULL_WIDTH_MARKS[language][mark]
    if mark and mark in _SPACED_MARKS.get(language, ()):
        return "\u00a0" + mark
    return mark
