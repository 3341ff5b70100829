"""Run-time hook of the bundle, in place of PyInstaller's for PySide6: it points Qt at the plugins
and QML files inside the bundle, and does not import Qt. PyInstaller's also imports QtCore at every
start to register a qt.conf, which PySide6's own wheels make when they load; for the command line,
which never loads Qt, that import cost 70 ms and 10 MB on each run."""

import os
import sys


def _point_qt_at_the_bundle() -> None:
    qt = (
        os.path.join(sys._MEIPASS, "PySide6")
        if sys.platform.startswith("win")
        else os.path.join(sys._MEIPASS, "PySide6", "Qt")
    )  # type: ignore[attr-defined]
    os.environ["QT_PLUGIN_PATH"] = os.path.join(qt, "plugins")
    os.environ["QML2_IMPORT_PATH"] = os.path.join(qt, "qml")
    if sys.platform.startswith("win"):
        os.environ["PATH"] = sys._MEIPASS + os.pathsep + os.environ.get("PATH", "")  # type: ignore[attr-defined]


_point_qt_at_the_bundle()
