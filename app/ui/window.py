"""The main window: welcome screen, then the review of one caption file against its video.

Everything it does goes through ``ReviewSession`` (the same service the command line uses); slow work
goes to the ``Worker``. Decisions are recorded as they are made, so there is nothing to save.
"""

from __future__ import annotations

import atexit
import bisect
import dataclasses
import sqlite3
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QItemSelectionModel, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QListWidget,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.core.errors import PunctumError
from app.core.history import Step, SuggestionEdit
from app.core.model import Source, Status
from app.services.analysis import Analysis
from app.services.files import MEDIA_SUFFIXES, TIMING_JSON, TIMING_SUFFIX, classify
from app.services.punctuate import render_mark
from app.services.review import ReviewSession, Waveform, store_results
from app.services.worker_process import WorkerProcess
from app.store.project import Project
from app.ui.models import ID_ROLE, CueModel, SuggestionModel
from app.ui.shortcuts import (
    COMMANDS,
    MARK_COMMANDS,
    HelpOverlay,
    LimitsDialog,
    ShortcutDialog,
    saved_keys,
    saved_limits,
)
from app.ui.tasks import Worker
from app.ui.widgets import MediaPanel, RichTextDelegate, WaveformView

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "sample"
MAX_RECENT = 10

_PROCESS: list[WorkerProcess] = []


def shared_process() -> WorkerProcess:
    """One background process for the application: every window and file reuses its loaded model."""
    if not _PROCESS:
        process = WorkerProcess()
        atexit.register(process.stop)
        _PROCESS.append(process)
    return _PROCESS[0]


def sort_paths(paths: list[Path]) -> dict[str, Path | None]:
    """Which of the given files are captions, media, a reference and a project."""
    found: dict[str, Path | None] = {
        "captions": None,
        "media": None,
        "reference": None,
        "project": None,
        "timings": None,
    }
    for path in paths:
        role = classify(path)
        kind = role.kind.value if role is not None else None
        if kind and found[kind] is None:
            found[kind] = path
    return found


def media_beside(captions: Path) -> Path | None:
    for suffix in sorted(MEDIA_SUFFIXES):
        candidate = captions.with_suffix(suffix)
        if candidate.is_file():
            return candidate
    return None


def timings_beside(captions: Path) -> Path | None:
    """The recogniser's word times next to the captions: ``talk.ctm`` or ``talk.words.json``."""
    for candidate in (captions.with_suffix(TIMING_SUFFIX), captions.with_suffix(TIMING_JSON)):
        if candidate.is_file():
            return candidate
    return None


def key_sequences(key: str) -> list[QKeySequence]:
    """A key and, for a symbol typed with Shift on some keyboards ("?" is Shift+/ in English,
    "." is Shift+; in German), the same symbol with Shift, so either way of typing it works."""
    sequences = [QKeySequence(key)] if key else []
    if len(key) == 1 and not key.isalnum() and not key.isspace():
        sequences.append(QKeySequence(f"Shift+{key}"))
    return sequences


class MainWindow(QMainWindow):
    def __init__(self, settings: QSettings | None = None, model: str | None = None, use_audio: bool = True):
        super().__init__()
        self.settings = settings or QSettings("Punctum", "Punctum")
        self.model = model
        self.use_audio = use_audio
        self.session: ReviewSession | None = None
        self.cue_model: CueModel | None = None
        self.suggestion_model: SuggestionModel | None = None
        self.current_id: int | None = None
        self._cue_starts: list[int] = []
        self.lowest_first = False
        self.last_error: str | None = None
        self.limits = saved_limits(self.settings)
        self.worker = Worker(self)
        self.process = shared_process()
        self.worker.progress.connect(self._progress)
        self.worker.busy_changed.connect(self._busy)
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
        page = QWidget(self)
        layout = QVBoxLayout(page)
        layout.setAlignment(Qt.AlignmentFlag.AlignCenter)
        title = QLabel("<h1>Punctum</h1><p>Put the punctuation back into ASR captions.</p>")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(title)
        row = QHBoxLayout()
        self.sample_button = QPushButton("Open the sample")
        self.sample_button.clicked.connect(self.open_sample)
        open_button = QPushButton("Open captions…")
        open_button.clicked.connect(lambda: self.choose_captions())
        project_button = QPushButton("Open project…")
        project_button.clicked.connect(lambda: self.choose_project())
        for button in (self.sample_button, open_button, project_button):
            row.addWidget(button)
        layout.addLayout(row)
        layout.addWidget(
            QLabel("Recent files (double-click to open), or drop captions, media and a transcript here:")
        )
        self.recent_list = QListWidget(page)
        self.recent_list.setMaximumWidth(700)
        self.recent_list.itemActivated.connect(lambda item: self.open_paths([Path(item.text())]))
        layout.addWidget(self.recent_list)
        self._fill_recent()
        return page

    def _editor_page(self) -> QWidget:
        page = QWidget(self)
        layout = QVBoxLayout(page)
        layout.setContentsMargins(4, 4, 4, 4)
        self.media = MediaPanel(page)
        self.media.position_changed.connect(self._player_moved)
        self.media.failed.connect(lambda text: self.show_error("The media cannot be played", text))
        self.suggestion_view = QTableView(page)
        self.suggestion_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.suggestion_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.suggestion_view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.suggestion_view.setSortingEnabled(True)
        self.suggestion_view.verticalHeader().hide()
        self.suggestion_view.verticalHeader().setDefaultSectionSize(22)
        self.suggestion_view.clicked.connect(self._suggestion_clicked)
        self.transcript = QTableView(page)
        self.transcript.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.transcript.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.transcript.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.transcript.setWordWrap(True)
        # A light selection, so the suggestion colours of the current cue stay readable.
        self.transcript.setStyleSheet("QTableView::item:selected { background: #dde7f3; color: black; }")
        self.transcript.verticalHeader().hide()
        # Fixed row heights: the view never measures rows it does not show.
        self.transcript.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.transcript.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() * 2 + 10)
        self.transcript.setItemDelegateForColumn(CueModel.TEXT, RichTextDelegate(self.transcript))
        self.transcript.clicked.connect(self._cue_clicked)
        self.waveform = WaveformView(page)
        self.waveform.seek_requested.connect(self._seek)
        left = QSplitter(Qt.Orientation.Vertical, page)
        left.addWidget(self.media)
        left.addWidget(self.suggestion_view)
        top = QSplitter(Qt.Orientation.Horizontal, page)
        top.addWidget(left)
        top.addWidget(self.transcript)
        top.setSizes([480, 920])
        whole = QSplitter(Qt.Orientation.Vertical, page)
        whole.addWidget(top)
        whole.addWidget(self.waveform)
        whole.setSizes([720, 120])
        layout.addWidget(whole)
        return page

    def _status_bar(self) -> None:
        bar = self.statusBar()
        self.counts_label = QLabel("")
        self.progress_label = QLabel("")
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(200)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.worker.cancel_all)
        for widget in (self.progress_label, self.progress, self.cancel_button):
            widget.hide()
            bar.addPermanentWidget(widget)
        bar.addPermanentWidget(self.counts_label)

    def _menus(self) -> None:
        keys = saved_keys(self.settings)
        handlers: dict[str, Any] = {
            "open": lambda: self.choose_captions(),
            "open_media": lambda: self.choose_media(),
            "open_reference": lambda: self.choose_reference(),
            "open_project": lambda: self.choose_project(),
            "save_project": lambda: self.save_project_as(),
            "export": lambda: self.export(),
            "quit": self.close,
            "undo": self.undo,
            "redo": self.redo,
            "edit_word": lambda: self.edit_word(),
            "next": self.next_suggestion,
            "previous": self.previous_suggestion,
            "accept": self.accept_current,
            "reject": self.reject_current,
            "accept_above": lambda: self.accept_above(),
            "suggest": self.make_suggestions,
            "lowest_first": self._toggle_order,
            "play": self.play_current_cue,
            "shortcuts": self.edit_shortcuts,
            "limits": self.edit_limits,
            "help": lambda: self.help.show_keys(saved_keys(self.settings)),
        }
        for name, mark in MARK_COMMANDS.items():
            handlers[name] = lambda _checked=False, mark=mark: self.change_mark(mark)
        menus: dict[str, Any] = {}
        for command in COMMANDS:
            if command.menu not in menus:
                menus[command.menu] = self.menuBar().addMenu(command.menu)
            action = QAction(command.label, self)
            action.setShortcuts(key_sequences(keys[command.name]))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            action.triggered.connect(handlers[command.name])
            menus[command.menu].addAction(action)
            self.addAction(action)
            self.actions_by_name[command.name] = action
            if command.name == "open_project":
                self.recent_menu = menus["File"].addMenu("Open &recent")
        self.actions_by_name["lowest_first"].setCheckable(True)
        self._fill_recent()

    # --- opening --------------------------------------------------------------------------------

    def open_sample(self) -> None:
        self.open_captions(SAMPLE / "sample.srt", SAMPLE / "sample.mp4", SAMPLE / "reference.txt")

    def choose_captions(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open captions", "", "Captions (*.srt *.vtt)")
        if path:
            self.open_paths([Path(path)])

    def choose_project(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open project", "", "Punctum projects (*.punctum)")
        if path:
            self.open_project(Path(path))

    def choose_media(self) -> None:
        if self.session is None:
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open media", "", "Video and audio (*)")
        if path:
            self.set_media(Path(path))

    def choose_reference(self) -> None:
        if self.session is None:
            return
        path, _ = QFileDialog.getOpenFileName(
            self, "Open reference transcript", "", "Text (*.txt *.srt *.vtt)"
        )
        if path:
            self.add_reference(Path(path))

    def open_paths(self, paths: list[Path]) -> bool:
        """Open what was dropped, chosen or named on the command line."""
        found = sort_paths(paths)
        if found["project"] is not None:
            return self.open_project(found["project"])
        if found["captions"] is None:
            names = ", ".join(p.name for p in paths) or "nothing"
            self.show_error(
                "Nothing to open", f"{names}: no SRT or VTT captions or Punctum project among them"
            )
            return False
        opened = self.open_captions(found["captions"], found["media"], found["reference"], found["timings"])
        ignored = [p.name for p in paths if p not in found.values()]
        if ignored:  # an unknown type, or a second file of a kind already chosen
            self.statusBar().showMessage(f"Not opened: {', '.join(ignored)}", 10000)
        return opened

    def open_captions(
        self,
        captions: Path,
        media: Path | None = None,
        reference: Path | None = None,
        timings: Path | None = None,
    ) -> bool:
        """Start opening captions; reading and parsing run off the UI thread, errors come as a dialog."""
        media = media or media_beside(captions)
        timings = timings or timings_beside(captions)
        return self._open(
            "The captions cannot be opened",
            lambda: ReviewSession.open(captions, media, reference, timings=timings),
            captions,
        )

    def open_project(self, path: Path) -> bool:
        return self._open("The project cannot be opened", lambda: ReviewSession.open_project(path), path)

    def _open(self, failure: str, opening: Any, remembered: Path) -> bool:
        self.worker.cancel_all()  # whatever ran for the previous file gives way
        self.statusBar().showMessage(f"Opening {remembered.name}…")

        def done(session: ReviewSession) -> None:
            self.statusBar().clearMessage()
            self._remember(remembered)
            self._start(session)

        def failed(reason: str) -> None:
            self.statusBar().clearMessage()
            self.show_error(failure, reason)

        self.worker.submit("open", lambda progress, cancelled: opening(), done, failed)
        return True

    def _start(self, session: ReviewSession) -> None:
        self.worker.cancel_all()
        if self.session is not None:
            self.session.close()
        self.session = session
        self.cue_model = CueModel(session, self.limits)
        self.transcript.setModel(self.cue_model)
        header = self.transcript.horizontalHeader()
        header.setSectionResizeMode(CueModel.TEXT, QHeaderView.ResizeMode.Stretch)
        # Widths from the font, not from measuring every row: opening stays instant on long files.
        digits = self.fontMetrics().horizontalAdvance("0")
        for column, characters in (
            (0, 6),
            (1, 11),
            (CueModel.CPS, 6),
            (CueModel.LINE, 5),
            (CueModel.LINES, 6),
        ):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(column, digits * characters + 12)
        self.suggestion_model = SuggestionModel(session, self.cue_model.cue_of_word)
        self.suggestion_view.setModel(self.suggestion_model)
        self.suggestion_view.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.waveform.set_cues([(cue.start, cue.end) for cue in session.document.cues])
        self._cue_starts = [cue.start for cue in session.document.cues]
        self.waveform.set_waveform(None, "No media" if not session.entry.media_path else "Reading the audio…")
        self.current_id = None
        self.pages.setCurrentIndex(1)
        entry = session.entry
        self.setWindowTitle(f"{entry.captions_path.name} — Punctum")
        if session.restored_decisions:
            self.statusBar().showMessage(f"Restored {session.restored_decisions} decisions", 8000)
        media = entry.media_path
        if media is not None and not media.is_file():
            self.show_error(
                "The media is missing", f"{media}: not found; use File ▸ Open media to point at it"
            )
            media = None
        if media is not None:
            self.media.load(media)
            self._read_audio(media)
        else:
            self.media.unload()
            if not session.analysed:
                self._suggest(with_audio=False)
        self._after_change()
        if session.analysed:
            self.next_suggestion()

    # --- background work --------------------------------------------------------------------------

    def _read_audio(self, media: Path) -> None:
        session = self.session
        assert session is not None
        process = self.process

        def work(progress: Any, cancelled: Any) -> Waveform:
            return process.read_audio(media, progress, cancelled)

        def done(waveform: Waveform) -> None:
            if session is not self.session:
                return
            self.waveform.set_waveform(waveform)
            if not session.analysed:
                self._suggest(with_audio=self.use_audio)

        def failed(reason: str) -> None:
            self.waveform.set_waveform(None, "The audio could not be read")
            self.show_error("The audio cannot be read", reason)
            if session is self.session and not session.analysed:
                self._suggest(with_audio=False)

        def cancelled() -> None:
            self.waveform.set_waveform(None, "Cancelled")
            self.statusBar().showMessage("Cancelled; Review ▸ Make suggestions starts again", 8000)

        self.worker.submit("audio", work, done, failed, cancelled)

    def _suggest(self, with_audio: bool) -> None:
        session = self.session
        assert session is not None
        request = session.analysis_request(self.use_audio)
        if not with_audio:
            request = dataclasses.replace(request, media=None)
        process, model, project_path, file_id = (
            self.process,
            self.model,
            session.project.path,
            session.file_id,
        )
        started = time.monotonic()

        def work(progress: Any, cancelled: Any) -> Analysis:
            analysis = process.analyse(request, model, progress, cancelled)
            # Stored from this thread, on a connection of its own, so the window does not spend a
            # moment on thousands of rows; the background process writes nothing.
            progress("Saving the suggestions", -1.0)
            with Project(project_path) as project:
                store_results(project, file_id, analysis)
            return analysis

        def done(analysis: Analysis) -> None:
            if session is not self.session:
                return
            session.store_analysis(analysis, stored=True)
            self._reload_models()
            seconds = time.monotonic() - started
            message = f"{len(analysis.suggestions)} suggestions in {seconds:.1f} s"
            warnings = analysis.report.warnings
            self.statusBar().showMessage(message + "".join(f"; note: {w}" for w in warnings), 10000)
            self.next_suggestion()

        def failed(reason: str) -> None:
            self.show_error("No suggestions from the model", reason)

        def cancelled() -> None:
            self.statusBar().showMessage("Cancelled; Review ▸ Make suggestions starts again", 8000)

        self.worker.submit("suggest", work, done, failed, cancelled)

    def make_suggestions(self) -> None:
        """Run the analysis again when it was cancelled or failed; a finished one is kept."""
        session = self.session
        if session is None or self.worker.busy:
            return
        if session.analysed:
            self.statusBar().showMessage("This file has its suggestions already", 4000)
            return
        media = session.entry.media_path
        if media is not None and media.is_file() and self.waveform.waveform is None:
            self._read_audio(media)
        else:
            self._suggest(with_audio=media is not None and media.is_file() and self.use_audio)

    def _progress(self, text: str, fraction: float) -> None:
        self.progress_label.setText(text)
        if fraction < 0:
            self.progress.setRange(0, 0)
        else:
            self.progress.setRange(0, 100)
            self.progress.setValue(int(fraction * 100))

    def _busy(self, busy: bool) -> None:
        for widget in (self.progress_label, self.progress, self.cancel_button):
            widget.setVisible(busy)

    # --- review ---------------------------------------------------------------------------------

    def _order(self) -> list[int]:
        if self.session is None:
            return []
        return [s.id for s in self.session.review_order(self.lowest_first)]

    def next_suggestion(self) -> None:
        """The next pending suggestion after the current one."""
        if self.session is None:
            return
        order = self._order()
        start = order.index(self.current_id) + 1 if self.current_id in order else 0
        for sid in order[start:]:
            if self.session.document.suggestion(sid).status is Status.PENDING:
                self.select(sid)
                return
        self.statusBar().showMessage("No more pending suggestions after this one", 4000)

    def previous_suggestion(self) -> None:
        """The suggestion before the current one, decided or not, to look at it again."""
        order = self._order()
        if not order:
            return
        if self.current_id not in order:
            self.select(order[0])
            return
        position = order.index(self.current_id)
        if position > 0:
            self.select(order[position - 1])

    def select(self, suggestion_id: int | None) -> None:
        self.current_id = suggestion_id
        if self.session is None or self.cue_model is None or self.suggestion_model is None:
            return
        self.cue_model.set_current(suggestion_id)
        if suggestion_id is None:
            return
        suggestion = self.session.document.suggestion(suggestion_id)
        row = self.cue_model.cue_of_word(suggestion.gap)
        self.transcript.scrollTo(
            self.cue_model.index(row, CueModel.TEXT), QAbstractItemView.ScrollHint.EnsureVisible
        )
        self.transcript.selectRow(row)
        source_row = self.suggestion_model.row_of(suggestion_id)
        list_index = self.suggestion_model.index(source_row, 0)
        self.suggestion_view.selectionModel().setCurrentIndex(
            list_index,
            QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
        )
        self.suggestion_view.scrollTo(list_index)
        cue = self.session.document.cues[row]
        self.waveform.show_cue(row)
        self.media.seek(cue.start)

    def _current(self) -> int | None:
        if self.session is None or self.current_id is None:
            self.statusBar().showMessage("No suggestion selected", 3000)
            return None
        return self.current_id

    def accept_current(self) -> None:
        sid, session = self._current(), self.session
        if sid is not None and session is not None and self._run(lambda: session.accept(sid)):
            self.next_suggestion()

    def reject_current(self) -> None:
        sid, session = self._current(), self.session
        if sid is not None and session is not None and self._run(lambda: session.reject(sid)):
            self.next_suggestion()

    def change_mark(self, mark: str) -> None:
        sid, session = self._current(), self.session
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
        session = self.session
        if session is None:
            return
        if threshold is None:
            value, ok = QInputDialog.getDouble(
                self,
                "Accept above a confidence",
                "Accept every pending suggestion at least this sure:",
                float(str(self.settings.value("review/threshold", 0.9))),
                0.0,
                1.0,
                2,
            )
            if not ok:
                return
            threshold = value
            self.settings.setValue("review/threshold", value)
        chosen = threshold
        step = self._run(lambda: session.accept_above(chosen))
        accepted = sum(1 for e in step.edits if isinstance(e, SuggestionEdit)) if step else 0
        self.statusBar().showMessage(f"Accepted {accepted} suggestions at least {threshold:.2f} sure", 5000)

    def edit_word(self, text: str | None = None) -> None:
        sid, session = self._current(), self.session
        if sid is None or session is None:
            return
        gap = session.document.suggestion(sid).gap
        if text is None:
            current = session.document.word(gap).text
            text, ok = QInputDialog.getText(self, "Edit the word", "Word:", text=current)
            if not ok:
                return
        new_text = text.strip()
        self._run(lambda: session.edit_word(gap, new_text))

    def undo(self) -> None:
        if self.session is not None:
            step = self._run(self.session.undo)
            self._show_step(step)

    def redo(self) -> None:
        if self.session is not None:
            step = self._run(self.session.redo)
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
            self.show_error("That cannot be done", str(error))
            return None
        except OSError as error:
            self.show_error("The decision could not be saved", str(error))
            return None
        if step is not None and self.cue_model is not None and self.suggestion_model is not None:
            self.cue_model.changed(step)
            self.suggestion_model.changed(step)
            self.cue_model.set_current(self.current_id)
        self._after_change()
        return step

    def _toggle_order(self) -> None:
        self.lowest_first = not self.lowest_first
        self.actions_by_name["lowest_first"].setChecked(self.lowest_first)
        # Start over in the new order: the least sure pending suggestion, or the first in the text.
        self.current_id = None
        self.next_suggestion()
        self.statusBar().showMessage(
            "Lowest confidence first" if self.lowest_first else "In reading order", 3000
        )

    def play_current_cue(self) -> None:
        if self.session is None:
            return
        row = self.transcript.currentIndex().row()
        if row < 0 and self.current_id is not None:
            assert self.cue_model is not None
            row = self.cue_model.cue_of_word(self.session.document.suggestion(self.current_id).gap)
        if row >= 0:
            cue = self.session.document.cues[row]
            self.media.play_range(cue.start, cue.end)

    def _suggestion_clicked(self, index: Any) -> None:
        assert self.suggestion_model is not None
        self.select(int(self.suggestion_model.data(index, ID_ROLE)))

    def _cue_clicked(self, index: Any) -> None:
        if self.session is None or self.cue_model is None:
            return
        cue = self.session.document.cues[index.row()]
        self.waveform.show_cue(index.row())
        self.media.seek(cue.start)
        first = self.cue_model.first_word(index.row())
        gaps = range(first, first + len(cue.words))
        for sid in self._order():
            suggestion = self.session.document.suggestion(sid)
            if suggestion.gap in gaps and suggestion.status is Status.PENDING:
                self.select(sid)
                return

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

    def _reload_models(self) -> None:
        if self.cue_model is not None and self.suggestion_model is not None:
            self.cue_model.reload()
            self.suggestion_model.reload()
        self._after_change()

    def _after_change(self) -> None:
        if self.session is not None:
            counts = self.session.counts()
            self.counts_label.setText(
                f"pending {counts['pending']} · accepted {counts['accepted']} · rejected {counts['rejected']}"
            )
        self._update_actions()

    def _update_actions(self) -> None:
        history = self.session.history if self.session is not None else None
        undo, redo = self.actions_by_name["undo"], self.actions_by_name["redo"]
        undo.setEnabled(bool(history and history.can_undo))
        redo.setEnabled(bool(history and history.can_redo))
        undo.setText(f"&Undo {history.undo_description}" if history and history.can_undo else "&Undo")
        redo.setText(f"&Redo {history.redo_description}" if history and history.can_redo else "&Redo")
        for name in ("export", "save_project", "open_media", "open_reference", "accept_above", "edit_word"):
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
            self._reload_models()

    def show_error(self, title: str, text: str) -> None:
        """A dialog with the reason; it does not block, and the window stays usable."""
        self.last_error = f"{title}: {text}"
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    # --- media, reference, project, export -----------------------------------------------------

    def set_media(self, media: Path) -> None:
        if self.session is None:
            return
        try:
            self.session.relink_media(media)
        except (PunctumError, OSError) as error:
            self.show_error("The media cannot be used", str(error))
            return
        self.media.load(media)
        self._read_audio(media)

    def add_reference(self, reference: Path) -> None:
        if self.session is None:
            return
        if self.worker.busy:
            # The analysis replaces the file's suggestions when it ends; decisions made on the
            # reference's meanwhile would then point at the wrong ones.
            self.show_error(
                "Not while suggestions are being made",
                "Open the reference when the progress bar is done, or cancel it first.",
            )
            return
        try:
            report = self.session.add_reference(reference)
        except (PunctumError, OSError, sqlite3.Error) as error:
            self.show_error("The reference cannot be used", str(error))
            return
        self._reload_models()
        self.statusBar().showMessage(f"Reference: {report.get('carried', 0)} marks carried over", 6000)

    def save_project_as(self, path: Path | None = None) -> None:
        if self.session is None:
            return
        if path is None:
            chosen, _ = QFileDialog.getSaveFileName(self, "Save project", "", "Punctum projects (*.punctum)")
            if not chosen:
                return
            path = Path(chosen)
        if not path.suffix:  # Qt's dialog adds none on Linux; without it the project would not reopen
            path = path.with_suffix(".punctum")
        try:
            session = self.session.save_as(path)
        except (PunctumError, OSError) as error:
            self.show_error("The project cannot be saved", str(error))
            return
        self._start(session)
        self._remember(path)

    def export(self, path: Path | None = None) -> bool:
        if self.session is None:
            return False
        source = self.session.entry.captions_path
        asked_to_replace = False
        if path is None:
            suggested = source.with_name(f"{source.stem}.punctuated{source.suffix}")
            chosen, _ = QFileDialog.getSaveFileName(
                self, "Export captions", str(suggested), "Captions (*.srt *.vtt)"
            )
            if not chosen:
                return False
            path = Path(chosen)
            asked_to_replace = True  # the dialog asked before replacing any file
        try:
            self.session.export(path, replace_source=asked_to_replace)
        except (PunctumError, OSError) as error:
            self.show_error("The captions cannot be exported", str(error))
            return False
        self.statusBar().showMessage(f"Exported {path}", 6000)
        return True

    # --- settings ---------------------------------------------------------------------------------

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
            for key, value in (
                ("max_cps", self.limits.max_cps),
                ("max_line_length", self.limits.max_line_length),
                ("max_lines", self.limits.max_lines),
            ):
                self.settings.setValue(f"limits/{key}", value)
            if self.cue_model is not None:
                self.cue_model.set_limits(self.limits)

    def _remember(self, path: Path) -> None:
        recent = [str(path.resolve())]
        for item in self._recent():
            if item not in recent:
                recent.append(item)
        self.settings.setValue("recent", recent[:MAX_RECENT])
        self._fill_recent()

    def _recent(self) -> list[str]:
        value = self.settings.value("recent", [])
        if isinstance(value, str):
            return [value]
        return [str(item) for item in value] if isinstance(value, list) else []

    def _fill_recent(self) -> None:
        recent = self._recent()
        if hasattr(self, "recent_list"):
            self.recent_list.clear()
            self.recent_list.addItems(recent)
        if hasattr(self, "recent_menu"):
            self.recent_menu.clear()
            for item in recent:
                action = self.recent_menu.addAction(item)
                action.triggered.connect(lambda _=False, item=item: self.open_paths([Path(item)]))

    # --- window events ----------------------------------------------------------------------------

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        # Only files on this machine can be opened; a web link is refused at the door.
        if any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        paths = [Path(url.toLocalFile()) for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            QTimer.singleShot(0, lambda: self.open_paths(paths))

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        # Decisions are already on disk; stop the worker and let go of the project.
        self.worker.cancel_all()
        self.worker.wait(5000)
        self.media.unload()
        if self.session is not None:
            self.session.close()
            self.session = None
        event.accept()
