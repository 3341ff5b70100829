"""One writer per project file: an advisory lock the kernel lets go of when its holder dies.

The lock is an ``flock`` on a sidecar file, ``P.punctum-lock``, beside the project (as SQLite keeps
``P.punctum-wal`` there), not on the project file itself: SQLite takes POSIX byte-range locks on
the project file, and where ``flock`` is emulated with those (NFS) a lock of ours on the same file
would block SQLite's own readers, and be dropped whenever SQLite closes one of its descriptors.
The sidecar also holds who has the lock (pid, host, command, since when), so a refusal can name
the holder. A holder that crashes (``kill -9``, a power cut) leaves the sidecar behind, but its
``flock`` goes with the process, so the next writer simply takes the lock over; nothing needs
cleaning up by hand and a live holder is never mistaken for a dead one.

The holder also gives the sidecar a second, hidden name (``.P.punctum-lock``, a hard link): a
sidecar deleted by hand while its holder lives would otherwise let a second writer make a new one
and take it; the holder's lock is still found under the second name.

The lock is held per process, with a count: the editor's analysis thread opens a second
connection on the project its session holds, and that is the same writer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from app.core.errors import PunctumError

if sys.platform == "win32":  # pragma: no cover - the same idea with the Windows primitive
    import msvcrt

    def _try_lock(fd: int, shared: bool = False) -> bool:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int, shared: bool = False) -> bool:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError as error:
            # A file system without locks (some FUSE mounts): work there as before, unguarded,
            # rather than refuse every project on it.
            if error.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                return True
            raise
        return True

    def _unlock(fd: int) -> None:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)


#: How long a writer retries before it refuses: covers a reader's momentary probe (``holder``)
#: and a holder that is just closing.
WAIT_SECONDS = 1.0


@dataclass(frozen=True)
class Holder:
    """Who holds a project for writing."""

    pid: int
    host: str
    command: str
    since: float

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since)) if self.since else "?"
        return f"{self.command} (pid {self.pid} on {self.host}, since {when})"


class ProjectLockedError(PunctumError):
    """Another process is writing the project."""

    def __init__(self, project: Path, holder: Holder | None) -> None:
        who = holder.describe() if holder else "another Punctum process"
        super().__init__(f"{project}: in use by {who}; try again when it has finished")
        self.holder = holder


def lock_path(project: Path) -> Path:
    return project.with_name(project.name + "-lock")


def _shadow_path(project: Path) -> Path:
    """A second name of the held sidecar (a hard link, hidden): a sidecar deleted by hand while its
    holder lives left the project open to a second writer; the holder's lock is still found here."""
    return project.with_name(f".{project.name}-lock")


@dataclass
class _Held:
    fd: int
    holder: Holder
    count: int = 1


_held: dict[Path, _Held] = {}
_guard = threading.Lock()


def acquire(project: Path, command: str, wait: float = WAIT_SECONDS) -> None:
    """Take the writer lock of ``project`` (a resolved path) for this process, or raise
    ``ProjectLockedError`` naming the holder. ``OSError`` when the sidecar cannot be made."""
    with _guard:
        held = _held.get(project)
        if held is not None:
            held.count += 1
            return
        holder = Holder(os.getpid(), socket.gethostname(), command, time.time())
        _held[project] = _Held(_take(project, holder, wait), holder)


def release(project: Path) -> None:
    with _guard:
        held = _held.get(project)
        if held is None:
            return
        held.count -= 1
        if held.count:
            return
        del _held[project]
        # Removed while still locked: a writer waiting on this file finds it gone and starts over.
        for name in (lock_path(project), _shadow_path(project)):
            with contextlib.suppress(OSError):
                if os.path.samestat(os.fstat(held.fd), name.stat()):
                    name.unlink()
        os.close(held.fd)


def holder(project: Path) -> Holder | None:
    """The live holder of the project's writer lock, or None when no process holds it (a holder
    that died holds nothing). Reads only: the sidecar is opened read-only, never created."""
    with _guard:
        if project in _held:
            return _held[project].holder
    for name in (lock_path(project), _shadow_path(project)):
        found = _live_holder(name)
        if found is not None:
            return found
    return None


def _live_holder(name: Path) -> Holder | None:
    """The holder of the sidecar at ``name`` if a live process holds it, else None."""
    try:
        fd = os.open(name, os.O_RDONLY)
    except OSError:
        return None
    try:
        if _try_lock(fd, shared=True):
            _unlock(fd)
            return None
        return _read_holder(fd) or Holder(0, "?", "another Punctum process", 0.0)
    finally:
        os.close(fd)


def _take(project: Path, holder: Holder, wait: float) -> int:
    path = lock_path(project)
    deadline = time.monotonic() + wait
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if not _try_lock(fd):
            found = _read_holder(fd)
            os.close(fd)
            if time.monotonic() >= deadline:
                raise ProjectLockedError(project, found)
            time.sleep(0.1)
            continue
        try:
            current = path.stat()
            mine = os.fstat(fd)
            same = (current.st_dev, current.st_ino) == (mine.st_dev, mine.st_ino)
        except FileNotFoundError:
            same = False
        if not same:  # the holder released it and removed the file between our open and lock
            os.close(fd)
            continue
        shadowed = None if _is_file(mine, _shadow_path(project)) else _live_holder(_shadow_path(project))
        if shadowed is not None:  # its sidecar was deleted by hand: the holder still writes
            os.close(fd)
            if time.monotonic() >= deadline:
                raise ProjectLockedError(project, shadowed)
            time.sleep(0.1)
            continue
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps(dataclasses.asdict(holder)).encode())
        _shadow(path, _shadow_path(project))
        return fd


def _is_file(mine: os.stat_result, name: Path) -> bool:
    """Whether ``name`` is the file ``mine`` describes (a dead holder's second name of the sidecar
    just taken over: its lock is ours now)."""
    try:
        return os.path.samestat(mine, name.stat())
    except OSError:
        return False


def _shadow(path: Path, shadow: Path) -> None:
    """``shadow`` made a second name of the sidecar ``path`` (where links can be made)."""
    with contextlib.suppress(OSError):
        shadow.unlink(missing_ok=True)
        os.link(path, shadow)


def _read_holder(fd: int) -> Holder | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = json.loads(os.read(fd, 4096) or b"null")
        return Holder(int(data["pid"]), str(data["host"]), str(data["command"]), float(data["since"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None
