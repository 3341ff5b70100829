"""The ``punctum`` command's start, for every way it is started (``python -m app``, the installed
script, the desktop bundle): Ctrl+C stops it at any moment, its start-up imports included, with
one line and exit status 130, and a run a shell started in the background (with SIGINT ignored)
stops on SIGINT too."""

from __future__ import annotations

import signal
import sys
from typing import NoReturn

from app.core.errors import EXIT_INTERRUPTED  # plain Python, nothing to wait for


def _exit_interrupted(say: bool) -> NoReturn:
    """Exit with status 130 after the exit handlers. Not ``sys.exit``: a Ctrl+C that passed
    through a compiled library's start-up (pybind11 runs Python code there) leaves the
    interpreter marked as killed by SIGINT even once handled, and it would end by that signal."""
    import atexit
    import os

    if say:
        sys.stderr.write("punctum: interrupted\n")
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


def run() -> NoReturn:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # until the handler below is in place
    try:
        from app.core.memory import cap_malloc_arenas

        cap_malloc_arenas()  # before any library starts its threads
        from app.core.interrupts import catch_interrupts, interrupted

        catch_interrupts()
        from app.cli import main
    except BaseException as error:
        # Ctrl+C, or an error a library made of it; any other error is a broken installation,
        # and its traceback is what to report.
        if isinstance(error, KeyboardInterrupt) or ("app.core.interrupts" in sys.modules and interrupted()):
            _exit_interrupted(say=True)
        raise
    status = main()
    if status == EXIT_INTERRUPTED:  # main has said why
        _exit_interrupted(say=False)
    sys.exit(status)
