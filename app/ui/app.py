"""Starting the editor: ``punctum gui [FILES...]`` and ``make run``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from app.core.errors import PunctumError

#: X11 libraries Qt's xcb platform plugin loads; without them Qt aborts the process.
_XCB_LIBRARIES = {
    "xcb-cursor": "libxcb-cursor0",
    "xcb-icccm": "libxcb-icccm4",
    "xcb-keysyms": "libxcb-keysyms1",
    "xkbcommon-x11": "libxkbcommon-x11-0",
}


def _check_display() -> None:
    """Qt aborts the process when it finds no screen or cannot load its X11 plugin; say why in one
    line instead."""
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if not sys.platform.startswith("linux") or platform not in ("", "xcb"):
        return
    if not platform and os.environ.get("WAYLAND_DISPLAY"):
        return
    if not os.environ.get("DISPLAY"):
        raise PunctumError(
            "no display to open the editor on (DISPLAY is not set); on a server, run it under"
            " xvfb-run, or use the punctum commands in the terminal"
        )
    import ctypes.util

    missing = [package for name, package in _XCB_LIBRARIES.items() if ctypes.util.find_library(name) is None]
    if missing:
        raise PunctumError(
            f"Qt's X11 window needs {', '.join(missing)}; install with: sudo apt install {' '.join(missing)}"
            " (or run `make run`, which does)"
        )


def main(files: list[str], model: str | None = None, sample: bool = False) -> int:
    _check_display()
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.core.bundled import version
    from app.ui import startup_log
    from app.ui.about import application_icon
    from app.ui.window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Punctum")
    app.setOrganizationName("Punctum")
    app.setApplicationVersion(version())
    QApplication.setDesktopFileName("punctum")  # the .desktop entry install.sh writes
    QApplication.setWindowIcon(application_icon())
    window = MainWindow(model=model)
    window.show()
    # Noted once the event loop has drawn the window, not when show() was asked for.
    QTimer.singleShot(0, lambda: startup_log.note("window_shown"))
    if sample:
        window.files.open_sample()
    elif files:
        window.files.open_paths([Path(f) for f in files])
    return int(app.exec())
