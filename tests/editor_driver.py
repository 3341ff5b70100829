"""Drives the real editor window from another process, for tests that kill it mid-review.

    python -m tests.editor_driver CAPTIONS REFERENCE DECISIONS

Opens the captions with their reference, makes DECISIONS keyboard decisions (accept, reject,
change to a question mark, in turn), prints what it decided as one JSON line, then waits to be
killed. ``PUNCTUM_DATA_DIR`` says where the autosave project goes.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main() -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QSettings, Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from app.ui.window import MainWindow

    captions, reference, count = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    app = QApplication([])
    settings = QSettings(str(captions.with_suffix(".ini")), QSettings.Format.IniFormat)
    window = MainWindow(settings=settings)
    window.show()
    window.files.open_captions(captions, None, reference)
    deadline = time.monotonic() + 300
    while (
        window.worker.busy or window.session is None or not window.session.analysed
    ) and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)
    assert window.session is not None and window.session.analysed, window.last_error
    touched = []
    keys = [Qt.Key.Key_A, Qt.Key.Key_X, Qt.Key.Key_Question]
    for number in range(count):
        touched.append(window.current_id)
        QTest.keyClick(window, keys[number % 3])
        app.processEvents()
    # Statuses as they stand when the window is killed: a later decision may settle an earlier
    # one's suggestion too (a "?" put on a gap, then that gap's proposal accepted).
    decided = {sid: window.session.document.suggestion(sid).status.value for sid in touched}
    print(
        json.dumps({"decided": decided, "marks": [w.mark for w in window.session.document.words()]}),
        flush=True,
    )
    while True:  # the test kills us here, mid-review
        app.processEvents()
        time.sleep(0.05)


if __name__ == "__main__":
    main()
