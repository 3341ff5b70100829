"""Render resources/icons/punctum.svg to the PNG sizes desktops ask for (run after changing it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

SIZES = (16, 32, 48, 64, 128, 256, 512)


def main() -> int:
    folder = Path(__file__).resolve().parent.parent / "resources" / "icons"
    app = QGuiApplication(sys.argv)
    renderer = QSvgRenderer(str(folder / "punctum.svg"))
    for size in SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        renderer.render(painter)
        painter.end()
        image.save(str(folder / f"punctum-{size}.png"))
    del app
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
