"""Captions as they are written out, by the editor, ``punctuate``, batch and ``transfer`` alike:
the decisions applied, every sentence start (and each word the language always capitalises)
given its capital, and nothing else changed: every other character, cue and timing line is the
file's own (``app.formats.write_document``)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

from app.core.checks import STYLE_GUIDE_LIMITS, CaptionLimits
from app.core.cut_checks import CutChecks, cut_checks
from app.core.gap_features import GapMeasure
from app.core.history import History, Step, WordEdit
from app.core.line_breaks import LineChecks, line_checks, rebreak_document
from app.core.model import Document, apply_casing
from app.core.resegment import Resegmented, resegment
from app.core.sentences import starts_sentence
from app.formats import format_of, write_document
from app.formats.conversion import left_out
from app.formats.scc import ROW_COLUMNS
from app.services.suggestions import written_capital


def sentence_casing(document: Document, language: str | None = None) -> Step:
    """Capitalise the first word of every sentence, and the words ``language`` always spells with
    a capital (English days, months and "I"); capitals already there are never lowered."""
    words = list(document.words())
    edits = tuple(
        WordEdit(index, word, replace(word, text=apply_casing(word.text, capital)))
        for index, word in enumerate(words)
        if (capital := written_capital(word, None, starts_sentence(words, index), language)) is not None
    )
    return Step("Capitalise sentence starts", edits)


def exported_spelling(
    document: Document, index: int, language: str | None, mark_before: str | None = None
) -> str:
    """Word ``index`` as export writes it (``sentence_casing``), from the word before it alone
    (with ``mark_before`` in place of its mark, where given: a proposal shown accepted): the
    editor shows each cue so ("Here's", "I", "Saturday"), a cue at a time."""
    word = document.word(index)
    previous = document.word(index - 1) if index else None
    if previous is not None and mark_before is not None:
        previous = replace(previous, mark=mark_before)
    before = [previous, word] if previous is not None else [word]
    capital = written_capital(word, None, starts_sentence(before, len(before) - 1), language)
    return word.text if capital is None else apply_casing(word.text, capital)


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


def rebreak_lines(
    document: Document, language: str | None = None, limits: CaptionLimits = STYLE_GUIDE_LIMITS
) -> tuple[LineChecks, LineChecks]:
    """Lay out ``document``'s lines again in place within ``limits`` (in ``language``'s way, the
    document's own unless given); the lines' checks before and after."""
    before = line_checks(document, limits)
    rebreak_document(document, limits, language)
    return before, line_checks(document, limits)


def rebreak_summary(before: LineChecks, after: LineChecks) -> str:
    """One line on what re-breaking did to the lines' checks. Breaks after a mark are counted out
    of each total: re-breaking adds breaks to long lines, so two shares would compare different
    totals (one of one is 100%, one of four 25%)."""
    return (
        f"line breaks after a mark {before.breaks_after_a_mark} of {before.line_breaks}"
        f" -> {after.breaks_after_a_mark} of {after.line_breaks};"
        f" cues over the line limits {before.cues_over_limits} -> {after.cues_over_limits}"
    )


def heard_times(measures: Sequence[GapMeasure] | None) -> list[tuple[int, int] | None] | None:
    """Per word, when it is said (start, end in ms) as measured with the media, else None."""
    if not measures:
        return None
    return [
        (m.start_ms, m.end_ms) if m.start_ms is not None and m.end_ms is not None else None for m in measures
    ]


#: How many cues over a limit a re-cut's summary names.
_NAMED_CUES = 8


def _limits_told(checks: CutChecks) -> str:
    counts = (
        (checks.over_speed, "reading speed"),
        (checks.over_duration, "duration"),
        (checks.over_lines, "lines"),
        (checks.short_gaps, "gap to the next"),
    )
    return ", ".join(f"{what} {count}" for count, what in counts if count)


@dataclass(frozen=True)
class RecutReport:
    """What re-cutting did: the cuts' checks before and after, and of the words re-cut, how many
    had their times estimated from their cue (no media heard them, no file gave them)."""

    before: CutChecks
    after: CutChecks
    estimated: int
    words: int = 0
    heard: int = 0  # words whose time was heard (or given by a file)

    def __add__(self, other: RecutReport) -> RecutReport:
        return RecutReport(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def summary(self) -> str:
        """One line: cues before and after, how many end at a sentence end or dangle a sentence's
        start, and whose times were estimated."""
        before, after = self.before, self.after
        told = (
            f"cues re-cut {before.cues} -> {after.cues}; ending at a sentence end {before.sentence_ends}"
            f" -> {after.sentence_ends}; dangling a sentence's start {before.dangling_starts}"
            f" -> {after.dangling_starts}"
        )
        if before.over_any or after.over_any:
            told += f"; over a caption limit {before.over_any} -> {after.over_any}"
        if after.over:
            named = ", ".join(str(number) for number in after.over[:_NAMED_CUES])
            more = f" and {len(after.over) - _NAMED_CUES} more" if len(after.over) > _NAMED_CUES else ""
            told += f" (cue {named}{more}: {_limits_told(after)})"
        elif after.over_any:
            told += f" ({_limits_told(after)})"
        if self.estimated and not self.heard:
            told += "; times estimated from the cues (no media heard the words)"
        elif self.estimated:
            told += f"; times of {self.estimated} of {self.words} words estimated from their cues (not heard)"
        return told


def recut_captions(
    document: Document,
    measures: Sequence[GapMeasure] | None,
    language: str | None = None,
    limits: CaptionLimits = STYLE_GUIDE_LIMITS,
) -> tuple[Document, RecutReport]:
    """``document`` with its cues cut again at sentence ends within ``limits`` (``core.resegment``),
    timed by the words as heard where ``measures`` hold heard times, else by their cues' times
    spread over them."""
    times = heard_times(measures)
    result: Resegmented = resegment(document, times, limits, language)
    checks = cut_checks(document, limits), cut_checks(result.document, limits)
    # Heard, or given by a timing file; a word's own time (a cue of one word) is neither.
    own = [word.start is not None and word.end is not None for word in document.words()]
    heard = sum(1 for t, given in zip(times or (), own, strict=False) if t is not None and not given)
    return result.document, RecutReport(*checks, result.estimated_words, result.cut_words, heard)


@dataclass(frozen=True)
class ExportOptions:
    """How captions are exported: in ``format`` (None: their own), over the source file only with
    ``replace_source``; ``capitalise`` (False: every capital left as it is), ``rebreak`` (each cue's
    lines laid out again, ``core.line_breaks``) and ``recut`` (cues cut again at sentence ends,
    timed by the words' heard times where there are any), within ``limits``."""

    format: str | None = None
    replace_source: bool = False
    capitalise: bool = True
    rebreak: bool = False
    recut: bool = False
    limits: CaptionLimits = STYLE_GUIDE_LIMITS


#: Export as the editor's plain export does it: own format, capitals given, cues and lines kept.
DEFAULT_EXPORT = ExportOptions()


@dataclass(frozen=True)
class ExportSteps:
    """What export's re-break and re-cut did, when asked: the lines' checks before and after,
    and the cuts'."""

    lines: tuple[LineChecks, LineChecks] | None = None
    recut: RecutReport | None = None
    #: What converting into another format left out, or writing SCC changed on screen, a line a
    #: cue (``formats.conversion``).
    left_out: tuple[str, ...] = ()
    #: Whether the captions were written in another format than their own.
    converted: bool = True

    def summaries(self) -> list[str]:
        """A line on the re-cut, then one on the re-break, then one on what a conversion left
        out, as export tells them."""
        told = [self.recut.summary()] if self.recut is not None else []
        if self.lines is not None:
            told.append(f"lines re-broken: {rebreak_summary(*self.lines)}")
        if self.left_out:
            shown = "; ".join(self.left_out[:3])
            more = f" (and {len(self.left_out) - 3} more)" if len(self.left_out) > 3 else ""
            told.append(f"{'converted' if self.converted else 'written'}: {shown}{more}")
        return told


@dataclass(frozen=True, kw_only=True)
class Exported(ExportSteps):
    """Where captions were written, and what re-breaking or re-cutting them did."""

    path: Path


def format_limits(limits: CaptionLimits, format: str) -> CaptionLimits:
    """``limits`` as captions in ``format`` can hold them: an SCC (CEA-608) row holds 32
    characters."""
    if format == "scc":
        return replace(limits, max_line_chars=min(limits.max_line_chars, ROW_COLUMNS))
    return limits


def exported_document(
    document: Document,
    language: str | None,
    options: ExportOptions = DEFAULT_EXPORT,
    measures: Sequence[GapMeasure] | None = None,
    target: Path | str | None = None,
) -> tuple[Document, ExportSteps]:
    """A copy of ``document`` as ``export_captions`` writes it (``options``) to ``target``:
    capitalised, re-cut by ``measures``' heard times and re-broken as asked; and what the re-cut
    and re-break did."""
    exported = as_exported(document, language, options.capitalise)
    format = options.format or (format_of(Path(target)) if target is not None else document.format)
    limits = format_limits(options.limits, format)
    cuts = None
    if options.recut:
        exported, cuts = recut_captions(exported, measures, language, limits)
    checks = rebreak_lines(exported, language, limits) if options.rebreak else None
    return exported, ExportSteps(checks, cuts)


def export_captions(
    document: Document,
    target: Path | str,
    language: str | None,
    options: ExportOptions = DEFAULT_EXPORT,
    measures: Sequence[GapMeasure] | None = None,
) -> Exported:
    """Write ``document`` as exported (``exported_document``) to ``target``, atomically; over the
    source file only with ``options.replace_source``."""
    exported, steps = exported_document(document, language, options, measures, target)
    format = options.format or format_of(Path(target))
    lost = tuple(left_out(exported, format))
    write_document(exported, target, format=options.format, replace_source=options.replace_source)
    converted = format != document.format
    return Exported(
        lines=steps.lines, recut=steps.recut, left_out=lost, converted=converted, path=Path(target)
    )
