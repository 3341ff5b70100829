"""Starting the editor: ``punctum gui [FILES...]`` and ``make run``."""

from __future__ import annotations

import sys
from pathlib import Path


def main(files: list[str], model: str | None = None, sample: bool = False) -> int:
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
