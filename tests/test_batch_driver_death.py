"""``batch``'s worker processes end with their driver, however it ends: ``kill -9``, or SIGHUP (the
terminal closed) as SIGTERM. Left running, a worker went on with its file at full CPU and a
gigabyte of memory, its parent gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.test_batch import _busy_workers, long_captions


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("number", [signal.SIGKILL, signal.SIGHUP], ids=["kill-9", "hup"])
def test_batch_workers_end_with_their_driver(number: int, tiny_model: Path, tmp_path: Path) -> None:
    folder = long_captions(tmp_path / "in")  # the worker is still on it when its driver ends
    command = [
        sys.executable, "-m", "app", "batch", str(folder), "--project", str(tmp_path / "work.punctum"),
        "--model", str(tiny_model), "--workers", "1",
    ]  # fmt: skip
    driver = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and driver.poll() is None and not workers:
            workers = _busy_workers(driver.pid)
            time.sleep(0.02)
        assert workers, "the worker finished before its driver could be ended"
        os.kill(driver.pid, number)
        driver.wait(timeout=30)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in workers), "a worker outlived its driver"
    finally:
        driver.kill()
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_terminated_batch_ends_its_workers_and_leaks_nothing(tiny_model: Path, tmp_path: Path) -> None:
    folder = long_captions(tmp_path / "in")  # the worker is still on it when the batch is terminated
    project = tmp_path / "work.punctum"
    command = [
        sys.executable, "-m", "app", "batch", str(folder), "--project", str(project),
        "--model", str(tiny_model), "--workers", "1",
    ]  # fmt: skip
    driver = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and driver.poll() is None and not workers:
            workers = _busy_workers(driver.pid)
            time.sleep(0.02)
        assert workers, "the worker finished before the batch could be terminated"
        driver.terminate()
        # Read to the end: the pool's resource tracker, which writes here too, has ended as well.
        _, stderr = driver.communicate(timeout=60)
        assert driver.returncode == 143, stderr
        assert stderr == "punctum: terminated\n"  # no "leaked semaphore objects" from the tracker
        assert not any(_alive(pid) for pid in workers), "a worker outlived its driver"
    finally:
        driver.kill()
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    status = subprocess.run(
        [sys.executable, "-m", "app", "status", str(project), "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert status.returncode == 0 and '"state": "pending"' in status.stdout, status  # done next run
