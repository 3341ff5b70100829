"""Item models over a review session: the transcript (one row per cue) and the review list (one
row per gap).

Views ask only for the rows they paint, so a two-hour file with thousands of cues opens as fast as a
short one: rows are rendered on demand and cached until a decision touches them.
"""

from __future__ import annotations

import contextlib
import html
from typing import Any, NamedTuple

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor

from app.core.checks import CaptionLimits, CueCheck, check_cue
from app.core.history import CueEdit, Step, SuggestionEdit, WordEdit
from app.core.model import Casing, Cue, Document, Slot, Source, Status, Suggestion, apply_casing, first_words
from app.core.triage import ReviewRow
from app.services.captions_export import exported_spelling
from app.services.documents import format_duration
from app.services.review import ReviewSession
from app.ui.triage_view import settled_reason, settled_sureness

AnyIndex = QModelIndex | QPersistentModelIndex
ID_ROLE = Qt.ItemDataRole.UserRole + 1

SOURCE_COLOURS = {Source.REFERENCE: "#1f5fbf", Source.MODEL: "#202020", Source.EDITOR: "#1d7a36"}
PROBLEM_COLOUR = QColor("#f6c7c3")


#: A review row's state at a glance (the list's first column): its sign, what it means (on hover),
#: its colour. A tick once done; a sign where the reference and the model disagree.
class RowState(NamedTuple):
    sign: str
    meaning: str
    colour: QColor | None


GAP_STATES: dict[str, RowState] = {
    "to review": RowState("•", "To review", None),
    "disagree": RowState("≠", "The reference and the model disagree", QColor("#f4c7c3")),
    "accepted": RowState("✓", "Accepted by you", QColor("#cfe8d4")),
    "changed": RowState("✎", "Another mark put in by you", QColor("#e6dcf2")),
    "turned down": RowState("✗", "Turned down by you", QColor("#eeeeee")),
    "settled by rule": RowState("✓", "Settled by the triage rule", QColor("#dde9f5")),
}
#: Done rows step back, so the pending ones stand out.
DONE_TEXT = QColor("#8a8a8a")


def confidence_colour(confidence: float) -> QColor:
    """Red for unsure, through yellow, to green for sure; light enough to read text on."""
    share = min(1.0, max(0.0, (confidence - 0.4) / 0.6))
    return QColor.fromHsv(int(share * 120), 110, 255)


def timestamp(millis: int) -> str:
    return format_duration(millis)[:-2]  # tenths of a second are enough to find a cue


class _Table(QAbstractTableModel):
    """A flat table whose columns are named by ``HEADERS``."""

    HEADERS: tuple[str, ...] = ()

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.HEADERS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.HEADERS[section]
        return None


class CueModel(_Table):
    """The transcript: number, start, text with its suggestions highlighted, and the caption checks."""

    HEADERS = ("#", "Start", "Text", "CPS", "Line", "Lines")
    TEXT, CPS, LINE, LINES = 2, 3, 4, 5

    def __init__(self, session: ReviewSession, limits: CaptionLimits) -> None:
        super().__init__()
        self.session = session
        self.limits = limits
        self.current_id: int | None = None
        self._html: dict[int, str] = {}
        self._checks: dict[int, CueCheck] = {}
        self._cue_of_word: list[int] = []
        self._first_words: list[int] = []
        self._by_gap: dict[int, list[Suggestion]] = {}
        self.reload()

    def reload(self) -> None:
        self.beginResetModel()
        document = self.session.document
        self._cue_of_word = [n for n, cue in enumerate(document.cues) for _ in cue.words]
        self._first_words = first_words(document.cues)
        self._language = self.session.language  # read once: each cue shown spells by it
        self._index_suggestions()
        self._html.clear()
        self._checks.clear()
        self.endResetModel()

    def _index_suggestions(self) -> None:
        self._by_gap = {}
        for suggestion in self.session.document.suggestions:
            self._by_gap.setdefault(suggestion.gap, []).append(suggestion)

    def cue_of_word(self, word: int) -> int:
        return self._cue_of_word[word]

    def first_word(self, row: int) -> int:
        return self._first_words[row]

    def set_limits(self, limits: CaptionLimits) -> None:
        self.limits = limits
        self._checks.clear()
        self._refresh_rows(range(self.rowCount()))

    def set_current(self, suggestion_id: int | None) -> None:
        rows = set()
        for sid in (self.current_id, suggestion_id):
            if sid is not None:
                with contextlib.suppress(KeyError):  # an undone editor mark is gone
                    rows.add(self._cue_of_word[self.session.document.suggestion(sid).gap])
        self.current_id = suggestion_id
        self._refresh_rows(rows)

    def changed(self, step: Step) -> None:
        """Refresh the cues a step touched (all of them when it cut them again)."""
        if any(isinstance(edit, CueEdit) for edit in step.edits):
            self.reload()
            return
        self._index_suggestions()
        words = [edit.index for edit in step.edits if isinstance(edit, WordEdit)]
        touched = (edit.after or edit.before for edit in step.edits if isinstance(edit, SuggestionEdit))
        words += [suggestion.gap for suggestion in touched if suggestion is not None]
        # A mark at a cue's end decides the capital of the next cue's first word.
        words += [word + 1 for word in words if word + 1 < len(self._cue_of_word)]
        self._refresh_rows({self._cue_of_word[word] for word in words})

    def _refresh_rows(self, rows: Any) -> None:
        for row in rows:
            self._html.pop(row, None)
            self._checks.pop(row, None)
            self.dataChanged.emit(self.index(row, 0), self.index(row, len(self.HEADERS) - 1))

    # --- Qt model ---------------------------------------------------------------------------

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.session.document.cues)

    def check(self, row: int) -> CueCheck:
        if row not in self._checks:
            self._checks[row] = check_cue(self.session.document.cues[row], self.limits)
        return self._checks[row]

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, column = index.row(), index.column()
        cue = self.session.document.cues[row]
        if role == Qt.ItemDataRole.DisplayRole:
            if column == 0:
                return str(cue.index if cue.index is not None else row + 1)
            if column == 1:
                return timestamp(cue.start)
            if column == self.TEXT:
                if row not in self._html:
                    self._html[row] = self.cue_html(row, cue)
                return self._html[row]
            check = self.check(row)
            if column == self.CPS:
                return f"{check.cps:.1f}" if check.cps != float("inf") else "∞"
            if column == self.LINE:
                return str(check.longest_line)
            return str(check.lines)
        if role == Qt.ItemDataRole.BackgroundRole and column >= self.CPS:
            check = self.check(row)
            over = (
                (column == self.CPS and self.limits.max_cps is not None and check.cps > self.limits.max_cps)
                or (column == self.LINE and check.longest_line > self.limits.max_line_chars)
                or (column == self.LINES and check.lines > self.limits.max_lines)
            )
            return PROBLEM_COLOUR if over else None
        if role == Qt.ItemDataRole.ToolTipRole and column >= self.CPS:
            problems = self.check(row).problems
            return "\n".join(problems) if problems else "Within the limits"
        if role == Qt.ItemDataRole.TextAlignmentRole and column != self.TEXT:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
        return None

    def cue_html(self, row: int, cue: Cue) -> str:
        """The cue as written, with each pending suggestion shown in place on its confidence colour."""
        first_word = self._first_words[row]
        parts: list[str] = []
        for piece in cue.layout:
            if isinstance(piece, str):
                text = html.escape(piece).replace("\n", "<br>")
                parts.append(f'<span style="color:#999">{text}</span>' if piece.strip() else text)
                continue
            slot, position = piece
            gap = first_word + position
            word = cue.words[position]
            pending = [s for s in self._by_gap.get(gap, ()) if s.status is Status.PENDING]
            if slot is Slot.WORD:
                casing = next((s for s in pending if s.casing is not None), None)
                # As export will write it: a capital it gives (a sentence start, "I") shows here.
                spelt = word.text if casing else exported_spelling(self.session.document, gap, self._language)
                text = html.escape(word.prefix + spelt)
                parts.append(self._highlight(text, casing) if casing else text)
            else:
                parts.append(self._mark_html(gap, word.mark, [s for s in pending if s.casing is None]))
        return "".join(parts)

    def _mark_html(self, gap: int, mark: str, pending: list[Suggestion]) -> str:
        accepted = [
            s
            for s in self._by_gap.get(gap, ())
            if s.status is Status.ACCEPTED and s.casing is None and s.mark == mark
        ]
        written = html.escape(mark)
        if written and accepted:
            written = f'<span style="color:{SOURCE_COLOURS[accepted[-1].source]}">{written}</span>'
        if not pending:
            return written
        # The reference is what was said: its proposal shows before the model's.
        best = max(
            pending, key=lambda s: (s.id == self.current_id, s.source is Source.REFERENCE, s.confidence)
        )
        proposal = html.escape(best.mark.strip()) or "∅"
        removed = f"<s>{html.escape(mark)}</s>" if mark else ""
        return removed + self._highlight(f"&#8239;{proposal}&#8239;", best)

    def _highlight(self, text: str, suggestion: Suggestion) -> str:
        colour = confidence_colour(suggestion.confidence).name()
        style = f"background-color:{colour};color:{SOURCE_COLOURS[suggestion.source]}"
        if suggestion.id == self.current_id:
            text = f"<b><u>{text}</u></b>"
        return f'<span style="{style}">{text}</span>'


class GapModel(_Table):
    """The review list: one row per gap, with what the reference and the model proposed for it.

    Shows the triage queue (disagreements first, then the least sure) or every gap in reading
    order; ``lowest_first`` orders either by how sure the surest proposal is. What triage settled
    (``settled_only``) comes the least sure first, with why each gap settled in a column of its own.
    """

    HEADERS = ("", "Cue", "In context", "Reference", "Model (its confidence)", "Settled because")
    STATE, CUE, CONTEXT, REFERENCE, MODEL, WHY = range(6)

    def __init__(self, session: ReviewSession, cue_of_word: Any) -> None:
        super().__init__()
        self.session = session
        self._cue_of_word = cue_of_word
        self.queue_only = True
        self.lowest_first = False
        self.settled_only = False
        self._rows: list[ReviewRow] = []
        self._row_of: dict[int, int] = {}  # every suggestion id of a row -> the row
        #: The suggestions the triage rule settled that still stand, as the list last read them.
        self.settled: set[int] = set()
        self.reload()

    def _gaps(self) -> list[ReviewRow]:
        """The rows of the chosen view; the rule's settlement (a walk of the history) read once."""
        self.settled = self.session.settled_by_rule()
        if self.settled_only:  # what the rule settled, to check quickly: the least sure first
            settled = [g for g in self.session.gaps() if any(s.id in self.settled for s in g.suggestions)]
            return sorted(settled, key=lambda g: (settled_sureness(g, self.settled), g.index))
        gaps = self.session.queue(self.settled) if self.queue_only else self.session.gaps()
        if self.lowest_first:
            gaps.sort(key=lambda g: (g.queue_key[1], g.index))
        return gaps

    def reload(self) -> None:
        self.beginResetModel()
        self._language = self.session.language  # read once: each row spells by it
        self._rows = self._gaps()
        self._index()
        self.endResetModel()

    def _index(self) -> None:
        self._row_of = {s.id: row for row, gap in enumerate(self._rows) for s in gap.suggestions}

    def set_view(self, queue_only: bool, lowest_first: bool, settled_only: bool = False) -> None:
        self.queue_only, self.lowest_first, self.settled_only = queue_only, lowest_first, settled_only
        self.reload()

    def changed(self, step: Step) -> None:
        """After a decision: the same rows refreshed in place, or the list rebuilt when the rule
        changed which gaps are in it (or an editor's mark joined a gap)."""
        gaps = self._gaps()
        if [_key(g) for g in gaps] != [_key(g) for g in self._rows]:
            self.reload()
            return
        self._rows = gaps
        self._index()
        if self._rows:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self._rows) - 1, self.columnCount() - 1))

    @property
    def gaps(self) -> list[ReviewRow]:
        return list(self._rows)

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008, N802
        """Why a gap settled is a column of the settled list only."""
        return 0 if parent.isValid() else len(self.HEADERS) - (0 if self.settled_only else 1)

    def row_of(self, suggestion_id: int) -> int | None:
        return self._row_of.get(suggestion_id)

    def gap(self, row: int) -> ReviewRow:
        return self._rows[row]

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        gap = self._rows[index.row()]
        column = index.column()
        if role == ID_ROLE:
            return gap.lead.id
        if role == Qt.ItemDataRole.DisplayRole:
            if column == self.STATE:
                return GAP_STATES[self.status(gap)].sign
            if column == self.CUE:
                return self._cue_of_word(gap.index) + 1
            if column == self.CONTEXT:
                return gap_context(self.session.document, gap, language=self._language)
            if column == self.WHY:
                return settled_reason(gap, self.settled)[0]
            return proposal_text(gap, Source.REFERENCE if column == self.REFERENCE else Source.MODEL)
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == self.CONTEXT:
                return gap_context(self.session.document, gap, CONTEXT_WORDS * 3, self._language)
            if column == self.WHY:
                return settled_reason(gap, self.settled)[1]
            return GAP_STATES[self.status(gap)].meaning
        if role == Qt.ItemDataRole.TextAlignmentRole and column == self.STATE:
            return Qt.AlignmentFlag.AlignCenter
        if role == Qt.ItemDataRole.BackgroundRole:
            if column == self.STATE:
                return GAP_STATES[self.status(gap)].colour
            if column == self.MODEL and gap.pending:
                model = gap.by(Source.MODEL, pending=False)
                return confidence_colour(model.confidence) if model is not None else None
        if role == Qt.ItemDataRole.ForegroundRole and not gap.pending:
            return DONE_TEXT
        return None

    def status(self, gap: ReviewRow) -> str:
        """ "to review", "disagree", "settled by rule", or what the person did: "accepted" a
        proposal, "changed" it for a mark of their own, or "turned down" every one."""
        if gap.pending:
            return "disagree" if gap.disagreement else "to review"
        if any(s.id in self.settled for s in gap.suggestions):
            return "settled by rule"
        accepted = [s for s in gap.suggestions if s.status is Status.ACCEPTED]
        if not accepted:
            return "turned down"
        return "changed" if any(s.source is Source.EDITOR for s in accepted) else "accepted"


#: Words shown on each side of a gap in the review list.
CONTEXT_WORDS = 4


def gap_context(
    document: Document, gap: ReviewRow, each_side: int = CONTEXT_WORDS, language: str | None = None
) -> str:
    """The words around a gap, spelt as export writes them, with its proposal in place (once
    decided, what was decided), in brackets: "…try to fix them together[.] nobody pays…" (a
    capital: "…arrived with [Rosa] a…"). The words after come last, so that a narrow column cuts
    them first and keeps the gap."""
    lead = gap.lead
    capital_row = not gap.marks
    last = gap.index - 1 if capital_row else gap.index
    first = max(0, last - each_side + 1)

    def shown(index: int) -> str:
        word = document.word(index)
        # The word after a proposed mark as it would be written with the mark in.
        proposed = lead.mark if gap.pending and not capital_row and index == gap.index + 1 else None
        return f"{word.prefix}{exported_spelling(document, index, language, proposed)}{word.mark}"

    before = [shown(i) for i in range(first, last + 1)]
    word = document.word(gap.index)
    if capital_row:
        spelt = apply_casing(word.text, lead.casing or Casing.CAPITALISED) if gap.pending else word.text
        before.append(f"[{word.prefix}{spelt}]{word.mark}")
    else:
        mark = lead.mark if gap.pending else word.mark
        before[-1] = (
            f"{word.prefix}{exported_spelling(document, gap.index, language)}[{mark.strip() or 'no mark'}]"
        )
    stop = min(document.word_count, gap.index + 1 + each_side)
    after = [shown(i) for i in range(gap.index + 1, stop)]
    opening = "…" if first > 0 else ""
    closing = "…" if stop < document.word_count else ""
    return opening + " ".join(before + after) + closing


def proposal_text(gap: ReviewRow, source: Source) -> str:
    """What ``source`` proposed for the gap, as the list and the evidence panel show it."""
    surest = gap.by(source, pending=False)
    if surest is None:
        return ""
    if surest.casing is not None:
        shown = {"upper": "UPPER", "lower": "lower"}.get(surest.casing.value, "Capital")
    else:
        shown = surest.mark.strip() or "no mark"
    return shown if source is Source.REFERENCE else f"{shown} {surest.confidence:.2f}"


def _key(gap: ReviewRow) -> tuple[int, bool, int]:
    """A row as ``GapModel.changed`` compares it: its gap, a mark's row or a capital's, and how many
    proposals it holds."""
    return (gap.index, bool(gap.marks), len(gap.suggestions))
