"""F1's sheet of keys: one panel centred over the window, sized to what it lists."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QVBoxLayout, QWidget

from app.ui.shortcuts import COMMANDS

#: The panel's two columns: review keys, which an editor uses all day, apart from the rest.
COLUMNS = (("Review",), ("Edit", "File", "Settings", "Help"))
#: The panel draws its own colours, so it reads the same in a light or a dark theme.
STYLE = """
#helpPanel { background: #1f2429; border: 1px solid #596069; border-radius: 8px; }
#helpPanel QLabel { color: #eef0f2; font-size: 13px; }
#helpPanel QLabel#helpTitle { font-size: 18px; font-weight: bold; }
#helpPanel QLabel#helpHeading { color: #9fb7d0; font-weight: bold; padding-top: 6px; }
#helpPanel QLabel#helpKey { color: #ffd479; font-weight: bold; }
#helpPanel QLabel#helpNote { color: #b8bec5; }
"""


class HelpOverlay(QFrame):
    """Every command that has a key, in two columns on one panel centred over the window; any key
    or click closes it.

    A popup window of its own rather than a child widget: the video is drawn in a native surface
    that would cover any child widget laid over it."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent, Qt.WindowType.Popup | Qt.WindowType.FramelessWindowHint)
        self.setObjectName("helpPanel")
        self.setStyleSheet(STYLE)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.content: QWidget | None = None
        self.sheet = QVBoxLayout(self)
        self.sheet.setContentsMargins(0, 0, 0, 0)
        self.hide()

    def show_keys(self, keys: dict[str, str]) -> None:
        if self.content is not None:
            self.content.deleteLater()
        self.content = self._content(keys)
        self.sheet.addWidget(self.content)
        self.adjustSize()
        parent = self.parentWidget()
        if parent is not None:
            # Centred over the window, and never larger than it.
            size = self.sizeHint().boundedTo(parent.size())
            self.resize(size)
            corner = parent.mapToGlobal(QPoint(0, 0))
            self.move(
                corner.x() + (parent.width() - size.width()) // 2,
                corner.y() + max(0, (parent.height() - size.height()) // 2),
            )
        self.show()
        self.raise_()
        self.setFocus()

    def listed(self) -> list[tuple[str, str]]:
        """The keys on the panel and what each does, as shown."""
        if self.content is None:
            return []
        keys = self.content.findChildren(QLabel, "helpKey")
        texts = self.content.findChildren(QLabel, "helpText")
        return [(key.text(), text.text()) for key, text in zip(keys, texts, strict=True)]

    def _content(self, keys: dict[str, str]) -> QWidget:
        content = QWidget(self)
        grid = QGridLayout(content)
        grid.setContentsMargins(24, 16, 24, 16)
        grid.setHorizontalSpacing(10)
        grid.setVerticalSpacing(2)
        # Each column of the sheet is a key, its command, and a gutter before the next column.
        width = 3 * len(COLUMNS) - 1
        grid.addWidget(_label("Keyboard", "helpTitle", Qt.AlignmentFlag.AlignCenter), 0, 0, 1, width)
        last = 0
        for number, menus in enumerate(COLUMNS):
            column, row = 3 * number, 1
            for menu in menus:
                commands = [c for c in COMMANDS if c.menu == menu and keys.get(c.name)]
                if not commands:
                    continue
                grid.addWidget(_label(menu, "helpHeading"), row, column, 1, 2)
                row += 1
                for command in commands:
                    key = QKeySequence(keys[command.name]).toString(QKeySequence.SequenceFormat.NativeText)
                    grid.addWidget(_label(key, "helpKey", Qt.AlignmentFlag.AlignRight), row, column)
                    label = command.label.replace("&", "").rstrip("…")
                    grid.addWidget(_label(label, "helpText"), row, column + 1)
                    row += 1
            if number < len(COLUMNS) - 1:
                grid.setColumnMinimumWidth(column + 2, 28)
            last = max(last, row)
        notes = (
            "Colours: red unsure → green sure; blue text: from the reference, green: yours.",
            "Press any key to close.",
        )
        for offset, note in enumerate(notes):
            grid.addWidget(
                _label(note, "helpNote", Qt.AlignmentFlag.AlignCenter), last + 1 + offset, 0, 1, width
            )
        return content

    def event(self, event: QEvent) -> bool:
        # Any key closes the sheet, the editor's one-letter keys included: they must not act on
        # the review unseen behind it.
        if event.type() == QEvent.Type.ShortcutOverride:
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event: object) -> None:  # noqa: N802
        self.hide()

    def mousePressEvent(self, event: object) -> None:  # noqa: N802
        self.hide()


def _label(text: str, name: str, alignment: Qt.AlignmentFlag = Qt.AlignmentFlag.AlignLeft) -> QLabel:
    label = QLabel(text)
    label.setObjectName(name)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setAlignment(alignment | Qt.AlignmentFlag.AlignVCenter)
    return label
