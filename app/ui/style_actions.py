"""The house style's part of the review controller: what the style has learnt, said after a
decision that changed it and shown on asking (Review menu), and its reset, asked first."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QMessageBox

from app.core.errors import PunctumError
from app.core.history import Step
from app.services.style_files import StyleStatus
from app.ui.dialogs import confirm, message_box
from app.ui.triage_view import style_told

if TYPE_CHECKING:
    from app.ui.shell import EditorWindow


class StyleActions:
    """The house-style part of a ``ReviewController``."""

    window: EditorWindow
    #: What the style had learnt at the last look (None: not looked yet).
    _learnt: list[str] | None

    def _run(self, action: Callable[[], Step | None]) -> Step | None:
        raise NotImplementedError

    def next_suggestion(self) -> None:
        raise NotImplementedError

    def _style_now(self) -> tuple[list[str], str] | None:
        """What the open file's house style has learnt, and its one-line summary (None: no file,
        a session that does not learn, or a project whose style cannot be read)."""
        session = self.window.session
        if session is None or not session.learns:
            return None
        try:
            style = session.style()
        except PunctumError:  # a damaged style in the project: the review goes on without a word
            return None
        told = StyleStatus.of(style, session.capitals_line())  # as status says it, capitals too
        return told.learnt, told.summary

    def note_style(self) -> None:
        """Remember what the style has learnt as it stands (a file just opened), saying nothing."""
        now = self._style_now()
        self._learnt = now[0] if now is not None else None

    def _tell_style(self) -> str:
        """After a decision: the style's summary, to say in the status bar, when what it has
        learnt changed with it (compared with the last look; the count alone says nothing new)."""
        now = self._style_now()
        if now is None:
            return ""
        learnt, summary = now
        changed = self._learnt is not None and learnt != self._learnt
        self._learnt = learnt
        return summary[:1].upper() + summary[1:] if changed else ""

    def show_style(self) -> None:
        """Review ▸ What the house style has learnt: the style's summary and every lesson, with
        the gaps of this file it learnt from, as ``punctum style`` and ``status`` say them."""
        session = self.window.session
        if session is None:
            return
        text = style_told(self._style_now(), session.decided_by_you())
        message_box(self.window.dialog_parent(), "The house style", text, QMessageBox.Icon.Information).open()

    def ask_reset_style(self) -> None:
        """Review ▸ Reset the house style: asked first, as what it learnt cannot be had back."""
        session = self.window.session
        if session is None:
            return
        now = self._style_now()
        learnt = f" ({now[1]})" if now is not None else ""
        confirm(
            self.window.dialog_parent(),
            "Reset the house style",
            f"Forget what the house style has learnt{learnt}, and any style file the project was"
            " given? Your decisions stay as they are; the gaps not yet decided are read again as the"
            " model reads them, and your decisions from now on teach the style afresh.",
            "&Reset",
            self.reset_style,
        )

    def reset_style(self) -> None:
        """Forget what the house style learnt, read the undecided gaps again as the model does (the
        rule settling what it may by its policy) and start again at the head of the list."""
        session = self.window.session
        if session is None:
            return
        self._run(session.reset_style)  # an error is told in a dialog; the list shows what stands
        if self.window.gap_model is not None:
            self.window.gap_model.reload()
        self.note_style()
        queue = sum(gap.pending for gap in session.queue())
        self.window.statusBar().showMessage(
            f"House style reset: the gaps not yet decided are read as the model reads them; {queue} gaps"
            " left to you",
            8000,
        )
        self.window.current_id = None
        self.next_suggestion()
