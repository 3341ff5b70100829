"""Screenshots of the real editor window on a virtual screen, in its main states.

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python packaging/screenshots.py OUT_DIR

(or `make screenshots`). The window runs on the X11 (xcb) platform like on a desktop; each state is
captured from the X server itself with ImageMagick's `import`, so what is saved is what a user would
see. Screenshots are written to OUT_DIR and are not part of the repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    if not os.environ.get("DISPLAY"):
        print("screenshots: no X display; run under xvfb-run (see the module's help)", file=sys.stderr)
        return 2
    if shutil.which("import") is None:
        print("screenshots: ImageMagick's `import` is missing (apt install imagemagick)", file=sys.stderr)
        return 2
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="punctum-shots-"))
    os.environ["PUNCTUM_DATA_DIR"] = str(scratch / "data")
    os.environ.setdefault("QT_QPA_PLATFORM", "xcb")

    from PySide6.QtCore import QSettings, Qt
    from PySide6.QtWidgets import QApplication

    from app.ui.window import MainWindow

    app = QApplication([])
    window = MainWindow(settings=QSettings(str(scratch / "settings.ini"), QSettings.Format.IniFormat))
    window.resize(1580, 960)
    window.move(0, 0)
    window.show()

    def settle(seconds: float = 0.6) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.02)

    def press(key: str) -> None:
        if shutil.which("xdotool"):
            subprocess.run(["xdotool", "key", key], check=True)
        settle(0.3)

    def shot(name: str) -> None:
        settle()
        target = out / f"{name}.png"
        subprocess.run(["import", "-window", "root", str(target)], check=True)
        print(target)

    settle(1.0)
    shot("1-welcome")
    sample = scratch / "sample"
    shutil.copytree(ROOT / "resources" / "sample", sample)
    window.open_captions(sample / "sample.srt", sample / "sample.mp4", sample / "reference.txt")
    settle(0.5)
    shot("2-analysing")
    deadline = time.monotonic() + 300
    while window.session is None or window.worker.busy or not window.session.analysed:
        settle(0.1)
        if time.monotonic() > deadline:
            break
    shot("3-suggestions")
    # Real key presses through the X server (xdotool), as an editor's keyboard would send them.
    window.activateWindow()
    settle()
    for key in ("a", "a", "x", "j", "question", "a", "ctrl+z"):
        press(key)
    shot("4-after-decisions")
    press("p")  # the gap marked on the waveform, its evidence beside the queue
    shot("5-evidence")
    press("e")
    shot("6-every-gap")
    press("F1")
    shot("7-help-overlay")
    window.help.hide()
    window.close()
    app.processEvents()
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
