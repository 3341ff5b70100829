"""Screenshots of the real editor window on a virtual screen, in every state a user meets.

    xvfb-run -a -s "-screen 0 1920x1080x24" .venv/bin/python packaging/screenshots.py OUT_DIR

(or `make screenshots`). The window runs on the X11 (xcb) platform like on a desktop, at 1280x720
and at 1920x1080; each state is grabbed from the X server's screen (menus and dialogs included),
so what is saved is what a user would see. Keys go to the window as key events, as a keyboard's
would. Screenshots are written to OUT_DIR and are not part of the repository.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SIZES = ((1280, 720), (1920, 1080))


def main() -> int:
    if not os.environ.get("DISPLAY"):
        print("screenshots: no X display; run under xvfb-run (see the module's help)", file=sys.stderr)
        return 2
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="punctum-shots-"))
    os.environ["PUNCTUM_DATA_DIR"] = str(scratch / "data")
    os.environ.setdefault("QT_QPA_PLATFORM", "xcb")

    from PySide6.QtCore import QSettings, Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

    from app.ui.dialogs import LimitsDialog, RecutPreviewDialog, ShortcutDialog, TriagePolicyDialog
    from app.ui.shortcuts import saved_keys, saved_limits, saved_policy
    from app.ui.window import MainWindow

    app = QApplication([])
    window = MainWindow(settings=QSettings(str(scratch / "settings.ini"), QSettings.Format.IniFormat))
    window.move(0, 0)

    def settle(seconds: float = 0.6) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.02)

    def press(key: Qt.Key, target: QWidget | None = None) -> None:
        QTest.keyClick(target or window, key)
        settle(0.3)

    def shot(name: str) -> None:
        settle()
        width, height = window.width(), window.height()
        target = out / f"{width}x{height}-{name}.png"
        screen = app.primaryScreen()
        screen.grabWindow(0, 0, 0, width, height).save(str(target))
        print(target)

    def shot_dialog(name: str, dialog: QWidget) -> None:
        dialog.show()
        dialog.move(window.x() + (window.width() - dialog.width()) // 2, window.y() + 120)
        shot(name)
        dialog.close()

    def close_messages() -> None:
        for widget in QApplication.topLevelWidgets():
            if isinstance(widget, QMessageBox) and widget.isVisible():
                widget.close()
        settle(0.2)

    sample = scratch / "sample"
    shutil.copytree(ROOT / "resources" / "sample", sample)
    for number, (width, height) in enumerate(SIZES):
        window.resize(width, height)
        window.show()
        settle(1.0)
        if number == 0:
            shot("1-welcome")
            window.files.open_captions(sample / "sample.srt", sample / "sample.mp4", sample / "reference.txt")
            settle(0.5)
            shot("2-analysing")
            deadline = time.monotonic() + 300
            while window.session is None or window.worker.busy or not window.session.analysed:
                settle(0.1)
                if time.monotonic() > deadline:
                    break
        shot("3-suggestions")
        if number == 0:
            window.activateWindow()
            for key in (Qt.Key.Key_J, Qt.Key.Key_A, Qt.Key.Key_X, Qt.Key.Key_Question):
                press(key)
        shot("4-queue-after-decisions")
        press(Qt.Key.Key_E)
        shot("5-every-gap")
        press(Qt.Key.Key_E)
        press(Qt.Key.Key_F1)
        shot("6-keys")
        press(Qt.Key.Key_Escape, window.help)
        shot_dialog("7-settings-keys", ShortcutDialog(saved_keys(window.settings), window))
        shot_dialog("8-settings-limits", LimitsDialog(saved_limits(window.settings), window))
        shot_dialog("9-settings-triage", TriagePolicyDialog(saved_policy(window.settings), window))
        if window.session is not None:  # Edit ▸ Re-cut the cues at sentence ends: the preview
            session = window.session
            now, preview, recut = session.recut_preview()
            previewed = RecutPreviewDialog(now.cues, preview.cues, recut.summary(), session.limits, window)
            shot_dialog("9-recut-preview", previewed)
        window.show_about()
        shot("10-about")
        close_messages()
        (scratch / "notes.txt").write_text("not captions\n")
        window.files.open_paths([scratch / "notes.txt"])
        shot("11-open-error")
        close_messages()
        window.files.export(scratch / "no-such-folder" / "out.srt")
        shot("12-export-error")
        close_messages()
        # The window a first start shows while it prepares the model (once per machine).
        window.analysis.show_progress(window.analysis.PREPARING + "…", -1)
        shot("13-first-start")
        window.analysis.show_busy(False)
    transcribe_shots(window, scratch, settle, shot)
    window.close()
    app.processEvents()
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


def transcribe_shots(window: Any, scratch: Path, settle: Any, shot: Any) -> None:
    """A video with no captions: the offer, the transcription's progress, the review that follows."""
    import importlib.util

    from PySide6.QtWidgets import QApplication, QMessageBox

    if importlib.util.find_spec("faster_whisper") is None:
        print("screenshots: no transcription shots (the transcribe extra is not installed)", file=sys.stderr)
        return
    window.resize(*SIZES[0])
    talk = scratch / "talk"
    talk.mkdir()
    shutil.copy(ROOT / "resources" / "sample" / "sample.mp4", talk / "talk.mp4")
    window.files.open_paths([talk / "talk.mp4"])
    settle(0.5)
    shot("14-transcribe-offer")
    offer = next(w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible())
    next(b for b in offer.buttons() if b.text() == "&Transcribe").click()
    deadline = time.monotonic() + 120
    while "Transcribing" not in window.progress_label.text() and time.monotonic() < deadline:
        settle(0.1)
    settle(2.0)
    shot("15-transcribing")
    deadline = time.monotonic() + 300
    while (
        window.session is None or window.session.entry.media_path != talk / "talk.mp4" or window.worker.busy
    ):
        settle(0.2)
        if time.monotonic() > deadline:
            break
    shot("16-review-after-transcription")


if __name__ == "__main__":
    sys.exit(main())
