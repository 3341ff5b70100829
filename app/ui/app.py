"""Starting the editor: ``punctum gui [FILES...]`` and ``make run``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from app.core.errors import PunctumError


def _check_display() -> None:
    """Qt aborts the process when it finds no screen; say so in one line instead."""
    if sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM"):
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            raise PunctumError(
                "no display to open the editor on (DISPLAY is not set); on a server, run it under"
                " xvfb-run, or use the punctum commands in the terminal"
            )


def main(files: list[str], model: str | None = None, sample: bool = False) -> int:
    _check_display()
    from PySide6.QtWidgets import QApplication

    from app.ui.window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Punctum")
    app.setOrganizationName("Punctum")
    window = MainWindow(model=model)
    window.show()
    if sample:
        window.open_sample()
    elif files:
        window.open_paths([Path(f) for f in files])
    return int(app.exec())
