"""The editor's commands with their default keys, the help overlay that lists them, and the dialog
that changes them (kept in the user's settings)."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QKeySequenceEdit,
    QLabel,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.core.checks import CaptionLimits
from app.core.triage import OPERATING_THRESHOLD, TriagePolicy


@dataclass(frozen=True)
class Command:
    name: str  # settings key
    label: str
    keys: str  # default, in QKeySequence's portable text
    menu: str


COMMANDS = (
    Command("open", "&Open captions…", "Ctrl+O", "File"),
    Command("open_media", "Open &media…", "Ctrl+M", "File"),
    Command("open_reference", "Open &reference transcript…", "Ctrl+R", "File"),
    Command("open_project", "Open &project…", "Ctrl+Shift+O", "File"),
    Command("save_project", "&Save project as…", "Ctrl+S", "File"),
    Command("export", "&Export captions…", "Ctrl+E", "File"),
    Command("quit", "&Quit", "Ctrl+Q", "File"),
    Command("undo", "&Undo", "Ctrl+Z", "Edit"),
    Command("redo", "&Redo", "Ctrl+Shift+Z", "Edit"),
    Command("edit_word", "Edit the &word…", "F2", "Edit"),
    Command("next", "&Next suggestion", "J", "Review"),
    Command("previous", "&Previous suggestion", "K", "Review"),
    Command("accept", "&Accept", "A", "Review"),
    Command("reject", "Re&ject", "X", "Review"),
    Command("mark_comma", "Make it a comma", ",", "Review"),
    Command("mark_period", "Make it a period", ".", "Review"),
    Command("mark_question", "Make it a question mark", "?", "Review"),
    Command("mark_exclamation", "Make it an exclamation mark", "!", "Review"),
    Command("mark_colon", "Make it a colon", ":", "Review"),
    Command("mark_none", "No mark here", "Backspace", "Review"),
    Command("accept_above", "Accept all above a &confidence…", "Ctrl+Shift+A", "Review"),
    Command("suggest", "&Make suggestions (after a cancel or failure)", "Ctrl+G", "Review"),
    Command("lowest_first", "&Lowest confidence first", "L", "Review"),
    Command("show_all", "Show &every gap, not only the queue", "E", "Review"),
    Command("play", "&Play the current cue", "Space", "Review"),
    Command("play_gap", "Play around the &gap (3 s)", "P", "Review"),
    Command("shortcuts", "&Keyboard shortcuts…", "", "Settings"),
    Command("limits", "Caption &limits…", "", "Settings"),
    Command("triage", "&Triage policy…", "", "Settings"),
    Command("listen", "Let the model &hear the audio (experimental)", "", "Settings"),
    Command("help", "&Help: keys", "F1", "Help"),
    Command("about", "&About Punctum", "", "Help"),
)

MARK_COMMANDS = {
    "mark_comma": ",",
    "mark_period": ".",
    "mark_question": "?",
    "mark_exclamation": "!",
    "mark_colon": ":",
    "mark_none": "",
}


def saved_keys(settings: QSettings) -> dict[str, str]:
    return {c.name: str(settings.value(f"shortcuts/{c.name}", c.keys)) for c in COMMANDS}


def saved_limits(settings: QSettings) -> CaptionLimits:
    defaults = CaptionLimits()
    return CaptionLimits(
        float(settings.value("limits/max_cps", defaults.max_cps)),  # type: ignore[arg-type]
        int(settings.value("limits/max_line_length", defaults.max_line_length)),  # type: ignore[call-overload]
        int(settings.value("limits/max_lines", defaults.max_lines)),  # type: ignore[call-overload]
    )


class HelpOverlay(QLabel):
    """A translucent sheet over the window listing every command and its key; any key closes it."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("helpOverlay")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setStyleSheet(
            "#helpOverlay { background: rgba(20, 24, 28, 225); color: white; font-size: 13px; }"
        )
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.hide()

    def show_keys(self, keys: dict[str, str]) -> None:
        rows = []
        for menu in ("Review", "Edit", "File", "Help"):
            rows.append(f"<tr><td colspan=2><br><b>{menu}</b></td></tr>")
            for command in COMMANDS:
                if command.menu == menu and keys.get(command.name):
                    label = command.label.replace("&", "").rstrip("…")
                    key = QKeySequence(keys[command.name]).toString(QKeySequence.SequenceFormat.NativeText)
                    rows.append(f"<tr><td align=right><b>{key}</b>&nbsp;&nbsp;</td><td>{label}</td></tr>")
        self.setText(
            "<h2>Keyboard</h2><table>" + "".join(rows) + "</table><p>Press any key to close.</p>"
            "<p>Colours: red unsure → green sure; blue text: from the reference, green: yours.</p>"
        )
        parent = self.parentWidget()
        if parent is not None:
            self.setGeometry(parent.rect())
        self.show()
        self.raise_()
        self.setFocus()

    def keyPressEvent(self, event: object) -> None:  # noqa: N802
        self.hide()

    def mousePressEvent(self, event: object) -> None:  # noqa: N802
        self.hide()


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
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok
            | QDialogButtonBox.StandardButton.Cancel
            | QDialogButtonBox.StandardButton.RestoreDefaults,
            self,
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


class LimitsDialog(QDialog):
    def __init__(self, limits: CaptionLimits, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Caption limits")
        form = QFormLayout(self)
        self.cps = QDoubleSpinBox(self)
        self.cps.setRange(5, 60)
        self.cps.setValue(limits.max_cps)
        self.line = QSpinBox(self)
        self.line.setRange(10, 200)
        self.line.setValue(limits.max_line_length)
        self.lines = QSpinBox(self)
        self.lines.setRange(1, 10)
        self.lines.setValue(limits.max_lines)
        form.addRow("Characters per second at most", self.cps)
        form.addRow("Characters per line at most", self.line)
        form.addRow("Lines per cue at most", self.lines)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def limits(self) -> CaptionLimits:
        return CaptionLimits(self.cps.value(), self.line.value(), self.lines.value())


def saved_listening(settings: QSettings) -> bool:
    """Whether the model hears the media itself (off unless chosen: on real speech it lowered
    accuracy; the model card's "Audio")."""
    return str(settings.value("model/listen", "false")).lower() == "true"


def saved_policy(settings: QSettings) -> TriagePolicy:
    """The triage policy kept in the user's settings; the measured operating point by default."""
    agreement = str(settings.value("triage/agreement", "true")).lower() == "true"
    threshold = str(settings.value("triage/model_threshold", OPERATING_THRESHOLD))
    try:
        value = None if threshold in ("", "none") else min(1.0, max(0.0, float(threshold)))
    except ValueError:
        value = OPERATING_THRESHOLD
    return TriagePolicy(agreement, value)


def save_policy(settings: QSettings, policy: TriagePolicy) -> None:
    settings.setValue("triage/agreement", "true" if policy.agreement else "false")
    threshold = policy.model_threshold
    settings.setValue("triage/model_threshold", "none" if threshold is None else threshold)


class TriagePolicyDialog(QDialog):
    """Which gaps settle by themselves; the rest wait in the queue for a person."""

    def __init__(self, policy: TriagePolicy, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Triage policy")
        form = QFormLayout(self)
        self.agreement = QCheckBox("Where the reference and the model propose the same mark", self)
        self.agreement.setChecked(policy.agreement)
        self.model_alone = QCheckBox("Where there is no reference and the model is at least this sure:", self)
        self.model_alone.setChecked(policy.model_threshold is not None)
        self.threshold = QDoubleSpinBox(self)
        self.threshold.setRange(0.5, 1.0)
        self.threshold.setSingleStep(0.01)
        self.threshold.setDecimals(2)
        self.threshold.setValue(
            policy.model_threshold if policy.model_threshold is not None else OPERATING_THRESHOLD
        )
        self.threshold.setEnabled(self.model_alone.isChecked())
        self.model_alone.toggled.connect(self.threshold.setEnabled)
        form.addRow(QLabel("Settle by themselves the gaps:"))
        form.addRow(self.agreement)
        form.addRow(self.model_alone, self.threshold)
        form.addRow(
            QLabel(
                f"At {OPERATING_THRESHOLD:.2f} the model's own decisions were 98% right on held-out\n"
                "business calls (the review-effort benchmark); everything else is queued for you."
            )
        )
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def policy(self) -> TriagePolicy:
        return TriagePolicy(
            self.agreement.isChecked(), self.threshold.value() if self.model_alone.isChecked() else None
        )
