"""The Settings dialogs (keyboard shortcuts, caption limits, triage policy), the re-cut's preview,
and the buttons every dialog of the editor uses: each with an Alt key, as a keyboard-first editor
expects."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QInputDialog,
    QKeySequenceEdit,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.core.checks import SPEAKER_DASHES, STYLE_GUIDE_LIMITS, CaptionLimits, check_cue
from app.core.model import Cue
from app.core.triage import PRECISION_TARGET, TARGET_RANGE, TriagePolicy
from app.ui.models import timestamp
from app.ui.shortcuts import COMMANDS

#: Standard buttons with their Alt keys (Qt's own texts have none on Linux).
BUTTON_TEXTS = {
    QDialogButtonBox.StandardButton.Ok: "&OK",
    QDialogButtonBox.StandardButton.Cancel: "&Cancel",
    QDialogButtonBox.StandardButton.Apply: "&Apply",
    QDialogButtonBox.StandardButton.Close: "C&lose",
    QDialogButtonBox.StandardButton.RestoreDefaults: "&Restore defaults",
}


def dialog_buttons(parent: QWidget, *buttons: QDialogButtonBox.StandardButton) -> QDialogButtonBox:
    """A dialog's button row, each button with its Alt key."""
    box = QDialogButtonBox(parent)
    for button in buttons:
        box.addButton(button).setText(BUTTON_TEXTS[button])
    return box


def ok_cancel_buttons(dialog: QDialog) -> QDialogButtonBox:
    """OK and Cancel, accepting and rejecting ``dialog``."""
    box = dialog_buttons(dialog, QDialogButtonBox.StandardButton.Ok, QDialogButtonBox.StandardButton.Cancel)
    box.accepted.connect(dialog.accept)
    box.rejected.connect(dialog.reject)
    return box


def message_box(parent: QWidget, title: str, text: str, icon: QMessageBox.Icon) -> QMessageBox:
    """A message with an "&OK" button, deleted when closed."""
    box = QMessageBox(icon, title, text, QMessageBox.StandardButton.NoButton, parent)
    ok: QPushButton = box.addButton(QMessageBox.StandardButton.Ok)
    ok.setText(BUTTON_TEXTS[QDialogButtonBox.StandardButton.Ok])
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    return box


def confirm(
    parent: QWidget, title: str, text: str, action: str, on_yes: Callable[[], None], harmless: bool = False
) -> QMessageBox:
    """Ask before an action: ``action`` (a button text with its Alt key) runs ``on_yes``; "&Cancel"
    does nothing. Enter is Cancel, as an action may not be taken back, unless it is ``harmless``.
    It does not block; the box is returned, open."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text, QMessageBox.StandardButton.NoButton, parent)
    yes = box.addButton(action, QMessageBox.ButtonRole.AcceptRole)
    cancel = box.addButton(QMessageBox.StandardButton.Cancel)
    cancel.setText(BUTTON_TEXTS[QDialogButtonBox.StandardButton.Cancel])
    box.setDefaultButton(yes if harmless else cancel)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.buttonClicked.connect(lambda button: on_yes() if button is yes else None)
    box.open()
    return box


class ShortcutDialog(QDialog):
    """Change any command's key; a key used twice is refused."""

    def __init__(self, keys: dict[str, str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        layout = QVBoxLayout(self)
        self.table = QTableWidget(len(COMMANDS), 2, self)
        self.table.setHorizontalHeaderLabels(["Command", "Key"])
        self.edits: dict[str, QKeySequenceEdit] = {}
        for row, command in enumerate(COMMANDS):
            item = QTableWidgetItem(command.label.replace("&", ""))
            item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.table.setItem(row, 0, item)
            edit = QKeySequenceEdit(QKeySequence(keys.get(command.name, "")), self)
            self.edits[command.name] = edit
            self.table.setCellWidget(row, 1, edit)
        self.table.resizeColumnsToContents()
        layout.addWidget(self.table)
        self.problem = QLabel("")
        self.problem.setStyleSheet("color: #a33")
        layout.addWidget(self.problem)
        buttons = dialog_buttons(
            self,
            QDialogButtonBox.StandardButton.Ok,
            QDialogButtonBox.StandardButton.Cancel,
            QDialogButtonBox.StandardButton.RestoreDefaults,
        )
        buttons.accepted.connect(self._check_and_accept)
        buttons.rejected.connect(self.reject)
        buttons.button(QDialogButtonBox.StandardButton.RestoreDefaults).clicked.connect(self._defaults)
        layout.addWidget(buttons)
        self.resize(520, 600)

    def keys(self) -> dict[str, str]:
        return {name: edit.keySequence().toString() for name, edit in self.edits.items()}

    def _defaults(self) -> None:
        for command in COMMANDS:
            self.edits[command.name].setKeySequence(QKeySequence(command.keys))

    def _check_and_accept(self) -> None:
        seen: dict[str, str] = {}
        for name, key in self.keys().items():
            if key and key in seen:
                self.problem.setText(f"{key} is used by both “{seen[key]}” and “{name}”")
                return
            seen[key] = name
        self.accept()


#: How each speaker dash is offered (``SPEAKER_DASHES``).
_DASH_SHOWN = {
    "none": "nothing (a line of its own)",
    "hyphen": "a hyphen: -Really?",
    "hyphen-space": "a hyphen and a space: - Really?",
    "en-dash": "an en dash and a space: \u2013 Really?",
}


class LimitsDialog(QDialog):
    """The caption limits the checks, re-breaking and re-cutting keep to."""

    def __init__(self, limits: CaptionLimits, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Caption limits")
        form = QFormLayout(self)
        self.cps, self.line, self.lines = QDoubleSpinBox(self), QSpinBox(self), QSpinBox(self)
        self.shortest, self.longest = QDoubleSpinBox(self), QDoubleSpinBox(self)
        self.gap, self.linger = QSpinBox(self), QSpinBox(self)
        self.shortest.setDecimals(3)
        self.longest.setDecimals(3)
        cps = limits.max_cps or STYLE_GUIDE_LIMITS.max_cps or 17.0
        rows: list[tuple[str, Any, tuple[float, float], float, str]] = [  # label, box, range, value, unit
            ("Characters per &second at most", self.cps, (5, 60), cps, ""),
            ("Characters per l&ine at most", self.line, (10, 200), limits.max_line_chars, ""),
            ("&Lines per cue at most", self.lines, (1, 10), limits.max_lines, ""),
            ("On screen at l&east", self.shortest, (0.1, 20), limits.min_ms / 1000, " s"),
            ("On screen at &most", self.longest, (0.1, 20), limits.max_ms / 1000, " s"),
            ("&Gap between cues at least", self.gap, (0, 5000), limits.min_gap_ms, " ms"),
            ("S&tays up after its speech", self.linger, (0, 5000), limits.linger_ms, " ms"),
        ]
        for label, box, (low, high), value, unit in rows:
            box.setRange(low, high)
            box.setSuffix(unit)
            box.setValue(value)
            form.addRow(label, box)
        self.dash = QComboBox(self)
        for name, dash in SPEAKER_DASHES.items():
            self.dash.addItem(_DASH_SHOWN[name], dash)
        self.dash.setCurrentIndex(max(0, self.dash.findData(limits.speaker_dash)))
        form.addRow("Two speakers in one cue: each line starts &with", self.dash)
        self.problem = QLabel(self)
        form.addRow(self.problem)
        form.addRow(ok_cancel_buttons(self))

    def limits(self) -> CaptionLimits:
        return CaptionLimits(
            max_line_chars=self.line.value(),
            max_lines=self.lines.value(),
            max_cps=self.cps.value(),
            min_ms=round(self.shortest.value() * 1000),
            max_ms=round(self.longest.value() * 1000),
            min_gap_ms=self.gap.value(),
            linger_ms=self.linger.value(),
            speaker_dash=str(self.dash.currentData()),
        )

    def accept(self) -> None:
        try:
            self.limits()
        except ValueError as error:
            self.problem.setText(str(error).capitalize())
            return
        super().accept()


class TriagePolicyDialog(QDialog):
    """Which gaps settle by themselves; the rest wait in the queue for a person."""

    def __init__(self, policy: TriagePolicy, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Triage policy")
        form = QFormLayout(self)
        self.agreement = QCheckBox("&Where the reference and the model propose the same mark", self)
        self.agreement.setChecked(policy.agreement)
        self.model_alone = QCheckBox(
            "Where there is &no reference and the model's mark is at least this likely right:", self
        )
        self.model_alone.setChecked(policy.precision_target is not None)
        self.target = QDoubleSpinBox(self)
        self.target.setRange(*TARGET_RANGE)
        self.target.setSingleStep(0.01)
        self.target.setDecimals(2)
        self.target.setValue(
            policy.precision_target if policy.precision_target is not None else PRECISION_TARGET
        )
        self.target.setEnabled(self.model_alone.isChecked())
        self.model_alone.toggled.connect(self.target.setEnabled)
        form.addRow(QLabel("Settle by themselves the gaps:"))
        form.addRow(self.agreement)
        form.addRow(self.model_alone, self.target)
        form.addRow(
            QLabel(
                f"At {PRECISION_TARGET:.2f}, about 3 in 100 of the marks that settle by themselves may be\n"
                "wrong (the confidence is calibrated on held-out speech and calls); everything else is\n"
                "queued for you."
            )
        )
        form.addRow(ok_cancel_buttons(self))

    def policy(self) -> TriagePolicy:
        return TriagePolicy(
            self.agreement.isChecked(), self.target.value() if self.model_alone.isChecked() else None
        )


def ask_confidence(parent: QWidget, title: str, label: str, value: float) -> float | None:
    """A confidence from the user, 0 to 1 in hundredths, or None when the dialog is cancelled."""
    dialog = _input_dialog(parent, title, label)
    dialog.setInputMode(QInputDialog.InputMode.DoubleInput)
    dialog.setDoubleRange(0.0, 1.0)
    dialog.setDoubleDecimals(2)
    dialog.setDoubleValue(value)
    return dialog.doubleValue() if dialog.exec() else None


def ask_text(parent: QWidget, title: str, label: str, text: str) -> str | None:
    """A line of text from the user, or None when the dialog is cancelled."""
    dialog = _input_dialog(parent, title, label)
    dialog.setTextValue(text)
    return dialog.textValue() if dialog.exec() else None


def _input_dialog(parent: QWidget, title: str, label: str) -> QInputDialog:
    dialog = QInputDialog(parent)
    dialog.setWindowTitle(title)
    dialog.setLabelText(label)
    dialog.setOkButtonText(BUTTON_TEXTS[QDialogButtonBox.StandardButton.Ok])
    dialog.setCancelButtonText(BUTTON_TEXTS[QDialogButtonBox.StandardButton.Cancel])
    return dialog


def _previewed(cue: Cue, limits: CaptionLimits, following: Cue | None) -> str:
    """A cue as the re-cut preview shows it: its times, how long it is up and how fast it reads,
    what it is over (marked ⚠, the gap before the ``following`` cue too), and its text."""
    check = check_cue(cue, limits, following)
    speed = f"{check.cps:.1f} cps" if check.cps != float("inf") else "no time"
    head = f"{timestamp(cue.start)} - {timestamp(cue.end)}  ({cue.duration / 1000:.2f} s, {speed})"
    if check.problems:
        head += "  ⚠ " + "; ".join(check.problems)
    return f"{head}\n{cue.text()}"


class RecutPreviewDialog(QDialog):
    """The cues cut again at sentence ends, beside today's, before they are: Apply makes it one
    undoable step."""

    def __init__(
        self,
        now: Sequence[Cue],
        recut: Sequence[Cue],
        summary: str,
        limits: CaptionLimits = STYLE_GUIDE_LIMITS,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Re-cut the cues at sentence ends")
        layout = QVBoxLayout(self)
        told = QLabel(summary, self)
        told.setWordWrap(True)
        layout.addWidget(told)
        sides = QHBoxLayout()
        for title, cues in ((f"Now: {len(now)} cues", now), (f"Re-cut: {len(recut)} cues", recut)):
            followed = [(cue, cues[n + 1] if n + 1 < len(cues) else None) for n, cue in enumerate(cues)]
            over = sum(not check_cue(cue, limits, following).ok for cue, following in followed if cue.words)
            column = QVBoxLayout()
            column.addWidget(QLabel(f"{title}, {over} over a limit", self))
            text = QPlainTextEdit(self)
            text.setReadOnly(True)
            text.setPlainText("\n\n".join(_previewed(cue, limits, following) for cue, following in followed))
            column.addWidget(text)
            sides.addLayout(column)
        layout.addLayout(sides)
        buttons = dialog_buttons(
            self, QDialogButtonBox.StandardButton.Apply, QDialogButtonBox.StandardButton.Cancel
        )
        buttons.button(QDialogButtonBox.StandardButton.Apply).clicked.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(900, 560)
