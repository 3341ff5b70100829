"""What the editor's controllers may use of the window: its public face, as a protocol.

The controllers depend on this, not on ``MainWindow``, so the window can import them without an
import circle, and nothing outside the window reaches into its private parts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from PySide6.QtCore import QSettings
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import (
        QLabel,
        QListWidget,
        QMenu,
        QProgressBar,
        QPushButton,
        QStackedWidget,
        QStatusBar,
        QTableView,
        QWidget,
    )

    from app.core.triage import ReviewRow, TriagePolicy
    from app.services.review import ReviewSession
    from app.services.worker_process import WorkerProcess
    from app.ui.models import CueModel, GapModel
    from app.ui.tasks import Worker
    from app.ui.widgets import MediaPanel, WaveformView


class EditorWindow(Protocol):
    """The window as the file, review and analysis controllers see it."""

    settings: QSettings
    model: str | None
    session: ReviewSession | None
    cue_model: CueModel | None
    gap_model: GapModel | None
    current_id: int | None
    worker: Worker
    process: WorkerProcess
    actions_by_name: dict[str, QAction]
    media: MediaPanel
    waveform: WaveformView
    transcript: QTableView
    gap_view: QTableView
    progress_label: QLabel
    progress: QProgressBar
    cancel_button: QPushButton
    recent_list: QListWidget
    recent_menu: QMenu
    pages: QStackedWidget  # the welcome page (0), the editor's (1)

    def dialog_parent(self) -> QWidget:
        """The widget a dialog opens over (the window itself)."""

    def statusBar(self) -> QStatusBar: ...  # noqa: N802 (Qt's name)

    def show_error(self, title: str, text: str) -> None: ...

    def show_evidence(self, gap: ReviewRow | None) -> None: ...

    def triage_policy(self) -> TriagePolicy: ...

    def load_media(self, media: Path) -> None:
        """Play ``media`` and read its audio for the waveform and the suggestions."""

    def start_session(self, session: ReviewSession) -> None:
        """Show ``session`` in the editor, in place of whatever was open."""

    def refresh_views(self) -> None:
        """Read the open file's suggestions again into the lists (after a store or reload)."""

    def show_counts(self) -> None:
        """The status bar's counts and the enabled actions, after a decision."""

    def cues_cut_again(self) -> None:
        """Show where the open file's cues begin and end now (after a re-cut, its undo or redo)."""

    def after_analysis(self) -> None:
        """Triage the file's fresh suggestions by the chosen policy and go to the first to decide."""
