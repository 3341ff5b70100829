"""Words a caption line should not end on, per language: articles, common prepositions and
conjunctions, titles written before a name ("Mr." / "Smith"), possessives, numbers and common
adjectives before a noun, which a viewer reads with the word after them. Broadcasters' and
streaming services' style guides share the rule.

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
#: Words read with the noun after them too: possessives ("on your / computer"), numbers ("more
#: than seven / hundred photos") and, in English, the adjectives most often set before a noun
#: ("a good / printer"); a line may still end on one where no other break fits.
_BEFORE_A_NOUN: dict[str, str] = {
    "en": "my your his her its our their one two three four five six seven eight nine ten eleven"
    " twelve twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million billion"
    " good new old big small great little long young last next same own other whole few many"
    " several every each this these those",
    "fr": "mon ma mes ton ta tes son sa ses notre votre nos vos leur leurs deux trois quatre cinq six"
    " sept huit neuf dix vingt cent mille ce cet cette ces",
    "de": "mein meine meinen meinem meiner dein deine sein seine seinen ihr ihre ihren unser unsere"
    " zwei drei vier fünf sechs sieben acht neun zehn zwanzig hundert tausend",
    "es": "mi mis tu tus su sus nuestro nuestra nuestros nuestras dos tres cuatro cinco seis siete"
    " ocho nueve diez veinte cien mil este esta estos estas",
    "it": "mio mia miei mie tuo tua suo sua nostro nostra due tre quattro cinque sei sette otto nove"
    " dieci venti cento mille questo questa",
    "pt": "meu minha meus minhas teu tua seu sua nosso nossa dois três quatro cinco seis sete oito"
    " nove dez vinte cem mil este esta",
    "nl": "mijn jouw zijn haar ons onze hun twee drie vier vijf zes zeven acht negen tien twintig"
    " honderd duizend deze dit",
    "ro": "meu mea tău ta său sa nostru noastră doi două trei patru cinci șase șapte opt nouă zece",
}
WEAK_WORDS: dict[str, frozenset[str]] = {
    code: frozenset(words.split()) | frozenset(_BEFORE_A_NOUN.get(code, "").split())
    for code, words in _WEAK_WORDS.items()
}
#: For text whose language is not known: every list's words.
ANY_LANGUAGE = frozenset().union(*WEAK_WORDS.values())


def is_number(text: str) -> bool:
    """Whether a word as shown is a number in digits ("12", "1,500", "3.5"): read with what it
    counts, as a number word is."""
    return text[:1].isdigit() and all(c.isdigit() or c in ",." for c in text)


def weak_words(language: str | None) -> frozenset[str]:
    """The words a line should not end on in ``language`` (an ISO 639-1 code); every list's for
    None, none for a language without a list."""
    if language is None:
        return ANY_LANGUAGE
    return WEAK_WORDS.get(language.lower().replace("_", "-").split("-")[0], frozenset())
