"""Going through the suggestions and deciding them: what the review keys and clicks do."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QItemSelectionModel
from PySide6.QtWidgets import QAbstractItemView, QInputDialog

from app.core.errors import PunctumError
from app.core.history import Step, SuggestionEdit
from app.core.model import Source, Status
from app.services.punctuate import render_mark
from app.ui.models import ID_ROLE, CueModel

if TYPE_CHECKING:
    from app.ui.window import MainWindow


class ReviewController:
    """Moves through the window's suggestions (in reading order, or the least sure first) and
    applies the editor's decisions, each saved before the view is refreshed."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self.lowest_first = False

    def _order(self) -> list[int]:
        if self.window.session is None:
            return []
        return [s.id for s in self.window.session.review_order(self.lowest_first)]

    def next_suggestion(self) -> None:
        """The next pending suggestion after the current one."""
        if self.window.session is None:
            return
        order = self._order()
        start = order.index(self.window.current_id) + 1 if self.window.current_id in order else 0
        for sid in order[start:]:
            if self.window.session.document.suggestion(sid).status is Status.PENDING:
                self.select(sid)
                return
        self.window.statusBar().showMessage("No more pending suggestions after this one", 4000)

    def previous_suggestion(self) -> None:
        """The suggestion before the current one, decided or not, to look at it again."""
        order = self._order()
        if not order:
            return
        if self.window.current_id not in order:
            self.select(order[0])
            return
        position = order.index(self.window.current_id)
        if position > 0:
            self.select(order[position - 1])

    def select(self, suggestion_id: int | None) -> None:
        self.window.current_id = suggestion_id
        if (
            self.window.session is None
            or self.window.cue_model is None
            or self.window.suggestion_model is None
        ):
            return
        self.window.cue_model.set_current(suggestion_id)
        if suggestion_id is None:
            return
        suggestion = self.window.session.document.suggestion(suggestion_id)
        row = self.window.cue_model.cue_of_word(suggestion.gap)
        self.window.transcript.scrollTo(
            self.window.cue_model.index(row, CueModel.TEXT), QAbstractItemView.ScrollHint.EnsureVisible
        )
        self.window.transcript.selectRow(row)
        source_row = self.window.suggestion_model.row_of(suggestion_id)
        list_index = self.window.suggestion_model.index(source_row, 0)
        self.window.suggestion_view.selectionModel().setCurrentIndex(
            list_index,
            QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
        )
        self.window.suggestion_view.scrollTo(list_index)
        cue = self.window.session.document.cues[row]
        self.window.waveform.show_cue(row)
        self.window.media.seek(cue.start)

    def _current(self) -> int | None:
        if self.window.session is None or self.window.current_id is None:
            self.window.statusBar().showMessage("No suggestion selected", 3000)
            return None
        return self.window.current_id

    def accept_current(self) -> None:
        sid, session = self._current(), self.window.session
        if sid is not None and session is not None and self._run(lambda: session.accept(sid)):
            self.next_suggestion()

    def reject_current(self) -> None:
        sid, session = self._current(), self.window.session
        if sid is not None and session is not None and self._run(lambda: session.reject(sid)):
            self.next_suggestion()

    def change_mark(self, mark: str) -> None:
        sid, session = self._current(), self.window.session
        if sid is None or session is None:
            return
        written = render_mark(mark, session.language) if mark else ""
        suggestion = session.document.suggestion(sid)
        if suggestion.casing is not None:
            # On a casing suggestion the key means: this word is followed by that mark.
            if self._run(lambda: session.set_mark(suggestion.gap, written)):
                self.next_suggestion()
        elif self._run(lambda: session.change_mark(sid, written)):
            self.next_suggestion()

    def accept_above(self, threshold: float | None = None) -> None:
        session = self.window.session
        if session is None:
            return
        if threshold is None:
            value, ok = QInputDialog.getDouble(
                self.window,
                "Accept above a confidence",
                "Accept every pending suggestion at least this sure:",
                float(str(self.window.settings.value("review/threshold", 0.9))),
                0.0,
                1.0,
                2,
            )
            if not ok:
                return
            threshold = value
            self.window.settings.setValue("review/threshold", value)
        chosen = threshold
        step = self._run(lambda: session.accept_above(chosen))
        accepted = sum(1 for e in step.edits if isinstance(e, SuggestionEdit)) if step else 0
        self.window.statusBar().showMessage(
            f"Accepted {accepted} suggestions at least {threshold:.2f} sure", 5000
        )

    def edit_word(self, text: str | None = None) -> None:
        sid, session = self._current(), self.window.session
        if sid is None or session is None:
            return
        gap = session.document.suggestion(sid).gap
        if text is None:
            current = session.document.word(gap).text
            text, ok = QInputDialog.getText(self.window, "Edit the word", "Word:", text=current)
            if not ok:
                return
        new_text = text.strip()
        self._run(lambda: session.edit_word(gap, new_text))

    def undo(self) -> None:
        if self.window.session is not None:
            step = self._run(self.window.session.undo)
            self._show_step(step)

    def redo(self) -> None:
        if self.window.session is not None:
            step = self._run(self.window.session.redo)
            self._show_step(step)

    def _show_step(self, step: Step | None) -> None:
        """After undo or redo, go to the suggestion it touched, so the editor sees what changed."""
        if step is None:
            return
        for edit in step.edits:
            if isinstance(edit, SuggestionEdit) and (edit.after or edit.before):
                suggestion = edit.after or edit.before
                assert suggestion is not None
                if suggestion.source is not Source.EDITOR:
                    self.select(suggestion.id)
                    return

    def _run(self, action: Any) -> Step | None:
        """Apply one decision (saved before it returns), refresh what it touched; errors to a dialog."""
        try:
            step: Step | None = action()
        except (PunctumError, KeyError, IndexError) as error:
            self.window.show_error("That cannot be done", str(error))
            return None
        except OSError as error:
            self.window.show_error("The decision could not be saved", str(error))
            return None
        if (
            step is not None
            and self.window.cue_model is not None
            and self.window.suggestion_model is not None
        ):
            self.window.cue_model.changed(step)
            self.window.suggestion_model.changed(step)
            self.window.cue_model.set_current(self.window.current_id)
        self.window._after_change()
        return step

    def toggle_order(self) -> None:
        self.lowest_first = not self.lowest_first
        self.window.actions_by_name["lowest_first"].setChecked(self.lowest_first)
        # Start over in the new order: the least sure pending suggestion, or the first in the text.
        self.window.current_id = None
        self.next_suggestion()
        self.window.statusBar().showMessage(
            "Lowest confidence first" if self.lowest_first else "In reading order", 3000
        )

    def play_current_cue(self) -> None:
        if self.window.session is None:
            return
        row = self.window.transcript.currentIndex().row()
        if row < 0 and self.window.current_id is not None:
            assert self.window.cue_model is not None
            row = self.window.cue_model.cue_of_word(
                self.window.session.document.suggestion(self.window.current_id).gap
            )
        if row >= 0:
            cue = self.window.session.document.cues[row]
            self.window.media.play_range(cue.start, cue.end)

    def suggestion_clicked(self, index: Any) -> None:
        assert self.window.suggestion_model is not None
        self.select(int(self.window.suggestion_model.data(index, ID_ROLE)))

    def cue_clicked(self, index: Any) -> None:
        if self.window.session is None or self.window.cue_model is None:
            return
        cue = self.window.session.document.cues[index.row()]
        self.window.waveform.show_cue(index.row())
        self.window.media.seek(cue.start)
        first = self.window.cue_model.first_word(index.row())
        gaps = range(first, first + len(cue.words))
        for sid in self._order():
            suggestion = self.window.session.document.suggestion(sid)
            if suggestion.gap in gaps and suggestion.status is Status.PENDING:
                self.select(sid)
                return
