"""Words a caption line should not end on, per language: articles, common prepositions and
conjunctions, and titles written before a name ("Mr." / "Smith"), which a viewer reads with the
word after them. Broadcasters' and streaming services' style guides share the rule.

Each language has its own list: a word weak in one is a full word in another (German "die" is an
article, English "die" a verb; Spanish "de" a preposition, Dutch "de" an article but English none).
"""

from __future__ import annotations

_WEAK_WORDS: dict[str, str] = {
    "en": "a an the of to in on at by for with from and or but as mr. mrs. ms. dr. st.",
    "fr": "le la les un une des de du au aux et ou en à m. mme mlle dr.",
    "de": "der die das den dem des ein eine einen einem einer und oder zu im am von mit hr. fr. dr.",
    "es": "el la los las un una unos unas y o de del al con por para en sr. sra. srta. dr.",
    "it": "il lo la i gli le un uno una e o di da con per su nel in sig. dr.",
    "pt": "o a os as um uma e ou de do da dos das no na em com por para sr. sra. dr.",
    "nl": "de het een en of te van in op met dhr. mevr. dr.",
    "ro": "un o și sau de la în cu pe din dl. dna. dr.",
}
WEAK_WORDS: dict[str, frozenset[str]] = {
    code: frozenset(words.split()) for code, words in _WEAK_WORDS.items()
}
#: For text whose language is not known: every list's words.
ANY_LANGUAGE = frozenset().union(*WEAK_WORDS.values())


def weak_words(language: str | None) -> frozenset[str]:
    """The words a line should not end on in ``language`` (an ISO 639-1 code); every list's for
    None, none for a language without a list."""
    if language is None:
        return ANY_LANGUAGE
    return WEAK_WORDS.get(language.lower().replace("_", "-").split("-")[0], frozenset())
