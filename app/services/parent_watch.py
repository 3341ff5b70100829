"""A worker process that ends with the process that started it, however that one ends.

A pool's worker busy with a file reads no pipe until the file is done: when its driver was killed
(``kill -9``, SIGHUP from a closed terminal, SIGTERM), it went on with the file at full CPU,
parented to init. A thread here notices the parent's end (the process is given another parent)
within ``POLL`` seconds and ends the worker at once. Not Linux's ``PR_SET_PDEATHSIG``: that fires
when the parent's *thread* that started the worker ends, and a pool starts replacement workers
from a thread of its own.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from app.core.memory import cap_malloc_arenas

#: Seconds between looks at the parent.
POLL = 0.25


def end_with_parent() -> None:
    """From now on, end this process (without clean-up: its parent is gone) when its parent ends."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(POLL)
        os._exit(1)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()


def start_worker_process() -> None:
    """What a worker process does first: Ctrl+C is its parent's to handle; it ends with its parent
    (busy, it reads no pipe, and would outlive a parent killed outright); and, a process of its own
    not started by ``app.launch``, it caps malloc's arenas before its libraries start threads."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_with_parent()
    cap_malloc_arenas()
