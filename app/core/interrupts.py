"""Ctrl+C for the punctum command: noticed at any moment, whatever a library makes of it; and
SIGTERM taken as Ctrl+C where a run must release what it started."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_seen = False


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    global _seen
    _seen = True
    raise KeyboardInterrupt


def catch_interrupts() -> None:
    """Raise KeyboardInterrupt on SIGINT, also in a run a shell started in the background (with
    SIGINT ignored), and remember that it came."""
    global _seen
    _seen = False
    signal.signal(signal.SIGINT, _on_sigint)


def interrupted() -> bool:
    """Whether SIGINT came. A library may turn its KeyboardInterrupt into another error: a
    compiled module interrupted while it initialises raises "ImportError: initialization failed"
    (CTranslate2's does), and the import machinery interrupted at the wrong moment a TypeError."""
    return _seen


class Terminated(KeyboardInterrupt):
    """SIGTERM, during a run that stops on it as on Ctrl+C (``terminate_as_interrupt``)."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM stops the run as Ctrl+C does (a ``Terminated``, which is a
    KeyboardInterrupt), so what it started is ended and released: a process pool's workers, and
    the semaphores that the pool's resource tracker otherwise reports as leaked. Outside the main
    thread, where no handler can be set, SIGTERM is left as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if before is None else before)
