"""The slow work behind a file: its audio and its suggestions, in the background process."""

from __future__ import annotations

import dataclasses
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from app.core.model import Evidence
from app.services.analysis import Analysis, AnalysisRequest
from app.services.suggestions import TextReading
from app.services.waveform import Waveform
from app.ui import startup_log
from app.ui.shortcuts import saved_audio_use
from app.ui.triage_view import gaps

if TYPE_CHECKING:
    from PySide6.QtWidgets import QProgressDialog

    from app.ui.shell import EditorWindow


class AnalysisController:
    """Reads a file's audio and makes its suggestions off the window's thread, with progress in
    the status bar; results are stored from the worker thread (the window's process is the one
    that writes the project)."""

    def __init__(self, window: EditorWindow) -> None:
        self.window = window
        self.preparing: QProgressDialog | None = None  # shown while a first start prepares the model

    def read_audio(self, media: Path) -> None:
        session = self.window.session
        assert session is not None

        def done(waveform: Waveform) -> None:
            if session is not self.window.session:
                return
            self.window.waveform.set_waveform(waveform)
            if not session.analysed:
                self.suggest(with_media=True)

        def failed(reason: str) -> None:
            self.window.waveform.set_waveform(None, "The audio could not be read")
            self.window.show_error("The audio cannot be read", reason)
            if session is self.window.session and not session.analysed:
                self.suggest(with_media=False)

        def cancelled() -> None:
            self.window.waveform.set_waveform(None, "Cancelled")
            self.window.statusBar().showMessage("Cancelled; Review ▸ Make suggestions starts again", 8000)

        work = partial(self.window.process.read_audio, media)
        self.window.worker.submit("audio", work, done, failed, cancelled)

    def suggest(self, with_media: bool) -> None:
        """The model's suggestions, read as Settings asks (``saved_audio_use``). With the media and
        the recogniser listening, the text model's first (shown in a second or two), then the
        recogniser's along the words: that second pass reuses the first's text reading rather than
        run the text model again, and the decisions made meanwhile are replayed on its suggestions."""
        session = self.window.session
        assert session is not None
        request = session.analysis_request(saved_audio_use(self.window.settings))
        if not with_media:
            request = dataclasses.replace(request, media=None)
        first, *then = request.passes()
        self._analyse(first, listen_next=then[0] if then else None)

    def _analyse(
        self,
        request: AnalysisRequest,
        listen_next: AnalysisRequest | None = None,
        reading: TextReading | None = None,
    ) -> None:
        """Analyse in the background process and show the suggestions; then ``listen_next``, with
        this analysis's text reading."""
        session = self.window.session
        assert session is not None
        listening = request.listens
        work = partial(self.window.process.analyse, request, self.window.model, reading=reading)
        started = time.monotonic()

        def done(analysis: Analysis) -> None:
            if session is not self.window.session:
                return
            # The window's project is the file's one writer (the background process and this
            # thread write nothing): a few milliseconds for the sample's rows.
            session.store_analysis(analysis)
            self.window.refresh_views()
            seconds = time.monotonic() - started
            # In gaps, as the header counts them (a mark and the capital after it are one gap).
            message = f"Suggestions for {gaps(len(session.gaps()))} in {seconds:.1f} s"
            if listening:
                message += (
                    ", refined by listening" if analysis.report.evidence == Evidence.HEARD else ", not heard"
                )
            elif listen_next is not None:
                message += "; listening along the words to refine them"
            if session.carried is not None:
                message += f"; {session.carried.told()}"
            warnings = analysis.report.warnings
            self.window.statusBar().showMessage(message + "".join(f"; note: {w}" for w in warnings), 10000)
            self.window.after_analysis()
            startup_log.note("suggestions_heard" if listening else "suggestions_shown")
            if listen_next is not None:
                self._analyse(listen_next, reading=analysis.reading)

        def failed(reason: str) -> None:
            self.window.show_error("No suggestions from the model", reason)

        def cancelled() -> None:
            self.window.statusBar().showMessage("Cancelled; Review ▸ Make suggestions starts again", 8000)

        self.window.worker.submit("suggest", work, done, failed, cancelled)

    def make_suggestions(self) -> None:
        """Run the analysis again when it was cancelled or failed; a finished one is kept."""
        session = self.window.session
        if session is None or self.window.worker.busy:
            return
        if session.analysed:
            self.window.statusBar().showMessage("This file has its suggestions already", 4000)
            return
        media = session.entry.media_path
        if media is not None and media.is_file() and self.window.waveform.waveform is None:
            self.read_audio(media)
        else:
            self.suggest(with_media=media is not None and media.is_file())

    #: The background process's message when a first start prepares the model (app.ml.export).
    PREPARING = "Preparing the model"

    def show_progress(self, text: str, fraction: float) -> None:
        if text.startswith(self.PREPARING):
            self._show_preparing()
        else:
            self._hide_preparing()
        self.window.progress_label.setText(text)
        if fraction < 0:  # a stage that cannot tell how far it is: the bar runs to and fro
            self.window.progress.setRange(0, 0)
        else:
            self.window.progress.setRange(0, 100)
            self.window.progress.setValue(int(fraction * 100))
        # Nothing is left to cancel once a step is done ("Done" at 100%, before its results show).
        self.window.cancel_button.setVisible(self.window.worker.busy and fraction < 1.0)

    def _show_preparing(self) -> None:
        """A first start spends some 20 s preparing the model: say so in a window of its own, not
        only in the status bar, so the wait is not taken for a hang."""
        from PySide6.QtWidgets import QProgressDialog

        if self.preparing is None:
            dialog = QProgressDialog(
                "Preparing the punctuation model for this computer.\n"
                "This happens once and takes about 20 seconds.",
                "",
                0,
                0,
                self.window.dialog_parent(),
            )
            dialog.setWindowTitle("Punctum: first start")
            dialog.setCancelButton(None)
            dialog.setMinimumDuration(0)
            self.preparing = dialog
        self.preparing.show()

    def _hide_preparing(self) -> None:
        if self.preparing is not None:
            self.preparing.hide()

    def show_busy(self, busy: bool) -> None:
        if not busy:
            self._hide_preparing()
        for widget in (self.window.progress_label, self.window.progress, self.window.cancel_button):
            widget.setVisible(busy)
