"""Captions as they are written out, by the editor, ``punctuate``, batch and ``transfer`` alike:
the decisions applied, every sentence start (and each word the language always capitalises)
given its capital, and nothing else changed: every other character, cue and timing line is the
file's own (``app.formats.write_document``)."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

from app.core.history import History, Step, WordEdit
from app.core.line_breaks import LineChecks, line_checks, rebreak_document
from app.core.model import Document, apply_casing
from app.formats import write_document
from app.services.suggestions import starts_sentence, written_capital


def sentence_casing(document: Document, language: str | None = None) -> Step:
    """Capitalise the first word of every sentence, and the words ``language`` always spells with
    a capital (English days, months and "I"); capitals already there are never lowered."""
    words = list(document.words())
    edits = []
    for index, word in enumerate(words):
        capital = written_capital(word, None, starts_sentence(words, index), language)
        if capital is not None:
            edits.append(WordEdit(index, word, replace(word, text=apply_casing(word.text, capital))))
    return Step("Capitalise sentence starts", tuple(edits))


def capitalise_sentences(document: Document, language: str | None) -> None:
    """Give ``document``, in place, the capitals export gives (``sentence_casing``)."""
    History(document).do(sentence_casing(document, language))


def as_exported(document: Document, language: str | None, capitalise: bool = True) -> Document:
    """A copy of ``document`` as export writes it (``capitalise``: False leaves every capital as
    it is, for a user who asked that casing be kept)."""
    exported = copy.deepcopy(document)
    if capitalise:
        capitalise_sentences(exported, language)
    return exported


def rebreak_lines(document: Document, language: str | None = None) -> tuple[LineChecks, LineChecks]:
    """Lay out ``document``'s lines again in place (in ``language``'s way, the document's own
    unless given); the lines' checks before and after."""
    before = line_checks(document)
    rebreak_document(document, language=language)
    return before, line_checks(document)


def rebreak_summary(before: LineChecks, after: LineChecks) -> str:
    """One line on what re-breaking did to the lines' checks. Breaks after a mark are counted out
    of each total: re-breaking adds breaks to long lines, so two shares would compare different
    totals (one of one is 100%, one of four 25%)."""
    return (
        f"line breaks after a mark {before.breaks_after_a_mark} of {before.line_breaks}"
        f" -> {after.breaks_after_a_mark} of {after.line_breaks};"
        f" cues over the line limits {before.cues_over_limits} -> {after.cues_over_limits}"
    )


def export_captions(
    document: Document,
    target: Path | str,
    language: str | None,
    format: str | None = None,
    replace_source: bool = False,
    capitalise: bool = True,
    rebreak: bool = False,
) -> tuple[Path, tuple[LineChecks, LineChecks] | None]:
    """Write ``document`` as exported to ``target`` (atomically; the source file only with
    ``replace_source``); with ``rebreak`` each cue's lines laid out again where the cue allows it
    (``core.line_breaks``). Returns the target and, when re-broken, the lines' checks before and after."""
    exported = as_exported(document, language, capitalise)
    checks = rebreak_lines(exported, language) if rebreak else None
    write_document(exported, target, format=format, replace_source=replace_source)
    return Path(target), checks
