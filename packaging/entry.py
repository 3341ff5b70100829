"""The bundle's program: the ``punctum`` command (``punctum gui`` opens the editor).

Frozen, it lets the background processes of the editor and of batch (multiprocessing, spawn)
start from the same program.
"""

from __future__ import annotations

import multiprocessing

if __name__ == "__main__":
    multiprocessing.freeze_support()
    from app.launch import run

    run()
