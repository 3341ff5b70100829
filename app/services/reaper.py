"""A watcher that ends the processes a ``punctum batch --ray`` started, once that batch has ended
in any way, ``kill -9`` included.

A Ray cluster started for one run (``--ray`` without an address) is the driver's children and
theirs: Ray's own clean-up runs only when the driver ends normally, and agents it starts
(``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``) outlived a killed driver by minutes, one of
them listening on a port. The watcher is a process of its own session (Ctrl+C at the terminal
does not reach it). It notes the driver's descendants every second, and when the driver's end of
its standard input closes (the driver has ended, however), it ends the ones still there: SIGTERM,
then SIGKILL. A process is matched by its id and start time, so an id the system gave to another
process since is left alone. Linux only (``/proc``); elsewhere nothing is watched.

Run: ``python -m app.services.reaper DRIVER_PID`` with a pipe from the driver as standard input.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from pathlib import Path

#: Seconds given to Ray's own shutdown after a normal end, and to SIGTERM before SIGKILL.
GRACE = 3.0
#: Seconds between looks at the driver's descendants.
POLL = 0.25


def _started(pid: int) -> str | None:
    """The process's start time (clock ticks after boot), or None once it is gone (a zombie, which
    only waits for its parent to collect it, counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return None if fields[0] == "Z" else fields[19]


def descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid``, with its start time."""
    found: dict[int, str] = {}
    waiting = [pid]
    while waiting:
        parent = waiting.pop()
        try:
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            started = _started(child)
            if started is not None and child not in found:
                found[child] = started
                waiting.append(child)
    return found


def _end(processes: dict[int, str]) -> None:
    for number in (signal.SIGTERM, signal.SIGKILL):
        alive = {pid: started for pid, started in processes.items() if _started(pid) == started}
        for pid in alive:
            with contextlib.suppress(OSError):  # gone meanwhile, or not ours to signal
                os.kill(pid, number)
        if not alive:
            return
        time.sleep(GRACE)


def watch(driver: int) -> None:
    seen: dict[int, str] = {}
    me = os.getpid()
    while True:
        ready, _, _ = select.select([sys.stdin], [], [], POLL)
        if ready and not os.read(sys.stdin.fileno(), 4096):
            break  # the driver's end of the pipe closed: it has ended
        seen.update({pid: started for pid, started in descendants(driver).items() if pid != me})
    # What the last look missed was started by what it saw: their children, while they live.
    for pid in list(seen):
        seen.update(descendants(pid))
    time.sleep(GRACE)  # after a normal end, Ray's own shutdown goes first
    for pid in list(seen):
        seen.update(descendants(pid))
    _end(seen)


def start_watching() -> object | None:
    """Start the watcher for this process; keep what it returns for the process's life (its pipe
    is how the watcher learns that this process has ended). None where /proc is missing."""
    import subprocess

    if not Path(f"/proc/{os.getpid()}/task").is_dir():
        return None
    return subprocess.Popen(
        [sys.executable, "-m", "app.services.reaper", str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


if __name__ == "__main__":
    watch(int(sys.argv[1]))
