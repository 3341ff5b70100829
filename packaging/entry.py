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
    from app.cli import main

    sys.exit(main())
