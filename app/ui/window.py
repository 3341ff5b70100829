"""The main window: welcome screen, then the review of one caption file against its video.

Everything it does goes through ``ReviewSession`` (the same service the command line uses); slow work
goes to the ``Worker``. Decisions are recorded as they are made, so there is nothing to save. The
pages' widgets are built in ``app.ui.pages``; the window connects them to its controllers.
"""

from __future__ import annotations

import atexit
import bisect
import functools
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QStackedWidget,
    QWidget,
)

from app.core.audio_use import AudioUse
from app.core.triage import ReviewRow, TriagePolicy
from app.services.about import about
from app.services.projects import UNRECORDED_RECUT_WARNING
from app.services.review import ReviewSession
from app.services.worker_process import WorkerProcess
from app.ui.about import about_html
from app.ui.analysis_controller import AnalysisController
from app.ui.dialogs import LimitsDialog, ShortcutDialog, TriagePolicyDialog, message_box
from app.ui.file_controller import FileController
from app.ui.help_overlay import HelpOverlay
from app.ui.models import CueModel, GapModel
from app.ui.pages import EditorPage, WelcomePage
from app.ui.review_controller import ReviewController
from app.ui.shortcuts import (
    COMMANDS,
    MARK_COMMANDS,
    MENUS,
    save_audio_use,
    save_limits,
    save_policy,
    saved_audio_use,
    saved_keys,
    saved_limits,
    saved_policy,
    saved_rebreak,
    saved_recut,
    show_recut_on_export,
)
from app.ui.tasks import Worker
from app.ui.triage_view import show_counts


@functools.cache
def shared_process() -> WorkerProcess:
    """One background process for the application: every window and file reuses its loaded model."""
    process = WorkerProcess()
    atexit.register(process.stop)
    return process


def key_sequences(key: str) -> list[QKeySequence]:
    """A key and, for a symbol typed with Shift on some keyboards ("?" is Shift+/ in English,
    "." is Shift+; in German), the same symbol with Shift, so either way of typing it works."""
    sequences = [QKeySequence(key)] if key else []
    if len(key) == 1 and not key.isalnum() and not key.isspace():
        sequences.append(QKeySequence(f"Shift+{key}"))
    return sequences


class MainWindow(QMainWindow):
    def __init__(self, settings: QSettings | None = None, model: str | None = None):
        super().__init__()
        self.settings = settings or QSettings("Punctum", "Punctum")
        self.model = model
        self.session: ReviewSession | None = None
        self.cue_model: CueModel | None = None
        self.gap_model: GapModel | None = None
        self.current_id: int | None = None
        self._cue_starts: list[int] = []
        self.last_error: str | None = None
        self.limits = saved_limits(self.settings)
        self.worker = Worker(self)
        self.process = shared_process()
        self.review = ReviewController(self)
        self.analysis = AnalysisController(self)
        self.files = FileController(self)
        self.worker.progress.connect(self.analysis.show_progress)
        self.worker.busy_changed.connect(self.analysis.show_busy)
        self.worker.follow_up_failed.connect(self._follow_up_failed)
        self.actions_by_name: dict[str, QAction] = {}
        self.setWindowTitle("Punctum")
        self.setAcceptDrops(True)
        self.resize(1400, 900)
        self.pages = QStackedWidget(self)
        self.setCentralWidget(self.pages)
        self.pages.addWidget(self._welcome_page())
        self.pages.addWidget(self._editor_page())
        self._status_bar()
        self._menus()
        self.help = HelpOverlay(self)
        self._update_actions()

    # --- building -----------------------------------------------------------------------------

    def _welcome_page(self) -> QWidget:
        page = WelcomePage(self)
        page.sample_button.clicked.connect(self.files.open_sample)
        page.open_button.clicked.connect(lambda: self.files.choose_captions())
        page.project_button.clicked.connect(lambda: self.files.choose_project())
        self.recent_list = page.recent_list
        self.recent_list.itemActivated.connect(lambda item: self.files.open_paths([Path(item.text())]))
        self.files.fill_recent()
        return page

    def _editor_page(self) -> QWidget:
        self.editor_page = page = EditorPage(self)
        self.media, self.gap_view, self.evidence = page.media, page.gap_view, page.evidence
        self.transcript, self.waveform = page.transcript, page.waveform
        self.list_heading, self.counts_label = page.list_heading, page.counts_label
        self.media.position_changed.connect(self._player_moved)
        self.media.failed.connect(lambda text: self.show_error("The media cannot be played", text))
        self.gap_view.clicked.connect(self.review.gap_clicked)
        self.transcript.clicked.connect(self.review.cue_clicked)
        self.waveform.seek_requested.connect(self._seek)
        return page

    def _status_bar(self) -> None:
        bar = self.statusBar()
        self.progress_label = QLabel("")
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(200)
        self.cancel_button = QPushButton("&Cancel")
        self.cancel_button.clicked.connect(self.worker.cancel_all)
        for widget in (self.progress_label, self.progress, self.cancel_button):
            widget.hide()
            bar.addPermanentWidget(widget)

    def _menus(self) -> None:
        keys = saved_keys(self.settings)
        handlers: dict[str, Any] = {
            "open": lambda: self.files.choose_captions(),
            "open_media": lambda: self.files.choose_media(),
            "open_reference": lambda: self.files.choose_reference(),
            "open_project": lambda: self.files.choose_project(),
            "save_project": lambda: self.files.save_project_as(),
            "export": lambda: self.files.export(),
            "quit": self.close,
            "undo": self.review.undo,
            "redo": self.review.redo,
            "edit_word": lambda: self.review.edit_word(),
            "next": self.review.next_suggestion,
            "previous": self.review.previous_suggestion,
            "accept": self.review.accept_current,
            "reject": self.review.reject_current,
            "accept_above": lambda: self.review.accept_above(),
            "suggest": self.analysis.make_suggestions,
            "reset_style": self.review.ask_reset_style,
            "show_style": self.review.show_style,
            "lowest_first": self.review.toggle_order,
            "show_settled": self.review.toggle_settled,
            "show_all": self.review.toggle_queue,
            "play": self.review.play_current_cue,
            "play_gap": self.review.play_gap,
            "triage": self.edit_triage_policy,
            "listen": self.set_listening,
            "rebreak": lambda on: self.settings.setValue("export/rebreak", "true" if on else "false"),
            "recut": lambda on: self.settings.setValue("export/recut", "true" if on else "false"),
            "recut_now": self.review.recut_cues,
            "shortcuts": self.edit_shortcuts,
            "limits": self.edit_limits,
            "help": lambda: self.help.show_keys(saved_keys(self.settings)),
            "about": self.show_about,
        }
        for name, mark in MARK_COMMANDS.items():
            handlers[name] = lambda _checked=False, mark=mark: self.review.change_mark(mark)
        menus = {name: self.menuBar().addMenu(title) for name, title in MENUS.items()}
        for command in COMMANDS:
            action = QAction(command.label, self)
            action.setShortcuts(key_sequences(keys[command.name]))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            action.triggered.connect(handlers[command.name])
            menus[command.menu].addAction(action)
            self.addAction(action)
            self.actions_by_name[command.name] = action
            if command.name == "open_project":
                self.recent_menu = menus["File"].addMenu("Open rece&nt")
        for name in ("lowest_first", "show_settled", "show_all", "listen", "rebreak", "recut"):
            self.actions_by_name[name].setCheckable(True)
        self.actions_by_name["listen"].setChecked(saved_audio_use(self.settings) is AudioUse.LISTEN)
        self.actions_by_name["rebreak"].setChecked(saved_rebreak(self.settings))
        self.actions_by_name["recut"].setChecked(saved_recut(self.settings))
        self.files.fill_recent()

    # --- opening --------------------------------------------------------------------------------

    def start_session(self, session: ReviewSession) -> None:
        """Show ``session`` in the editor, in place of whatever was open."""
        self.worker.cancel_all()
        if self.session is not None:
            self.session.close()
        self.session = session
        session.limits = self.limits  # re-cutting and export keep to the limits set in Settings
        self.cue_model = CueModel(session, self.limits)
        self.gap_model = GapModel(session, self.cue_model.cue_of_word)
        self.gap_model.set_view(self.review.queue_only, self.review.lowest_first, self.review.settled_only)
        self.editor_page.show_models(self.cue_model, self.gap_model)
        self.cues_cut_again()
        self.waveform.set_waveform(None, "No media" if not session.entry.media_path else "Reading the audio…")
        self.current_id = None
        self.show_evidence(None)
        self.pages.setCurrentIndex(1)
        entry = session.entry
        self.setWindowTitle(f"{entry.captions_path.name} — Punctum")
        if session.restored_decisions:
            count = session.restored_decisions
            restored = f"Restored {count} decision{'' if count == 1 else 's'}"
            if session.recut_unrecorded:  # said where the person looks, before any export
                restored += f"; this file was {UNRECORDED_RECUT_WARNING}"
            self.statusBar().showMessage(restored, 20000 if session.recut_unrecorded else 8000)
        if session.analysed and session.policy is None:
            # Reopened after its analysis: the re-reading after each decision settles by the policy
            # of Settings, as the analysis did, rather than take back what triage settled.
            session.policy = self.triage_policy()
        self.review.note_style()
        media = entry.media_path
        if media is not None and not media.is_file():
            self.show_error(
                "The media is missing", f"{media}: not found; use File ▸ Open media to point at it"
            )
            media = None
        if media is not None:
            self.load_media(media)
        else:
            self.media.unload()
            if not session.analysed:
                self.analysis.suggest(with_media=False)
        self.show_counts()
        if session.analysed:
            self.review.next_suggestion()

    # --- review ---------------------------------------------------------------------------------

    def cues_cut_again(self) -> None:
        """Show where the session's cues now begin and end: the waveform, and the cue playing."""
        if self.session is not None:
            self.waveform.set_cues(self.session.document.cues)
            self._cue_starts = [cue.start for cue in self.session.document.cues]

    def _seek(self, millis: int) -> None:
        self.media.seek(millis)
        self.waveform.set_position(millis)

    def _player_moved(self, millis: int) -> None:
        self.waveform.set_position(millis)
        if self.session is None or not self.media.playing:
            return
        # While playing, the transcript follows the cue being spoken.
        row = bisect.bisect_right(self._cue_starts, millis) - 1
        if row >= 0 and row != self.transcript.currentIndex().row():
            self.transcript.selectRow(row)
            self.waveform.show_cue(row)

    # --- state shown ------------------------------------------------------------------------------

    def refresh_views(self) -> None:
        if self.cue_model is not None and self.gap_model is not None:
            self.cue_model.reload()
            self.gap_model.reload()
        if self.session is not None:
            self.waveform.set_words(self.session.word_times())
        self.show_counts()

    def show_counts(self) -> None:
        show_counts(self.list_heading, self.counts_label, self.session, self.gap_model)
        self._update_actions()

    def _update_actions(self) -> None:
        history = self.session.history if self.session is not None else None
        undo, redo = self.actions_by_name["undo"], self.actions_by_name["redo"]
        undo.setEnabled(bool(history and history.can_undo))
        redo.setEnabled(bool(history and history.can_redo))
        undo.setText(f"&Undo {history.undo_description}" if history and history.can_undo else "&Undo")
        redo.setText(f"&Redo {history.redo_description}" if history and history.can_redo else "&Redo")
        applied = self.session is not None and self.session.cues_recut
        show_recut_on_export(self.actions_by_name["recut"], applied, saved_recut(self.settings))
        for name in (
            "export",
            "save_project",
            "open_media",
            "open_reference",
            "accept_above",
            "edit_word",
            "reset_style",
            "show_style",
        ):
            self.actions_by_name[name].setEnabled(self.session is not None)

    def _follow_up_failed(self, name: str, reason: str) -> None:
        self.show_error(f"The {name} step did not finish", reason)
        if self.session is None:
            return
        # The background process may have stored its result before the step failed here.
        try:
            self.session.reload()
        except Exception as error:  # the dialog above is already up; say why the view is older
            self.statusBar().showMessage(f"The project could not be read again: {error}", 10000)
        else:
            self.refresh_views()

    def show_evidence(self, gap: ReviewRow | None) -> None:
        """The evidence panel and the waveform's gap mark follow the gap under review."""
        self.evidence.show_gap(self.session, gap)
        measure = (
            self.session.gap_measure(gap.index) if self.session is not None and gap is not None else None
        )
        self.waveform.set_gap(
            measure.end_ms if measure is not None and gap is not None and gap.marks else None
        )

    def dialog_parent(self) -> QWidget:
        return self

    def load_media(self, media: Path) -> None:
        """Play ``media`` and read its audio for the waveform and the suggestions."""
        self.media.load(media)
        self.analysis.read_audio(media)

    def after_analysis(self) -> None:
        """Review by exception: the triage rule settles what it may, as one undoable decision."""
        self.review.settle(self.triage_policy())

    def triage_policy(self) -> TriagePolicy:
        """The policy chosen in Settings (the measured operating point unless changed)."""
        return saved_policy(self.settings)

    def set_triage_policy(self, policy: TriagePolicy) -> None:
        """Keep ``policy`` and triage the open file again by it."""
        save_policy(self.settings, policy)
        self.review.settle(policy)

    def set_listening(self, listen: bool) -> None:
        """Keep the choice; it applies to the files opened from now on."""
        save_audio_use(self.settings, AudioUse.LISTEN if listen else AudioUse.TIMINGS)
        self.statusBar().showMessage(
            "The recogniser will listen along the words of the files opened from now on"
            if listen
            else "The text model alone will read the files opened from now on",
            8000,
        )

    def edit_triage_policy(self) -> None:
        dialog = TriagePolicyDialog(self.triage_policy(), self)
        if dialog.exec():
            self.set_triage_policy(dialog.policy())

    def show_error(self, title: str, text: str) -> None:
        """A dialog with the reason; it does not block, and the window stays usable."""
        self.last_error = f"{title}: {text}"
        message_box(self, title, text, QMessageBox.Icon.Warning).open()

    # --- settings ---------------------------------------------------------------------------------

    def show_about(self) -> None:
        box = message_box(self, "About Punctum", about_html(about()), QMessageBox.Icon.Information)
        box.setTextFormat(Qt.TextFormat.RichText)
        box.open()

    def edit_shortcuts(self) -> None:
        dialog = ShortcutDialog(saved_keys(self.settings), self)
        if dialog.exec():
            for name, key in dialog.keys().items():
                self.settings.setValue(f"shortcuts/{name}", key)
                self.actions_by_name[name].setShortcuts(key_sequences(key))

    def edit_limits(self) -> None:
        dialog = LimitsDialog(self.limits, self)
        if dialog.exec():
            self.limits = dialog.limits()
            save_limits(self.settings, self.limits)
            if self.session is not None:
                self.session.limits = self.limits
            if self.cue_model is not None:
                self.cue_model.set_limits(self.limits)

    # --- window events ----------------------------------------------------------------------------

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        # Only files on this machine can be opened; a web link is refused at the door.
        if any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        paths = [Path(url.toLocalFile()) for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            QTimer.singleShot(0, lambda: self.files.open_paths(paths))

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        # Decisions are already on disk; stop the worker and let go of the project.
        self.worker.cancel_all()
        self.worker.wait(5000)
        self.media.unload()
        if self.session is not None:
            self.session.close()
            self.session = None
        event.accept()
