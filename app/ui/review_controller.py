"""Going through the gaps and deciding them: what the review keys and clicks do."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QItemSelectionModel
from PySide6.QtWidgets import QAbstractItemView

from app.core.errors import PunctumError
from app.core.history import CueEdit, Step, SuggestionEdit
from app.core.model import Source, Status
from app.core.triage import ReviewRow, TriagePolicy
from app.services.review import ReviewSession
from app.services.typography import render_mark
from app.ui.dialogs import RecutPreviewDialog, ask_confidence, ask_text
from app.ui.models import ID_ROLE, CueModel
from app.ui.style_actions import StyleActions
from app.ui.triage_view import (
    gap_counts,
    rereading_told,
    settled_heading,
    steps_between,
    triage_text,
)

if TYPE_CHECKING:
    from app.services.captions_export import RecutReport
    from app.ui.shell import EditorWindow

PLAY_AROUND_GAP_MS = 3000


class ReviewController(StyleActions):
    """Moves through the review list (the triage queue, or every gap) and applies the editor's
    decisions, each saved before the view is refreshed."""

    def __init__(self, window: EditorWindow) -> None:
        self.window = window
        self.lowest_first = False
        self.queue_only = True
        self.settled_only = False  # the gaps triage settled by itself, to check
        #: What the house style had learnt when last looked at (None: not known), so that the
        #: status bar tells the style only when a decision changed what it has learnt.
        self._learnt: list[str] | None = None
        #: The list row of the gap last selected: where to go on from when a decision took that
        #: gap out of the list (X on a gap triage settled), rather than back to the top.
        self._row: int | None = None

    def _rows(self) -> list[ReviewRow]:
        model = self.window.gap_model
        return model.gaps if model is not None else []

    def _position(self) -> int | None:
        """The list row of the current suggestion's gap, when it is in the list."""
        model, current = self.window.gap_model, self.window.current_id
        return model.row_of(current) if model is not None and current is not None else None

    def next_suggestion(self) -> None:
        """The next gap still to decide after the current one, in the list's order."""
        if self.window.session is None:
            return
        rows = self._rows()
        position = self._position()
        if position is not None:
            start = position + 1
        else:  # the current gap has left the list: the one now in its row comes next
            start = self._row if self.window.current_id is not None and self._row is not None else 0
        for gap in rows[start:]:
            if gap.pending or self.settled_only:
                self.select(gap.lead.id)
                return
        # Past the last: back to the first gap still left above, said as such; done only when
        # nothing is left anywhere.
        left = next((gap for gap in rows[:start] if gap.pending), None) if not self.settled_only else None
        if left is not None:
            self.select(left.lead.id)
            self.window.statusBar().showMessage("Nothing left after here: back to the first gap left", 4000)
            return
        message = (
            "Every settled gap checked"
            if self.settled_only
            else "The queue is done"
            if self.queue_only
            else "No gaps left to review"
        )
        self.window.statusBar().showMessage(message, 4000)

    def previous_suggestion(self) -> None:
        """The gap before the current one, decided or not, to look at it again."""
        rows = self._rows()
        if not rows:
            return
        position = self._position()
        if position is None:
            self.select(rows[0].lead.id)
        elif position > 0:
            self.select(rows[position - 1].lead.id)

    def select(self, suggestion_id: int | None) -> None:
        self.window.current_id = suggestion_id
        session, cue_model, gap_model = self.window.session, self.window.cue_model, self.window.gap_model
        if session is None or cue_model is None or gap_model is None:
            return
        cue_model.set_current(suggestion_id)
        if suggestion_id is None:
            self.window.show_evidence(None)
            return
        suggestion = session.document.suggestion(suggestion_id)
        row = cue_model.cue_of_word(suggestion.gap)
        self.window.transcript.scrollTo(
            cue_model.index(row, CueModel.TEXT), QAbstractItemView.ScrollHint.EnsureVisible
        )
        self.window.transcript.selectRow(row)
        list_row = self._row = gap_model.row_of(suggestion_id)
        if list_row is not None:
            list_index = gap_model.index(list_row, 0)
            self.window.gap_view.selectionModel().setCurrentIndex(
                list_index,
                QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
            )
            self.window.gap_view.scrollTo(list_index)
        cue = session.document.cues[row]
        self.window.waveform.show_cue(row)
        self.window.media.seek(cue.start)
        self.window.show_evidence(session.gap_of(suggestion_id))

    def _current(self) -> int | None:
        if self.window.session is None or self.window.current_id is None:
            self.window.statusBar().showMessage("No suggestion selected", 3000)
            return None
        return self.window.current_id

    def _decide(self, decision: Callable[[ReviewSession, int], Step | None]) -> None:
        """Take ``decision`` on the current suggestion (by its id) and go on to the next gap to decide."""
        sid, session = self._current(), self.window.session
        if sid is not None and session is not None and self._run(lambda: decision(session, sid)):
            self.next_suggestion()

    def accept_current(self) -> None:
        """Accept the current gap's lead proposal (with the capital its sentence mark calls for);
        on one accepted already (triage settled it), say so and go on."""
        sid, session = self._current(), self.window.session
        if sid is None or session is None or session.document.suggestion(sid).status is not Status.ACCEPTED:
            self._decide(ReviewSession.accept_gap)
            return
        by = "triage settled it" if sid in session.settled_by_rule() else "it was decided"
        self.window.statusBar().showMessage(f"Accepted already ({by}): it stays; X takes it back", 4000)
        self.next_suggestion()

    def reject_current(self) -> None:
        """Turn down everything proposed for the current gap: no mark, no capital after it."""
        self._decide(ReviewSession.reject_gap)

    def change_mark(self, mark: str) -> None:
        def decision(session: ReviewSession, sid: int) -> Step | None:
            written = render_mark(mark, session.language) if mark else ""
            suggestion = session.document.suggestion(sid)
            if suggestion.casing is not None:
                # On a casing suggestion the key means: this word is followed by that mark.
                return session.set_mark(suggestion.gap, written)
            return session.change_mark(sid, written)

        self._decide(decision)

    def accept_above(self, threshold: float | None = None) -> None:
        session = self.window.session
        if session is None:
            return
        if threshold is None:
            value = ask_confidence(
                self.window.dialog_parent(),
                "Accept above a confidence",
                "Accept every pending suggestion at least this &sure:",
                float(str(self.window.settings.value("review/threshold", 0.9))),
            )
            if value is None:
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
            text = ask_text(self.window.dialog_parent(), "Edit the word", "&Word:", current)
            if text is None:
                return
        new_text = text.strip()
        self._run(lambda: session.edit_word(gap, new_text))

    def undo(self) -> None:
        if self.window.session is not None:
            self._show_step(self._run(self.window.session.undo))

    def redo(self) -> None:
        if self.window.session is not None:
            self._show_step(self._run(self.window.session.redo))

    def _show_step(self, step: Step | None) -> None:
        """After undo or redo, go to the suggestion it touched, so the editor sees what changed."""
        edits = step.edits if step is not None else ()
        touched = (edit.after or edit.before for edit in edits if isinstance(edit, SuggestionEdit))
        shown = next((s for s in touched if s is not None and s.source is not Source.EDITOR), None)
        if shown is not None:
            self.select(shown.id)

    def recut_cues(self) -> None:
        """Preview the cues cut again at sentence ends beside today's; Apply makes it one undoable step."""
        session = self.window.session
        if session is None:
            return
        now, preview, recut = session.recut_preview()
        dialog = RecutPreviewDialog(
            now.cues, preview.cues, recut.summary(), session.limits, self.window.dialog_parent()
        )
        dialog.accepted.connect(lambda: self._apply_recut(recut))
        dialog.open()

    def _apply_recut(self, recut: RecutReport) -> None:
        session = self.window.session
        if session is None:
            return
        step = self._run(session.recut)
        told = recut.summary() if step is not None else "The cues are cut at sentence ends already"
        self.window.statusBar().showMessage(f"{told} (Ctrl+Z undoes it)" if step else told, 8000)

    def _run(self, action: Any) -> Step | None:
        """Apply one decision (saved before it returns), refresh what it touched; errors to a dialog."""
        session = self.window.session
        before = session.history.done if session is not None else ()
        try:
            step: Step | None = action()
        except PunctumError as error:  # what the user asked cannot be done; a bug goes on up
            self.window.show_error("That cannot be done", str(error))
            return None
        except OSError as error:
            self.window.show_error("The decision could not be saved", str(error))
            return None
        if step is not None and self.window.cue_model is not None and self.window.gap_model is not None:
            # The decision and what came with it: the rule's re-reading of the other gaps with the
            # house style is a step of its own, done, undone and redone with the person's.
            touched = [step]
            if session is not None and session is self.window.session:
                touched = steps_between(before, session.history.done) or touched
            cut = any(isinstance(edit, CueEdit) for each in touched for edit in each.edits)
            if cut and self.window.session is not None:
                self.window.cues_cut_again()
            for each in touched:
                self.window.cue_model.changed(each)
            self.window.gap_model.changed(step)
            self.window.cue_model.set_current(self.window.current_id)
            self.window.show_evidence(
                self.window.session.gap_of(self.window.current_id)
                if self.window.session is not None and self.window.current_id is not None
                else None
            )
            if cut:  # the transcript was laid out again: the current cue is shown again
                with contextlib.suppress(KeyError):
                    self.select(self.window.current_id)
        self.window.show_counts()
        if step is not None and session is not None and session is self.window.session:
            then = {id(each) for each in before}
            done = [each for each in session.history.done if id(each) not in then]
            told = [self._tell_style(), rereading_told(done, session, self.window.current_id)]
            said = "; ".join(text for text in told if text)
            if said:
                self.window.statusBar().showMessage(said, 8000)
        return step

    def toggle_order(self) -> None:
        self.lowest_first = not self.lowest_first
        self._show_list("lowest_first", self.lowest_first)
        self.window.statusBar().showMessage(
            "Lowest confidence first" if self.lowest_first else "In queue order", 3000
        )

    def toggle_queue(self) -> None:
        """The triage queue only, or every gap again (the settled ones included)."""
        self.queue_only = not self.queue_only
        self._show_list("show_all", not self.queue_only)
        self.window.statusBar().showMessage(self._queue_told(), 3000)

    def toggle_settled(self) -> None:
        """The gaps triage settled by itself, the least sure first (the surest last), to run
        through: X takes a wrong one back; or the list as it was."""
        self.settled_only = not self.settled_only
        self._show_list("show_settled", self.settled_only)
        session, model = self.window.session, self.window.gap_model
        if self.settled_only and session is not None and model is not None:
            message = settled_heading(gap_counts(session, model.settled))
        else:
            message = self._queue_told()
        self.window.statusBar().showMessage(message, 6000)

    def _queue_told(self) -> str:
        return "The queue: gaps the triage rule left to you" if self.queue_only else "Every gap"

    def _show_list(self, action: str, checked: bool) -> None:
        """Tick the view's ``action`` as ``checked``, rebuild the list in the chosen view and start
        over at its first gap to decide."""
        self.window.actions_by_name[action].setChecked(checked)
        if self.window.gap_model is None:
            return
        self.window.gap_model.set_view(self.queue_only, self.lowest_first, self.settled_only)
        self.window.show_counts()  # the list's heading says what it holds now
        self.window.current_id = None
        self.next_suggestion()

    def settle(self, policy: TriagePolicy) -> None:
        """Triage the file by ``policy`` (re-triaging what an earlier policy settled) and start at
        the head of the queue; one undoable step."""
        session = self.window.session
        if session is None:
            return
        before = len(session.settled_by_rule())
        step = self._run(lambda: session.settle(policy))
        if self.window.gap_model is not None:
            self.window.gap_model.reload()
        settled = session.settled_by_rule()
        if step is not None or before != len(settled):
            self.window.statusBar().showMessage(triage_text(gap_counts(session, settled)), 8000)
        self.window.current_id = None
        self.next_suggestion()

    def play_gap(self) -> None:
        """The 3 seconds around the current gap (when the analysis knows when its word ends)."""
        session = self.window.session
        if session is None or self.window.current_id is None:
            return
        word = session.document.suggestion(self.window.current_id).gap
        measure = session.gap_measure(word)
        if measure is None or measure.end_ms is None:
            self.window.statusBar().showMessage(
                "Not known when this word is spoken; Space plays its cue", 4000
            )
            return
        start = max(0, measure.end_ms - PLAY_AROUND_GAP_MS // 2)
        self._say_if_unheard()
        self.window.media.play_range(start, start + PLAY_AROUND_GAP_MS)

    def _say_if_unheard(self) -> None:
        if (why := self.window.media.unheard()) is not None:
            self.window.statusBar().showMessage(why, 6000)

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
            self._say_if_unheard()
            self.window.media.play_range(cue.start, cue.end)

    def gap_clicked(self, index: Any) -> None:
        assert self.window.gap_model is not None
        self.select(int(self.window.gap_model.data(index, ID_ROLE)))

    def cue_clicked(self, index: Any) -> None:
        if self.window.session is None or self.window.cue_model is None:
            return
        cue = self.window.session.document.cues[index.row()]
        self.window.waveform.show_cue(index.row())
        self.window.media.seek(cue.start)
        first = self.window.cue_model.first_word(index.row())
        words = range(first, first + len(cue.words))
        for gap in self._rows():
            if gap.index in words and gap.pending:
                self.select(gap.lead.id)
                return
