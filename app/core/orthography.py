"""Capitals a language's spelling gives a word wherever it stands, whatever the sentence.

English writes the days of the week, the months and the pronoun "I" with a capital; the other
languages Punctum reads write days and months in lowercase (German capitalises every noun, which
is the casing model's work, not a word list's). "May" and "March" are left out: as a modal and
as a verb or noun they are far more common in speech than as months.
"""

from __future__ import annotations

import re

_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = (
    "january",
    "february",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_PRONOUN_I = ("i", "i'm", "i've", "i'll", "i'd")

ALWAYS_CAPITALISED: dict[str, frozenset[str]] = {"en": frozenset(_DAYS + _MONTHS + _PRONOUN_I)}


def always_capitalised(word: str, language: str | None) -> bool:
    """Whether ``language`` spells ``word`` (as a whole word, possibly possessive) with a capital."""
    known = ALWAYS_CAPITALISED.get((language or "").lower().replace("_", "-").split("-")[0])
    if not known:
        return False
    plain = word.lower().replace("\u2019", "'")
    return plain in known or (plain.endswith("'s") and plain[:-2] in known)


#: Abbreviations spelled with lowercase letters and full stops: at most their first letter takes
#: a capital (at a sentence start), never all of them ("e.g." is never "E.G.").
LOWERCASE_ABBREVIATIONS = frozenset(
    [
        "e.g",
        "i.e",
        "a.m",
        "p.m",
        "cf",
        "etc",
        "vs",
        "viz",
        "z.b",
        "d.h",
        "u.a",
        "usw",
        "bzw",
        "p.ex",
        "c.-à-d",
    ]
)


def one_capital_only(word: str) -> bool:
    """Whether ``word`` is an abbreviation that takes no capital past its first letter."""
    return word.lower().rstrip(".") in LOWERCASE_ABBREVIATIONS


#: Letters with full stops between them ("U.S.", "e.g.", "Ph.D."): an abbreviation.
_DOTTED_ABBREVIATION = re.compile(r"(?:[^\W\d_]{1,3}\.){2,}")
_CLOSERS = "\"'”’»›)]}"


def is_abbreviation(text: str) -> bool:
    """Whether ``text`` (a word as written, its mark included) ends with an abbreviation's full
    stop ("U.S.", "etc.") rather than a sentence's."""
    core = " ".join(text.split()).rstrip(_CLOSERS)
    return bool(_DOTTED_ABBREVIATION.fullmatch(core)) or (
        core.endswith(".") and core[:-1].lower() in LOWERCASE_ABBREVIATIONS
    )
