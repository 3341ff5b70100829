"""The bundle's program: the ``punctum`` command (``punctum gui`` opens the editor).

Frozen, it finds the ffmpeg and ffprobe the bundle carries in ``tools/`` first, and lets the
background processes of the editor and of batch (multiprocessing, spawn) start from the same
program.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path

if __name__ == "__main__":
    multiprocessing.freeze_support()
    if getattr(sys, "frozen", False):
        tools = Path(getattr(sys, "_MEIPASS", Path(sys.executable).parent)) / "tools"
        os.environ["PATH"] = f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"
        # The transcribe add-on, when unpacked over the bundle's folder, brings its own packages.
        site = Path(sys.executable).resolve().parent / "addons" / "transcribe" / "site"
        if site.is_dir():
            sys.path.insert(0, str(site))
    from app.launch import run

    run()
