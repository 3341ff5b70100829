"""How much memory the process keeps: glibc's malloc pools."""

from __future__ import annotations

import sys


def cap_malloc_arenas(arenas: int = 2) -> None:
    """Let glibc's malloc keep at most ``arenas`` memory pools in this process, from now on.

    Each thread that allocates under contention otherwise gets a pool of its own (up to 8 per
    core) and keeps what it freed there. Listening to ten minutes of media, with the recogniser's
    two decoder threads beside ONNX Runtime's, peaked 505 MB above not listening, and 389 MB with
    two pools from the start, at the same speed (2 cores, glibc 2.36). Called as early as
    possible: pools made before stay. Elsewhere (macOS, musl, Windows) nothing is done."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").mallopt(_M_ARENA_MAX, arenas)
    except (OSError, AttributeError):  # not glibc
        return


def give_back_freed() -> None:
    """Hand the pages malloc holds free back to the system, where it is glibc's: what a closed ONNX
    Runtime session freed otherwise stays resident (155 MB of the text model's)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        return


_M_ARENA_MAX = -8  # glibc's malloc.h
