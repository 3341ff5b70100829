"""The main window's two pages, built and laid out: the welcome page and the review page.

The pages hold widgets only; the window connects their buttons and views to what they do.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.ui.evidence import EvidencePanel
from app.ui.models import CueModel, GapModel
from app.ui.widgets import MediaPanel, RichTextDelegate, WaveformView


class WelcomePage(QWidget):
    """What the window shows before a file is open: ways to open one, and the recent files."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setAlignment(Qt.AlignmentFlag.AlignCenter)
        title = QLabel("<h1>Punctum</h1><p>Put the punctuation back into ASR captions.</p>")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(title)
        row = QHBoxLayout()
        self.sample_button = QPushButton("Open the sa&mple")
        self.open_button = QPushButton("Open c&aptions…")
        self.project_button = QPushButton("Open &project…")
        for button in (self.sample_button, self.open_button, self.project_button):
            row.addWidget(button)
        layout.addLayout(row)
        layout.addWidget(
            QLabel("Recent files (double-click to open), or drop captions, media and a transcript here:")
        )
        self.recent_list = QListWidget(self)
        self.recent_list.setMaximumWidth(700)
        layout.addWidget(self.recent_list)


class EditorPage(QWidget):
    """The review of one file: the player, the review list and the evidence beside the transcript,
    the waveform beneath."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.media = MediaPanel(self)
        self.gap_view = QTableView(self)
        self.gap_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.gap_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.gap_view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.gap_view.verticalHeader().hide()
        self.gap_view.verticalHeader().setDefaultSectionSize(22)
        self._fitted_columns = 0  # the review list's columns when last fitted
        # Over the list, there as long as it shows what it shows: which gaps, in which order, and
        # how many are left, settled and decided (in gaps, as ``punctum status`` counts them).
        self.list_heading = QLabel(self)
        self.list_heading.setObjectName("listHeading")
        self.counts_label = QLabel(self)
        self.counts_label.setObjectName("counts")
        for label in (self.list_heading, self.counts_label):
            label.setWordWrap(True)
        self.list_heading.setStyleSheet("font-weight: bold")
        review_list = QWidget(self)
        list_layout = QVBoxLayout(review_list)
        list_layout.setContentsMargins(0, 2, 0, 0)
        list_layout.setSpacing(2)
        for widget in (self.list_heading, self.counts_label, self.gap_view):
            list_layout.addWidget(widget)
        self.evidence = EvidencePanel(self)
        self.transcript = QTableView(self)
        self.transcript.setObjectName("transcript")
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
        self.waveform = WaveformView(self)
        left = QSplitter(Qt.Orientation.Vertical, self)
        left.addWidget(self.media)
        left.addWidget(review_list)
        # In a scroll area: a gap with much to say (a pitch the tracker lost, the readers'
        # disagreement) was cut off at the window's default size, its last lines out of reach.
        self.evidence_scroll = QScrollArea(self)
        self.evidence_scroll.setWidget(self.evidence)
        self.evidence_scroll.setWidgetResizable(True)
        self.evidence_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.evidence_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        left.addWidget(self.evidence_scroll)
        # Room for the evidence of a gap with much to say (six lines or so); the list takes the rest.
        left.setSizes([180, 420, 170])
        left.setStretchFactor(1, 1)
        self.top = top = QSplitter(Qt.Orientation.Horizontal, self)
        top.addWidget(left)
        top.addWidget(self.transcript)
        top.setSizes([480, 920])
        top.setStretchFactor(1, 1)  # the transcript takes what the window gains
        top.setCollapsible(1, False)
        # Tab goes from the player to the review list to the transcript, as the eye does.
        QWidget.setTabOrder(self.media, self.gap_view)
        QWidget.setTabOrder(self.gap_view, self.transcript)
        whole = QSplitter(Qt.Orientation.Vertical, self)
        whole.addWidget(top)
        whole.addWidget(self.waveform)
        whole.setSizes([720, 120])
        layout.addWidget(whole)

    def show_models(self, cue_model: CueModel, gap_model: GapModel) -> None:
        """Show a newly opened file's cues in the transcript and its gaps in the review list."""
        self.transcript.setModel(cue_model)
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
        self.gap_view.setModel(gap_model)
        self._fit_review_list()
        # The settled list has a column more (why each gap settled): it gets its room when shown.
        gap_model.modelReset.connect(self._fit_new_columns)

    def _fit_new_columns(self) -> None:
        """After the list was read again: fitted again when its columns changed (only then, so
        that a pane the user has narrowed stays so)."""
        if self.gap_view.horizontalHeader().count() != self._fitted_columns:
            self._fit_review_list()

    def _fit_review_list(self) -> None:
        """Every column of the review list in view without scrolling sideways: widths from the font
        and the headers, and the left pane made wide enough for them."""
        header = self.gap_view.horizontalHeader()
        self._fitted_columns = header.count()
        letters = self.fontMetrics().horizontalAdvance("0")
        widths = {
            GapModel.STATE: letters * 3 + 8,
            GapModel.CUE: letters * 5 + 12,
            GapModel.REFERENCE: header.fontMetrics().horizontalAdvance("Reference") + 24,
            GapModel.MODEL: header.fontMetrics().horizontalAdvance("Model (its confidence)") + 24,
        }
        if header.count() > GapModel.WHY:
            widths[GapModel.WHY] = header.fontMetrics().horizontalAdvance("reference and model agree") + 24
        for column, width in widths.items():
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(column, width)
        header.setSectionResizeMode(GapModel.CONTEXT, QHeaderView.ResizeMode.Stretch)
        word = letters * 30  # some four words each side of the gap; a narrower column cuts the words after
        scroll = self.gap_view.verticalScrollBar().sizeHint().width()
        needed = sum(widths.values()) + word + scroll + 2 * self.gap_view.frameWidth()
        sizes = self.top.sizes()
        # Before the page is first laid out the splitter has no sizes: the page's width stands in
        # (without it the transcript was left at no width at all).
        total = sum(sizes) or self.width() - self.top.handleWidth()
        if total > 0 and (sizes[0] < needed or sizes[1] == 0):
            self.top.setSizes([needed, max(0, total - needed)])
