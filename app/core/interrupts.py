"""Ctrl+C for the punctum command: noticed at any moment, whatever a library makes of it."""

from __future__ import annotations

import signal
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
