"""``punctum batch --ray`` on a real Ray cluster of this machine (bound to 127.0.0.1, two CPUs):
the same exports as the local batch, a worker or the driver killed with SIGKILL, media read
from a URL, and a run refused where a worker cannot read the media."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.benchmarks.bench_batch import write_hour
from tests.conftest import ROOT, SAMPLE, requires_ffmpeg, sample_opening
from tests.test_batch import _folder, _states

pytest.importorskip("ray", reason="the cluster extra (punctum[cluster]) is not installed")

#: Ray stays on this machine: loopback addresses only (Ray's switch for a machine that is no
#: cluster node), no usage reports, no token file written to the home folder.
RAY_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_AUTH_MODE": "disabled",
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Cluster:
    address: str
    head: int  # the ``ray start`` process: Ray's processes of this cluster descend from it


@contextmanager
def local_cluster() -> Iterator[Cluster]:
    """A Ray head node of two CPUs on 127.0.0.1, stopped (its processes only) at the end."""
    port = _free_port()
    temp = Path(tempfile.mkdtemp(prefix="ray-"))  # short: Ray's socket paths live under it
    head = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("ray")), "start", "--head", "--block",
            "--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", "2",
            "--disable-usage-stats", "--include-dashboard=false", "--temp-dir", str(temp),
        ],
        env={**os.environ, **RAY_ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    assert head.stdout is not None
    started = []
    for line in head.stdout:
        started.append(line)
        if "Ray runtime started" in line:
            break
    else:
        pytest.fail("the Ray head node did not start:\n" + "".join(started))
    try:
        yield Cluster(f"127.0.0.1:{port}", head.pid)
    finally:
        head.send_signal(signal.SIGTERM)  # ``--block``: stops the processes this head started
        try:
            head.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            head.kill()
        shutil.rmtree(temp, ignore_errors=True)


def batch_command(folder: Path, project: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "app", "batch", str(folder), "--project", str(project), *options]


def run(command: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **RAY_ENV}
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def start(command: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, **RAY_ENV}
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def talks_folder(folder: Path, count: int) -> Path:
    """``count`` caption files of 1,000 words (under a second each for a worker), no media."""
    folder.mkdir()
    vocabulary = (SAMPLE / "reference.txt").read_text(encoding="utf-8").lower().split()
    rng = random.Random(11)
    for index in range(count):
        write_hour(folder / f"talk{index}.srt", rng, [w.strip(".,?!:;\"'") for w in vocabulary], cues=100)
    return folder


def done_jobs(project: Path) -> dict[str, list[int]]:
    """Per file, the ids of its jobs that finished: one for a file processed exactly once."""
    with sqlite3.connect(project) as connection:
        rows = connection.execute(
            "SELECT f.stem, j.id FROM jobs j JOIN files f ON f.id = j.file_id WHERE j.state = 'done' ORDER BY j.id"
        ).fetchall()
    found: dict[str, list[int]] = {}
    for stem, job in rows:
        found.setdefault(stem, []).append(job)
    return found


def wait_until(condition: object, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.02)
    pytest.fail("timed out waiting")


def busy_workers(cluster: Cluster) -> list[int]:
    """This cluster's worker processes in the middle of a file (Ray titles them by the call they run)."""
    found, parents = [], [cluster.head]
    while parents:
        parent = parents.pop()
        for children in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                parents += [int(child) for child in children.read_text().split()]
            except OSError:
                continue
        try:
            title = Path(f"/proc/{parent}/cmdline").read_bytes()
        except OSError:
            continue
        if title.startswith(b"ray::FileWorker.process"):
            found.append(parent)
    return found


def exports_equal_the_local_batch_byte_for_byte(cluster: Cluster, tmp_path: Path) -> None:
    folder = _folder(tmp_path)  # real captions and media, broken captions and broken media among them
    options = ("--apply", "all", "--no-listen")  # listening on Ray: media_from_a_url_and_...
    # Side by side: each mostly waits for its workers to start.
    local = start(batch_command(folder, tmp_path / "local.punctum", *options, "--workers", "2"))
    # More workers than the cluster's 2 CPUs: lowered to 2, not waiting for a third CPU for ever.
    ray_options = ("--ray", cluster.address, "--workers", "3")
    on_ray = start(batch_command(folder, tmp_path / "ray.punctum", *options, *ray_options))
    _, local_stderr = local.communicate(timeout=120)
    ray_stdout, ray_stderr = on_ray.communicate(timeout=120)
    assert local.returncode == 3, local_stderr  # files failed
    assert on_ray.returncode == 3, ray_stderr
    # Punctum's own lines only: none of Ray's start-up chatter, no traceback.
    assert all(line.startswith("punctum: ") for line in ray_stderr.splitlines() if line.strip()), ray_stderr
    # The unreadable captions fail at import, the broken media in processing: both are counted.
    assert "3 processed, 2 failed" in ray_stdout
    assert "punctum: brokencaptions: " in ray_stderr and "punctum: brokenmedia: " in ray_stderr
    assert "punctum: --workers 3 lowered to 2: one per CPU (2)" in ray_stderr
    assert "2 model loads" in ray_stdout and "127.0.0.1: 4 files" in ray_stdout, ray_stdout

    def reasons(project: Path) -> dict[str, str]:
        with sqlite3.connect(project) as connection:
            return dict(
                connection.execute("SELECT stem, reason FROM files WHERE state = 'failed'").fetchall()
            )

    assert _states(tmp_path / "ray.punctum") == _states(tmp_path / "local.punctum")
    assert reasons(tmp_path / "ray.punctum") == reasons(tmp_path / "local.punctum")
    assert set(reasons(tmp_path / "ray.punctum")) == {"brokencaptions", "brokenmedia"}
    exported = {}
    for name in ("local", "ray"):
        out = tmp_path / f"out-{name}"
        result = run(
            [sys.executable, "-m", "app", "export", str(tmp_path / f"{name}.punctum"), "--out", str(out)]
        )
        assert result.returncode == 0, result.stderr
        exported[name] = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    assert sorted(exported["ray"]) == ["good1.srt", "good2.vtt", "good3.en.srt"]
    assert exported["ray"] == exported["local"]
    # The model's marks are in them: the comparison is of real output, not of the inputs.
    assert exported["ray"]["good3.en.srt"] != (folder / "good3.en.srt").read_bytes()


def killed_runs_leave_every_file_done_once(cluster: Cluster, tmp_path: Path) -> None:
    """Ctrl+C, the driver killed, then a worker killed mid-file in the run that finishes: each
    file is processed once, and no finished file is done again."""
    folder = talks_folder(tmp_path / "in", 6)
    project = tmp_path / "work.punctum"
    command = batch_command(folder, project, "--ray", cluster.address, "--no-audio", "--apply", "all")
    # Ctrl+C first: one line of Punctum's, none of Ray's, and the files not done stay pending.
    interrupted = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, **RAY_ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell that starts the tests in the background leaves SIGINT ignored; a terminal does not.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        wait_until(lambda: project.exists() and "done" in _states(project).values())
        interrupted.send_signal(signal.SIGINT)
        _, stderr = interrupted.communicate(timeout=60)
    finally:
        interrupted.kill()
    assert interrupted.returncode == 130 and stderr == "punctum: interrupted\n", stderr
    assert "running" not in _states(project).values()
    finished_first = len(done_jobs(project))
    driver = start(command)
    try:
        wait_until(lambda: len(done_jobs(project)) > finished_first)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=30)
    finally:
        driver.kill()
    finished_before = done_jobs(project)
    assert 1 <= len(finished_before) < 5, "killed too late to test resuming"

    again = start(command)
    try:
        wait_until(lambda: len(done_jobs(project)) > len(finished_before) and busy_workers(cluster))
        victim = busy_workers(cluster)[0]  # the worker that finished a file is on its next one
        os.kill(victim, signal.SIGKILL)  # as the kernel's out-of-memory killer would
        stdout, stderr = again.communicate(timeout=120)
    finally:
        again.kill()
    assert again.returncode == 0 and "Traceback" not in stderr, stderr
    assert f"{6 - len(finished_before)} processed, 0 failed, {len(finished_before)} already done" in stdout
    assert "its worker died; Ray ran it again (recorded once)" in stderr
    finished = done_jobs(project)
    assert sorted(finished) == [f"talk{index}" for index in range(6)]
    assert all(len(jobs) == 1 for jobs in finished.values())
    for stem, jobs in finished_before.items():
        assert finished[stem] == jobs  # the same job: not processed again
    with sqlite3.connect(project) as connection:
        decided = dict(
            connection.execute(
                "SELECT f.stem, COUNT(*) FROM decisions d JOIN files f ON f.id = d.file_id GROUP BY f.stem"
            ).fetchall()
        )
    assert decided == {f"talk{index}": 1 for index in range(6)}  # "--apply all": one decision per file


def media_from_a_url_and_a_worker_that_cannot_read_it(cluster: Cluster, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    sample_opening(folder)
    project = tmp_path / "work.punctum"
    nowhere = (tmp_path / "nowhere").as_uri()
    refused = run(batch_command(folder, project, "--ray", cluster.address, "--media-url", nowhere))
    assert refused.returncode == 3 and "Traceback" not in refused.stderr, refused.stderr
    line = refused.stderr.strip().splitlines()[-1]
    assert line.startswith("punctum: node 127.0.0.1: cannot read the media file://") and "--media-url" in line
    assert _states(project) == {"talk": "pending"}  # nothing failed: the rerun does it

    bucket = tmp_path / "bucket"  # the folder as the workers see it, by URL
    shutil.copytree(folder, bucket)
    done = run(
        batch_command(folder, project, "--ray", cluster.address, "--media-url", bucket.as_uri(), "--listen")
    )
    assert done.returncode == 0, done.stderr
    assert _states(project) == {"talk": "done"}
    with sqlite3.connect(project) as connection:
        report = json.loads(connection.execute("SELECT report FROM files").fetchone()[0])
    assert report["evidence"] == "heard"  # the media fetched from the URL was listened to


CHECKS: tuple[Callable[[Cluster, Path], None], ...] = (
    exports_equal_the_local_batch_byte_for_byte,
    killed_runs_leave_every_file_done_once,
    media_from_a_url_and_a_worker_that_cannot_read_it,
)


@requires_ffmpeg
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds Ray's workers through /proc")
def test_batch_on_a_local_ray_cluster(tmp_path: Path) -> None:
    """The checks above on one cluster, in one test: a test is what pytest-xdist hands a worker, so
    the cluster is never shared by two workers at once (nor a killed Ray worker another run's)."""
    with local_cluster() as cluster:
        for check in CHECKS:
            scratch = tmp_path / check.__name__
            scratch.mkdir()
            check(cluster, scratch)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="follows the processes through /proc")
def test_a_cluster_started_for_one_run_ends_with_its_driver_killed(tmp_path: Path) -> None:
    from app.services.reaper import _started, descendants

    folder = tmp_path / "in"
    folder.mkdir()
    for number in range(8):
        shutil.copy(SAMPLE / "sample.srt", folder / f"talk{number}.srt")
    driver = start(batch_command(folder, tmp_path / "p.punctum", "--ray", "--no-audio"))

    def named() -> dict[int, str]:
        found = {}
        for pid in descendants(driver.pid):
            with contextlib.suppress(OSError):
                found[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        return found

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and driver.poll() is None:
        running = " ".join(named().values())
        if "raylet" in running and "DashboardAgent" in running and "RuntimeEnvAgent" in running:
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"the run's cluster did not start (driver exit {driver.poll()})")
    cluster = {pid: _started(pid) for pid, line in named().items() if "app.services.reaper" not in line}
    watcher = [pid for pid, line in named().items() if "app.services.reaper" in line]
    assert len(watcher) == 1
    driver.kill()
    driver.communicate(timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(_started(p) == t for p, t in cluster.items()):
        time.sleep(0.5)
    left = [pid for pid, started in cluster.items() if _started(pid) == started]
    assert left == [], [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in left]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _started(watcher[0]) is not None:
        time.sleep(0.5)
    assert _started(watcher[0]) is None  # and the watcher itself is gone


def test_without_ray_the_batch_says_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    shutil.copy(SAMPLE / "sample.srt", tmp_path / "in" / "talk.srt")
    hide_ray = (
        "import sys; sys.modules['ray'] = None\n"
        "from app.cli import main\n"
        f"sys.exit(main(['batch', {str(tmp_path / 'in')!r}, '--project', {str(tmp_path / 'p.punctum')!r}, '--ray']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", hide_ray], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "punctum: Ray is not installed: install punctum[cluster] (pip install 'punctum[cluster]')"
        " to run batches on Ray"
    )
    assert not (tmp_path / "p.punctum").exists()


def test_an_address_where_no_cluster_runs_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    shutil.copy(SAMPLE / "sample.srt", tmp_path / "in" / "talk.srt")
    address = f"127.0.0.1:{_free_port()}"
    result = run(batch_command(tmp_path / "in", tmp_path / "p.punctum", "--ray", address), timeout=30)
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == f"punctum: cannot join the Ray cluster at {address}: nothing answers there; check the address"
    )
    for unreadable in (":6379", "10.0.0.5:99999", "10.0.0.5"):
        result = run(batch_command(tmp_path / "in", tmp_path / "q.punctum", "--ray", unreadable), timeout=30)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith(f"punctum: --ray {unreadable}: give HOST:PORT"), result.stderr
    assert not (tmp_path / "q.punctum").exists()
