"""The editor's custom widgets: rich-text transcript cells, the waveform, and the video panel."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import shiboken6
from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRectF, QSize, Qt, QUrl, Signal
from PySide6.QtGui import QColor, QMouseEvent, QPainter, QPaintEvent, QPen, QTextDocument, QWheelEvent
from PySide6.QtWidgets import (
    QLabel,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from app.core.model import Cue
from app.services.waveform import Waveform


class RichTextDelegate(QStyledItemDelegate):
    """Paints a cell's HTML (the cue text with its highlighted suggestions)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._document = QTextDocument()
        self._document.setDocumentMargin(2)

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        self.initStyleOption(option, index)
        style = option.widget.style() if option.widget else None
        text = option.text
        option.text = ""
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, option, painter, option.widget)
        self._document.setDefaultFont(option.font)
        self._document.setHtml(text)
        rect = option.rect
        self._document.setTextWidth(rect.width())
        painter.save()
        painter.translate(rect.topLeft())
        painter.setClipRect(QRectF(0, 0, rect.width(), rect.height()))
        self._document.drawContents(painter)
        painter.restore()

    def sizeHint(  # noqa: N802
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        return QSize(400, option.fontMetrics.height() * 2 + 8)


class WaveformView(QWidget):
    """The audio's loudness over a stretch of time around the current cue, cue regions shaded,
    pauses marked, where each word starts as heard ticked along the top, the play position drawn;
    a click asks to seek there, the wheel zooms."""

    seek_requested = Signal(int)  # milliseconds

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMinimumHeight(90)
        self.waveform: Waveform | None = None
        self.cues: list[tuple[int, int]] = []
        self.words: list[tuple[int, int]] = []  # when each word is said (ms), where known
        self.current_cue: int | None = None
        self.position = 0.0
        self.span = 20_000.0  # milliseconds shown
        self.view_start = 0.0
        self.message = "No media"
        self.gap: int | None = None  # milliseconds: the gap under review, where known

    def set_waveform(self, waveform: Waveform | None, message: str = "") -> None:
        self.waveform = waveform
        self.message = message
        self.update()

    def set_cues(self, cues: Sequence[Cue]) -> None:
        self.cues = [(cue.start, cue.end) for cue in cues]
        self.update()

    def set_words(self, words: list[tuple[int, int]]) -> None:
        self.words = words
        self.update()

    def show_cue(self, number: int | None) -> None:
        self.current_cue = number
        if number is not None and self.cues:
            start, end = self.cues[number]
            if not (self.view_start <= start and end <= self.view_start + self.span):
                self.view_start = max(0, (start + end) // 2 - self.span // 2)
        self.update()

    def set_gap(self, millis: int | None) -> None:
        """Mark the gap under review (where its word ends) and bring it into view."""
        self.gap = millis
        if millis is not None and not self.view_start <= millis <= self.view_start + self.span:
            self.view_start = max(0, millis - self.span // 2)
        self.update()

    def set_position(self, millis: int) -> None:
        self.position = millis
        if not self.view_start <= millis <= self.view_start + self.span:
            self.view_start = max(0, millis - self.span // 10)
        self.update()

    def _x(self, millis: float) -> float:
        return (millis - self.view_start) / self.span * self.width()

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        millis = self.view_start + event.position().x() / max(1, self.width()) * self.span
        self.seek_requested.emit(max(0, int(millis)))

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802
        centre = self.view_start + self.span // 2
        factor = 0.8 if event.angleDelta().y() > 0 else 1.25
        self.span = int(min(600_000, max(2_000, self.span * factor)))
        self.view_start = max(0, centre - self.span // 2)
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        painter = QPainter(self)
        width, height = self.width(), self.height()
        painter.fillRect(self.rect(), QColor("#1e2327"))
        end = self.view_start + self.span
        for number, (start, stop) in enumerate(self.cues):
            if stop < self.view_start or start > end:
                continue
            colour = QColor(70, 120, 190, 110 if number == self.current_cue else 45)
            painter.fillRect(QRectF(self._x(start), 0, self._x(stop) - self._x(start), height), colour)
        if self.waveform is None:
            painter.setPen(QColor("#aab"))
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, self.message)
            return
        for pause_start, pause_end in self.waveform.pauses:
            if pause_end * 1000 < self.view_start or pause_start * 1000 > end:
                continue
            left, right = self._x(pause_start * 1000), self._x(pause_end * 1000)
            painter.fillRect(QRectF(left, height - 6, right - left, 6), QColor("#e0a030"))
        levels = self.waveform.levels(self.view_start, end, max(1, width))
        painter.setPen(QColor("#8fd19e"))
        middle = height / 2
        for x, level in enumerate(levels):
            half = float(level) * (middle - 4)
            painter.drawLine(int(x), int(middle - half), int(x), int(middle + half))
        painter.setPen(QColor("#c8d2dc"))
        for start, _ in self.words:
            if self.view_start <= start <= end:
                painter.drawLine(int(self._x(start)), 0, int(self._x(start)), 7)
        if self.gap is not None:
            gap_x = int(self._x(self.gap))
            painter.setPen(QPen(QColor("#ff5a5a"), 2, Qt.PenStyle.DashLine))
            painter.drawLine(gap_x, 0, gap_x, height)
        painter.setPen(QColor("#ffffff"))
        playhead = self._x(self.position)
        painter.drawLine(int(playhead), 0, int(playhead), height)


def _call_released(player: Any, method: str, *args: Any) -> None:
    """``player.<method>(*args)`` (a ``QMediaPlayer``'s), with Python's lock released where that
    can be had.

    Stopping or replacing the media tears down Qt's FFmpeg playback threads. One of them may
    destroy an object connected to our player, and the binding then needs Python's lock (to look
    for Python overrides of ``disconnectNotify``) while our thread, holding that lock, waits for the
    thread's mutex: a deadlock seen on closing a window. ctypes calls run without the lock.
    """
    import ctypes
    import sys

    symbols = {"stop": "_ZN12QMediaPlayer4stopEv", "setSource": "_ZN12QMediaPlayer9setSourceERK4QUrl"}
    function = None
    if sys.platform.startswith("linux"):
        import PySide6

        with contextlib.suppress(OSError, AttributeError):
            library = ctypes.CDLL(str(Path(PySide6.__file__).parent / "Qt" / "lib" / "libQt6Multimedia.so.6"))
            function = getattr(library, symbols[method])
    if function is None:
        getattr(player, method)(*args)
        return
    function.restype = None
    function.argtypes = [ctypes.c_void_p] * (1 + len(args))
    function(*(shiboken6.getCppPointer(each)[0] for each in (player, *args)))


class MediaPanel(QWidget):
    """The video (or a note when there is none); plays a cue's stretch on request."""

    position_changed = Signal(int)
    failed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.box = QVBoxLayout(self)
        self.box.setContentsMargins(0, 0, 0, 0)
        self.note = QLabel("No media: open a video or audio file to see and hear the captions")
        self.note.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.note.setWordWrap(True)
        self.box.addWidget(self.note)
        self.player: Any = None
        self.video: Any = None
        self._stop_at: int | None = None
        self.path: Path | None = None

    def _ensure_player(self) -> None:
        if self.player is not None:
            return
        # Qt Multimedia starts its FFmpeg backend on first use; only pay for it with media.
        from PySide6.QtMultimedia import QAudioOutput, QMediaPlayer
        from PySide6.QtMultimediaWidgets import QVideoWidget

        self.video = QVideoWidget(self)
        self.video.setMinimumSize(320, 180)
        self.box.addWidget(self.video)
        self.player = QMediaPlayer(self)
        self.audio = QAudioOutput(self)
        self.player.setAudioOutput(self.audio)
        self.player.setVideoOutput(self.video)
        self.player.positionChanged.connect(self._moved)
        self.player.errorOccurred.connect(lambda _error, text: self.failed.emit(text or "cannot play"))

    def load(self, path: Path) -> None:
        self._ensure_player()
        self.path = path
        self.note.hide()
        _call_released(self.player, "setSource", QUrl.fromLocalFile(str(path)))
        self.player.pause()

    def unload(self) -> None:
        if self.player is not None:
            _call_released(self.player, "stop")
            _call_released(self.player, "setSource", QUrl())
        self.path = None
        self.note.show()

    @property
    def playing(self) -> bool:
        if self.player is None:
            return False
        from PySide6.QtMultimedia import QMediaPlayer

        return bool(self.player.playbackState() == QMediaPlayer.PlaybackState.PlayingState)

    def seek(self, millis: int) -> None:
        if self.player is not None and self.path is not None:
            self._stop_at = None
            self.player.setPosition(millis)

    def unheard(self) -> str | None:
        """Why playing would be heard by nobody, or None: no media, or no sound device (a
        machine without one played in silence, and P seemed to do nothing)."""
        if self.player is None or self.path is None:
            return "No media to play; File ▸ Open media points at it"
        from PySide6.QtMultimedia import QMediaDevices

        if not QMediaDevices.audioOutputs():
            return "No sound device: the media plays in silence (the waveform shows where)"
        return None

    def play_range(self, start: int, end: int) -> None:
        if self.player is None or self.path is None:
            return
        self.player.setPosition(start)
        self._stop_at = end
        self.player.play()

    def _moved(self, millis: int) -> None:
        if self._stop_at is not None and millis >= self._stop_at:
            self._stop_at = None
            self.player.pause()
        self.position_changed.emit(millis)
