"""Capitals a person taught: a word they gave a capital inside a sentence (a capital accepted, or
the word spelt so) or kept in lowercase (a capital turned down) is proposed so at its other
mentions, in the file and in the project's other files, with a confidence the answers earn.

The model reads each mention on its own, so a name capitalised once ("Last week, Rose arrived")
went without its capital four cues later ("After an hour, rose wrote"). The answers are counted by
word, as a subtitler keeps a list of the names in a programme; the confidence of a capital is the
mean of a Jeffreys prior moved by them, ``(capitalised + 0.5) / (answers + 1)``: one answer gives
0.75 (asked, not settled), and only a run of agreeing answers nears the triage target.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from app.core.history import Decider, History
from app.core.model import Casing, Document, Source, Status, Suggestion, Word, casing_of
from app.core.weak_words import weak_words
from app.services.suggestions import capitalised_on_export

#: Where a suggestion says what the answers were (in its ``probabilities``, shown as evidence).
CAPITALISED_KEY = "capitalised_by_you"
LOWERED_KEY = "lowercase_by_you"
#: A confidence moved by less than this is left as it is (as the marks' re-reading does).
_STEP = 0.02
#: How one-sided the answers must be for a word's capital (or its lowercase) to be proposed at
#: its other mentions: one answer (0.75) is, 3 of 4 (0.70) is, 2 of 3 (0.625) is not: a word
#: the person capitalises in some places and not in others takes its capital from the context
#: ("Series A" and "a share"), which a count by word cannot tell.
_ONE_SIDED = 0.7


@dataclass(frozen=True)
class CapitalCount:
    """A person's answers on one word's capital: how often they gave it one, and kept it without."""

    capitalised: int = 0
    lowered: int = 0

    def __add__(self, other: CapitalCount) -> CapitalCount:
        return CapitalCount(self.capitalised + other.capitalised, self.lowered + other.lowered)

    @property
    def confidence(self) -> float:
        """The chance, as the answers have it, that the word takes its capital."""
        return (self.capitalised + 0.5) / (self.capitalised + self.lowered + 1)


def word_key(word: Word) -> str:
    """A word as its answers are counted: its letters in lowercase."""
    return word.text.lower()


def respelt(document: Document, history: History) -> set[int]:
    """The words whose letters a step in effect changed (a capital accepted, a word spelt again)."""
    words = list(document.words())
    return {
        index
        for index, edit in history.first_word_edits().items()
        if index < len(words) and edit.before.text != words[index].text
    }


def taught_capitals(document: Document, history: History, after: int = 0) -> dict[str, CapitalCount]:
    """What a person's decisions in effect say of each word's capital: casing suggestions they
    accepted or turned down, and words they spelt again with a capital; those recorded at or before
    row ``after`` (a reset of the house style) are forgotten."""
    words = list(document.words())
    last = history.last_changes()
    given, kept = Counter[str](), Counter[str]()
    answered: set[int] = set()
    for s in document.suggestions:
        if s.casing is None or s.status is Status.PENDING:
            continue
        answered.add(s.gap)
        step = last.get(s.id)
        if step is None or step.by is not Decider.PERSON or (step.row is not None and step.row <= after):
            continue
        if s.status is Status.ACCEPTED and s.casing in (Casing.CAPITALISED, Casing.UPPER):
            given[word_key(words[s.gap])] += 1
        elif s.status is Status.REJECTED:
            kept[word_key(words[s.gap])] += 1
    for index, edit in history.first_word_edits().items():
        if index in answered or index >= len(words):
            continue  # a capital accepted is counted above, once
        was, now = edit.before.text, words[index].text
        if (
            was.lower() == now.lower()
            and casing_of(was) is Casing.LOWER
            and casing_of(now) is Casing.CAPITALISED
        ):
            given[word_key(words[index])] += 1
    return {key: CapitalCount(given[key], kept[key]) for key in given.keys() | kept.keys()}


def merged(*counts: Mapping[str, CapitalCount]) -> dict[str, CapitalCount]:
    """The answers of several files, word by word."""
    total: dict[str, CapitalCount] = {}
    for each in counts:
        for key, count in each.items():
            total[key] = total.get(key, CapitalCount()) + count
    return total


def one_sided(taught: Mapping[str, CapitalCount], language: str | None) -> dict[str, CapitalCount]:
    """The words whose answers are one-sided enough (``_ONE_SIDED``) to be proposed so at their
    other mentions. Articles, prepositions and the like (``core.weak_words``; any language's
    where none is given) are not: they take a capital from the context alone ("Series A", "The
    Hague"), and a count by word would give every "a" a capital."""
    weak = weak_words(language)
    return {
        key: count
        for key, count in taught.items()
        if key not in weak and not 1 - _ONE_SIDED < count.confidence < _ONE_SIDED
    }


def recased_again(
    document: Document, edited: set[int], taught: Mapping[str, CapitalCount], next_id: int
) -> tuple[list[Suggestion], list[tuple[int, float]]]:
    """The words nobody decided the capital of (nor spelt again: ``edited``), read again with what
    ``taught`` says of them: capital suggestions to add (numbered from ``next_id``) and
    confidences to move."""
    if not taught:
        return [], []
    words = list(document.words())
    language = document.language
    casings = [s for s in document.suggestions if s.casing is not None]
    decided = {s.gap for s in casings if s.status is not Status.PENDING}
    pending = {s.gap: s for s in casings if s.status is Status.PENDING}
    put: list[Suggestion] = []
    moved: list[tuple[int, float]] = []
    taught = one_sided(taught, language)
    for index, word in enumerate(words):
        count = taught.get(word_key(word))
        if (
            count is None
            or index in decided
            or index in edited
            or not _may_take_capital(words, index, language)
        ):
            continue
        existing = pending.get(index)
        sure = round(count.confidence, 4)
        if count.capitalised > count.lowered:
            if existing is None:
                evidence = {CAPITALISED_KEY: float(count.capitalised), LOWERED_KEY: float(count.lowered)}
                put.append(
                    Suggestion(next_id, index, "", sure, Source.MODEL, evidence, casing=Casing.CAPITALISED)
                )
                next_id += 1
            elif existing.casing is Casing.CAPITALISED and sure >= existing.confidence + _STEP:
                moved.append((existing.id, sure))
        elif existing is not None and existing.source is Source.MODEL and sure <= existing.confidence - _STEP:
            moved.append((existing.id, sure))
    return put, moved


def _may_take_capital(words: list[Word], index: int, language: str | None) -> bool:
    """Whether a capital may be proposed for word ``index``: in lowercase, with letters, not a
    piece of a word split by tags, and not given its capital by export anyway."""
    word = words[index]
    if word.casing is not Casing.LOWER or not word.casable:
        return False
    if index + 1 < len(words) and words[index + 1].glued:
        return False
    return not capitalised_on_export(words, index, language)


def learnt_line(taught: Mapping[str, CapitalCount], most: int = 5) -> str:
    """The capitals the answers taught (``one_sided``), for the style's line: "capitalises Rose
    (3 of 3), ..."."""
    names = sorted(
        ((key, count) for key, count in one_sided(taught, None).items() if count.capitalised > count.lowered),
        key=lambda item: (-item[1].capitalised, item[0]),
    )
    if not names:
        return ""
    shown = ", ".join(
        f"{key[:1].upper()}{key[1:]} ({count.capitalised} of {count.capitalised + count.lowered})"
        for key, count in names[:most]
    )
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return f"capitalises {shown}{more}"
