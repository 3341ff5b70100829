"""Comparable forms of words: what the aligner matches on.

A caption word becomes one or more *tokens*: case folded, punctuation stripped, apostrophes and
dashes unified and then dropped ("don't" and "dont" meet), hyphenated compounds split, and numbers
written as digits spelled out in the document's language with num2words ("75" -> "seventy five"),
so either way of writing a number aligns with the other.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from num2words import num2words

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "`": "'", "´": "'"})
_SPLIT = re.compile(r"[-‐‑‒–—―/_]+")
_KEEP = re.compile(r"[^\w'.,%]+")
_NUMBER = re.compile(r"(\d[\d,]*(?:\.\d+)?)(st|nd|rd|th|%)?")
_ORDINAL_SUFFIXES = {"st", "nd", "rd", "th"}
#: Languages num2words spells; anything else keeps digits as they are.
_NUM2WORDS_LANGUAGES = {
    "en",
    "de",
    "fr",
    "es",
    "it",
    "pt",
    "nl",
    "ro",
    "pl",
    "ru",
    "cs",
    "da",
    "fi",
    "sv",
    "no",
}
_PERCENT = {"en": "percent", "de": "prozent", "fr": "pour cent", "es": "por ciento", "it": "per cento"}


def tokens(word: str, language: str = "en") -> tuple[str, ...]:
    """The comparable tokens of one written word; empty for pure punctuation."""
    return _tokens(word, language.split("-")[0].lower())


@functools.lru_cache(maxsize=65536)
def _tokens(word: str, language: str) -> tuple[str, ...]:
    text = unicodedata.normalize("NFKC", word).translate(_APOSTROPHES).casefold()
    result: list[str] = []
    for part in _SPLIT.split(text):
        part = _KEEP.sub("", part).strip(".,'")
        if not part:
            continue
        number = _NUMBER.fullmatch(part)
        if number is not None:
            result.extend(_spell(number.group(1), number.group(2), language))
            continue
        part = part.replace("'", "").replace(".", "").replace(",", "").replace("%", "")
        if part:
            result.append(part)
    return tuple(result)


def _spell(digits: str, suffix: str | None, language: str) -> list[str]:
    plain = digits.replace(",", "")
    if language not in _NUM2WORDS_LANGUAGES:
        return [plain] + ([suffix] if suffix == "%" else [])
    try:
        if suffix in _ORDINAL_SUFFIXES:
            spoken = num2words(int(plain), to="ordinal", lang=language)
        elif "." not in plain and len(plain) == 4 and 1100 <= int(plain) <= 2099:
            spoken = num2words(int(plain), to="year", lang=language)
        else:
            spoken = num2words(float(plain) if "." in plain else int(plain), lang=language)
    except (NotImplementedError, OverflowError, ValueError, KeyError):
        return [plain]
    words = [w for w in re.split(r"[\s\-,]+", spoken.casefold()) if w and w != "and"]
    if suffix == "%":
        words.extend(_PERCENT.get(language, "percent").split())
    return words
