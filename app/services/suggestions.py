"""The model's suggestions for a document: a mark where it disagrees with the current one, a
capital where a word needs one, and what it read them from."""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from app.core.gap_readings import GapReading
from app.core.marks import MODEL_MARKS, has_protected_punctuation, model_class
from app.core.model import Casing, Document, Evidence, Source, Suggestion, Word
from app.core.orthography import always_capitalised, one_capital_only
from app.core.sentences import starts_sentence
from app.ml.confidence import capital_inputs, mark_inputs, readers_disagree, shipped_confidence
from app.ml.written_marks import carries_marks, with_written_marks
from app.services import languages
from app.services.typography import render_mark

if TYPE_CHECKING:
    from app.services.gap_evidence import GapEvidence
    from app.services.listening import Readings
    from app.services.model import Punctuator


#: A lowercase word inside a sentence gets a capital suggested above this casing-head probability.
CAPITAL_PROBABILITY = 0.5


#: Scripts the model's training data covers; other text still gets a result, with a warning.
_KNOWN_SCRIPTS = ("LATIN",)


def model_word(word: Word) -> str:
    """What the model reads: the word lowercased, as ASR gives it, with accents composed (NFC) as in
    the training text."""
    return _model_text(word.text)


@functools.lru_cache(maxsize=1 << 16)
def _model_text(text: str) -> str:
    # Cached: every gap's next word is read again after every decision.
    return unicodedata.normalize("NFC", text.lower())


def _opening(words: list[Word]) -> str:
    """A document's first 400 words, which its language is told from."""
    return " ".join(w.text for w in words[:400])


def unknown_script_share(words: list[Word]) -> float:
    letters = [c for w in words for c in w.text if c.isalpha()]
    if not letters:
        return 0.0
    foreign = sum(1 for c in letters if not unicodedata.name(c, "").startswith(_KNOWN_SCRIPTS))
    return foreign / len(letters)


@dataclass
class TextReading:
    """What the text model read a document as, before anything listens: per word, the mark and
    casing probabilities, and the evidence its gap was read with (text or timing).
    Kept with the analysis so that listening later need not read the text again."""

    words: list[str]  # as the model reads them (``model_word``)
    language: str | None
    marks: list[list[float]]
    casing: list[list[float]]
    kinds: list[Evidence]
    hears: bool  # the model read the gap evidence (it has a gap branch)
    warnings: list[str] = field(default_factory=list)  # about the text: its language, its script

    def reads(self, document: Document, language: str | None) -> bool:
        """Whether this is a reading of ``document``'s words in ``language`` (None: any)."""
        same_language = language is None or language == self.language
        return same_language and self.words == [model_word(w) for w in document.words()]


@dataclass
class Findings:
    """What the suggestions were read from: the document's language, the richest evidence any gap
    had and what the user should know."""

    language: str | None = None
    evidence: Evidence = Evidence.TEXT
    warnings: list[str] = field(default_factory=list)
    #: Per word: what the readers said at its gap, for the house style to read again later.
    readings: list[GapReading] = field(default_factory=list)


def text_reading(
    document: Document,
    punctuator: Punctuator,
    language: str | None = None,
    evidence: GapEvidence | None = None,
) -> TextReading:
    """The text model's reading of ``document`` (its language detected when None). ``evidence``
    (from ``gap_evidence``) feeds models with a gap branch; others read the text alone."""
    words = list(document.words())
    hears = evidence is not None and punctuator.reads_timings
    if not words:
        return TextReading([], None, [], [], [], hears, ["the document has no words"])
    detected = language is None
    language = language or languages.detect_language(_opening(words))
    warnings: list[str] = []
    known = punctuator.languages
    if not detected and (other := languages.contradicting_language(_opening(words), language)):
        warnings.append(
            f"the text looks like {languages.language_name(other)}, not "
            f"{languages.language_name(language)} as the language given says; marks and capitals "
            "follow the language given"
        )
    if detected and known and language not in known:
        warnings.append(
            f"the text looks like {languages.language_name(language)}, which this model does not support "
            f"(it knows {', '.join(known)}); expect few marks"
        )
    elif unknown_script_share(words) > 0.5:
        warnings.append("most of the text is in a script the model was not trained on; expect few marks")
    kinds = evidence.kinds if hears and evidence is not None else [Evidence.TEXT] * len(words)
    model_words = [model_word(w) for w in words]
    marks, casing = punctuator.probabilities(model_words, language, evidence if hears else None)
    return TextReading(model_words, language, marks, casing, kinds, hears, warnings)


def suggestions_from(
    document: Document,
    reading: TextReading,
    evidence: GapEvidence | None = None,
    heard: Readings | None = None,
) -> tuple[list[Suggestion], Findings]:
    """One suggestion per gap where the reading disagrees with the current mark, and casing ones;
    and what they were read from (language, evidence, warnings).

    ``heard``: what the recogniser heard along the words (``services.listening``), combined with
    the text reading where it heard; where the document carries marks of its own, they are read as
    well (``ml.written_marks``); ``evidence``: the gap evidence the analysis measured, whose
    warnings the user is told.
    """
    words = list(document.words())
    found = Findings(reading.language, warnings=list(reading.warnings))
    if not words or reading.language is None:
        return [], found
    mark_probs, heard_marks = _weigh_evidence(found, reading, evidence, heard, len(words))
    written = [model_class(w.mark) for w in words]
    if carries_marks(written):  # the file's own punctuation is a third reading (``ml.written_marks``)
        mark_probs = with_written_marks(mark_probs, written)
    ends = _cue_ends(document, len(words))
    source = _Reading(words, reading.language, reading, mark_probs, heard_marks, evidence, ends)
    next_id = document.next_suggestion_id()
    marks = _mark_suggestions(source, found, next_id)
    return marks + _capital_suggestions(source, next_id + len(marks)), found


def _weigh_evidence(
    found: Findings,
    reading: TextReading,
    evidence: GapEvidence | None,
    heard: Readings | None,
    count: int,
) -> tuple[list[list[float]], list[list[float] | None]]:
    """Into ``found``: the evidence the document was read with and the warnings of its evidence and
    of its hearing. Returned: the mark probabilities to suggest from (the text's, or combined with
    what was heard) and, per word, what was heard there (None where nothing was)."""
    if evidence is not None:
        found.warnings += evidence.warnings
    # What the document as a whole was read with: the richest evidence any gap had (a text file
    # handed over as evidence carries no times, so it is read as text).
    found.evidence = Evidence.TIMING if Evidence.TIMING in reading.kinds else Evidence.TEXT
    mark_probs = reading.marks
    heard_marks: list[list[float] | None] = [None] * count
    if heard is not None:
        found.warnings += heard.warnings
        # The media's end is told once: by the gap evidence where it noticed, else by the listener.
        if heard.past_the_end is not None and not (evidence is not None and evidence.past_the_end):
            found.warnings.append(heard.past_the_end)
        mark_probs, heard_marks = heard.combined, heard.heard
        if heard.any_heard:
            found.evidence = Evidence.HEARD
    if evidence is not None and evidence.media and not reading.hears and found.evidence is not Evidence.HEARD:
        found.warnings.append("this model reads text only; the media was not used")
    return mark_probs, heard_marks


@dataclass(frozen=True)
class _Reading:
    """What the suggestions for one document are read from."""

    words: list[Word]
    language: str
    reading: TextReading
    mark_probs: list[list[float]]  # the text's, or combined with what was heard
    heard_marks: list[list[float] | None]  # per word: what was heard there, None where nothing was
    evidence: GapEvidence | None
    ends: list[bool]  # per word: whether it ends its cue


def _mark_suggestions(source: _Reading, found: Findings, next_id: int) -> list[Suggestion]:
    """A suggestion per open gap whose mark the reading disagrees with, numbered from ``next_id``;
    into ``found``, what the readers said at every gap."""
    reading, evidence, ends = source.reading, source.evidence, source.ends
    language, kinds = source.language, reading.kinds
    sure = shipped_confidence()
    suggestions: list[Suggestion] = []
    for index, (word, probs) in enumerate(zip(source.words, source.mark_probs, strict=True)):
        heard_here = source.heard_marks[index]
        vector = evidence.vectors[index] if evidence is not None and kinds[index] is Evidence.TIMING else None
        pause = vector[0] if vector else None
        found.readings.append(
            GapReading(
                tuple(float(p) for p in probs),
                tuple(float(p) for p in reading.marks[index]),
                None if heard_here is None else tuple(float(p) for p in heard_here),
                None if pause is None else float(pause),
                ends[index],
            )
        )
        best, mark = model_mark(probs, language)
        if best == model_class(word.mark) or not open_gap(source.words, index):
            continue
        distribution = {render_mark(MODEL_MARKS[k], language): round(p, 4) for k, p in enumerate(probs)}
        inputs = mark_inputs(best, probs, reading.marks[index], heard_here, pause, ends[index], language)
        promise = sure.mark_promise(inputs, readers_disagree(reading.marks[index], heard_here))
        suggestions.append(
            Suggestion(
                next_id,
                index,
                mark,
                round(promise, 4),
                Source.MODEL,
                distribution,
                evidence=kinds[index] if heard_here is None else Evidence.HEARD,
                readings={}
                if heard_here is None
                else {
                    "read": reader_choice(reading.marks[index], language),
                    "heard": reader_choice(heard_here, language),
                },
            )
        )
        next_id += 1
    return suggestions


def _capital_suggestions(source: _Reading, next_id: int) -> list[Suggestion]:
    """A suggestion per lowercase word the casing head would capitalise and export would not,
    numbered from ``next_id``."""
    words, language, ends = source.words, source.language, source.ends
    sure = shipped_confidence()
    suggestions: list[Suggestion] = []
    for index, (word, probs) in enumerate(zip(words, source.reading.casing, strict=True)):
        capital = probs[1] + probs[2]
        casing = spelled_capital(word, head_casing(probs))
        if (
            word.casing is Casing.LOWER
            and word.casable
            and casing is not None
            # Export gives these their capital anyway; a suggestion would only ask for a keystroke.
            and not capitalised_on_export(words, index, language)
        ):
            if index + 1 < len(words) and words[index + 1].glued:
                continue  # the model read a piece of a word split by tags, not the word
            starts_cue = index == 0 or ends[index - 1]
            suggestions.append(
                Suggestion(
                    next_id,
                    index,
                    "",
                    round(sure.capitals(capital_inputs(capital, starts_cue, language)), 4),
                    Source.MODEL,
                    {"capital": round(capital, 4)},
                    casing=casing,
                )
            )
            next_id += 1
    return suggestions


def _cue_ends(document: Document, count: int) -> list[bool]:
    """Per word: whether it is the last of its cue (all False if the cues do not hold the words)."""
    ends = [number == len(cue.words) - 1 for cue in document.cues for number in range(len(cue.words))]
    return ends if len(ends) == count else [False] * count


def reader_choice(probabilities: Sequence[float], language: str) -> tuple[str, float]:
    """A reader's own choice at a gap: its mark as ``language`` writes it, and how sure it is."""
    best, mark = model_mark(probabilities, language)
    return mark, round(float(probabilities[best]), 4)


def head_casing(probabilities: Sequence[float]) -> Casing | None:
    """The capital the casing head asks for (lower, capitalised, upper probabilities), or None
    when it is not sure enough of any."""
    if probabilities[1] + probabilities[2] <= CAPITAL_PROBABILITY:
        return None
    return Casing.UPPER if probabilities[2] > probabilities[1] else Casing.CAPITALISED


def spelled_capital(word: Word, casing: Casing | None) -> Casing | None:
    """The capital the casing head asked for, as ``word`` may take it: none for an abbreviation
    written in lowercase ("e.g.", never "E.G."), which has a capital only where a sentence starts."""
    return None if one_capital_only(word.text) else casing


def model_mark(probabilities: Sequence[float], language: str) -> tuple[int, str]:
    """The mark the model's probabilities choose: its class (``MODEL_MARKS``) and the mark as
    ``language`` writes it. The one rule for the whole document and for the stream."""
    best = max(range(len(probabilities)), key=probabilities.__getitem__)
    return best, render_mark(MODEL_MARKS[best], language)


def written_capital(
    word: Word, head: Casing | None, sentence_start: bool, language: str | None
) -> Casing | None:
    """The capital a lowercase word gets when it is written out: the casing head's (``head``), else
    one at a sentence start or where ``language`` always has one; None for a word that keeps its
    letters (capitals given are never lowered). The one rule for export and for the stream."""
    if word.casing is not Casing.LOWER or not word.casable:
        return None
    if (capital := spelled_capital(word, head)) is not None:
        return capital
    if sentence_start or always_capitalised(word.text, language):
        return Casing.CAPITALISED
    return None


def capitalised_on_export(words: list[Word], index: int, language: str | None) -> bool:
    """Whether export gives word ``index`` its capital whatever is decided (``sentence_casing``):
    it starts the text or follows a sentence mark the captions have, or the language always
    spells it with one."""
    return starts_sentence(words, index) or always_capitalised(words[index].text, language)


def drop_capitals_export_gives(document: Document, language: str | None) -> None:
    """Take out the reference's capitals that export gives anyway (the first word, English days):
    a row in the review for them would only ask for a keystroke."""
    words = list(document.words())
    document.suggestions[:] = [
        s
        for s in document.suggestions
        if not (
            s.source is Source.REFERENCE
            and s.casing is Casing.CAPITALISED
            and words[s.gap].casing is Casing.LOWER
            and capitalised_on_export(words, s.gap, language)
        )
    ]


def open_gap(words: Sequence[Word], index: int) -> bool:
    """Whether the model may propose a mark after word ``index``: not inside a word split by tags,
    and not where the captions have an ellipsis or a dash (their writer's choice)."""
    if index + 1 < len(words) and words[index + 1].glued:
        return False
    return not has_protected_punctuation(words[index].mark)
