"""``punctum batch --ray``: the batch on a Ray cluster, for archives one machine cannot keep up with.

Each file is a call on one of a pool of Ray actors (``cluster_worker``), worker processes that
load the model on their first file and keep it. Plain Ray tasks did as well on one machine (see
the figures in docs/cluster.md), but only because Ray happened to reuse their processes; an actor loads the
model once by design, and is the worker Ray restarts and retries on. The actors are the workers
of the local batch's own scheduler (``batch_scheduler``), so the driver, this process, stays the
project's only writer and commits each file's outcome as it arrives: everything the local batch
promises holds here too. A driver stopped at any moment (Ctrl+C, kill -9, a lost cluster) leaves
every file done or pending, and the next run does the pending ones only.

A worker that dies mid-file (out of memory, its node lost) is started again and Ray runs the file
again, ``WORKER_RETRIES`` times; the file is still recorded once, by the driver. Caption bytes
travel in the call; media is read by the worker from a path every node sees, or from an fsspec
URL (``--media-url``). Ray is imported here and by the actors only, and only when a run asks for it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from app.core.errors import PunctumError, UsageError, bug_report, error_line
from app.services.batch_job import BatchJob, FileOutcome
from app.services.batch_scheduler import BatchSettings, BatchSummary, run_pending, worker_count
from app.services.cluster_worker import ClusterJob, FileWorker, WorkerCannotReadError, WorkerReport
from app.services.reaper import start_watching
from app.store.project import Project

#: Further attempts at a file whose worker died on it before the file is marked failed.
WORKER_RETRIES = 2
#: How long a cluster that just lost a worker has to show it still runs work.
PROBE_SECONDS = 30
INSTALL_HINT = "install punctum[cluster] (pip install 'punctum[cluster]') to run batches on Ray"


class ClusterError(UsageError):
    """No Ray, or no cluster where the user pointed: their setup, as a usage error is."""


class ClusterLostError(PunctumError):
    """The driver lost the cluster mid-run: the files done are kept, the others are pending."""


@dataclass(frozen=True)
class ClusterSettings:
    #: "auto" joins the cluster running on this machine, "HOST:PORT" (or "ray://HOST:10001") the
    #: one there; None starts a cluster of this machine's cores for the run.
    address: str | None = None
    #: The batch folder as the workers read it, as an fsspec URL ("s3://bucket/captions"): media
    #: at FOLDER/a/talk.mp4 is read from URL/a/talk.mp4. None: at the driver's path.
    media_url: str | None = None
    folder: Path | None = None  # the batch folder, which ``media_url`` stands for


@dataclass
class NodeThroughput:
    """What one node did in a run."""

    files: int = 0
    words: int = 0
    workers: set[int] = field(default_factory=set)  # their process ids


@dataclass
class ClusterSummary(BatchSummary):
    seconds: float = 0.0  # from connecting to the last file's commit
    model_loads: int = 0  # as the workers report them: one per worker process
    #: Files whose worker died on them and which Ray ran again (each recorded once).
    retried: list[str] = field(default_factory=list)
    nodes: dict[str, NodeThroughput] = field(default_factory=dict)  # by node address

    def node_lines(self) -> list[str]:
        """Per node: files, words and files per hour over the run."""
        lines = []
        for node, done in sorted(self.nodes.items()):
            hourly = done.files * 3600 / self.seconds if self.seconds else 0.0
            lines.append(
                f"{node}: {done.files} files, {done.words} words on {len(done.workers)} workers"
                f" ({hourly:.0f} files/hour, {done.words / max(self.seconds, 1e-9):.0f} words/s)"
            )
        return lines


def check_ray() -> None:
    """Refuse a run on Ray, before anything is done, where Ray is not installed."""
    import importlib.util

    try:
        found = importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ClusterError(f"Ray is not installed: {INSTALL_HINT}")


def run_batch_on_ray(
    project: Project,
    settings: BatchSettings,
    cluster: ClusterSettings,
    on_progress: Callable[[str, str], None] | None = None,
) -> ClusterSummary:
    """Process every pending file on a Ray cluster; ``on_progress(stem, state)`` as for ``run_batch``."""
    summary = ClusterSummary()

    @contextmanager
    def on_the_cluster(files: int) -> Iterator[RayWorkers]:
        ray = _connect(cluster.address)
        began = time.perf_counter()
        try:
            # Each worker takes a CPU: more than the cluster has would wait for one for ever.
            cores = int(ray.cluster_resources().get("CPU", 1))
            count = worker_count(settings.workers, files, cores, summary, default=cores)
            options = {"num_cpus": 1, "max_restarts": -1, "max_task_retries": WORKER_RETRIES}
            worker_class = ray.remote(**options)(FileWorker)
            yield RayWorkers(ray, [worker_class.remote(settings) for _ in range(count)], cluster, summary)
            summary.seconds = time.perf_counter() - began
        except ClusterLostError:
            project.reset_interrupted()  # the files still out go back to pending
            where = f" at {cluster.address}" if cluster.address else ""
            finished = summary.done + summary.failed
            raise ClusterLostError(
                f"lost the Ray cluster{where}: the {finished} files finished are kept, {files - finished}"
                " go back to pending; run the same command again to do them"
            ) from None
        # Whatever else stops a run on Ray (a worker that cannot read, Ray's own errors, the
        # SystemExit Ray's driver makes of SIGTERM) puts them back too; Ctrl+C is the scheduler's.
        except (Exception, SystemExit):
            project.reset_interrupted()
            raise
        finally:
            with _native_lines_discarded():
                ray.shutdown()

    run_pending(project, settings, summary, on_the_cluster, on_progress)
    return summary


class RayWorkers:
    """A pool of ``FileWorker`` actors as the scheduler's ``Workers``, counting in ``summary``
    what each worker's report says (its node, its model loads, a retry)."""

    def __init__(
        self, ray: Any, actors: list[Any], cluster: ClusterSettings, summary: ClusterSummary
    ) -> None:
        self.ray = ray
        self.cluster = cluster
        self.summary = summary
        # Each worker holds a second file in its queue, so it starts it the moment it is done with
        # the first rather than when the driver has committed that one and sent another.
        self.idle = [*actors, *actors]
        self.capacity = len(self.idle)
        self.running: dict[Any, tuple[int, str, Any]] = {}  # by call: its file id, stem and worker
        self.loads: dict[int, int] = {}  # by worker process: its model loads

    def submit(self, job: BatchJob, stem: str) -> None:
        worker = self.idle.pop()
        call = worker.process.remote(_cluster_job(job, self.cluster))
        self.running[call] = (job.file_id, stem, worker)

    def next_finished(self) -> tuple[int, FileOutcome]:
        ready, _ = self.ray.wait(list(self.running), num_returns=1)
        file_id, stem, worker = self.running.pop(ready[0])
        self.idle.append(worker)
        report = _answer(self.ray, ready[0])
        if report.refusal is not None:
            raise WorkerCannotReadError(report.refusal)
        self._count(report, stem)
        return file_id, report.outcome

    def _count(self, report: WorkerReport, stem: str) -> None:
        if report.retried:
            self.summary.retried.append(stem)
        if not report.pid:  # the worker died: nothing to say about it
            return
        node = self.summary.nodes.setdefault(report.node, NodeThroughput())
        node.files += 1
        node.words += int(report.outcome.results.report.get("words", 0))
        node.workers.add(report.pid)
        self.loads[report.pid] = report.model_loads
        self.summary.model_loads = sum(self.loads.values())


@contextmanager
def _native_lines_discarded() -> Iterator[None]:
    """Ray's C++ core writing straight to file descriptor 2 is sent to /dev/null meanwhile: on
    Ctrl+C its shutdown logs "task_manager.cc: Failed to push error to driver" for each file still
    out, where Punctum says what happened in one line of its own."""
    import sys

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no descriptor 2 to protect
        yield
        return
    discard = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(discard, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(discard)


#: The watcher that ends a cluster started for this run once the run has ended (``app.services.reaper``).
_WATCHER: object | None = None


def _connect(address: str | None) -> Any:
    """Ray, joined to the cluster at ``address`` (or a new one of this machine's cores)."""
    import logging

    # Ray never reports usage to its makers from here, and shows the user no start-up chatter.
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    if address is None:
        # A cluster for this run alone listens on the loopback address only (Ray's switch for a
        # machine that is no cluster node), not on the network. Read when Ray is imported.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    check_ray()
    import ray

    quiet: dict[str, Any] = {
        "include_dashboard": False,
        "logging_level": logging.ERROR,
        "log_to_driver": False,
    }
    try:
        if address is None:
            global _WATCHER
            # The cluster is this run's: it must end with the run, even one killed with -9.
            _WATCHER = _WATCHER or start_watching()
            ray.init(address="local", num_cpus=os.cpu_count() or 1, **quiet)
        else:
            _check_answers(address)
            ray.init(address=address, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as error:
        where = "start a local Ray cluster" if address is None else f"join the Ray cluster at {address}"
        raise ClusterError(f"cannot {where}: {error_line(error)}") from None
    return ray


def check_address(address: str | None) -> None:
    """Refuse, before anything is done, a ``--ray`` address Ray could not read (":6379", a port
    out of range): Ray itself logs an error and a traceback for them."""
    if address is None or address == "auto" or address.startswith("ray://"):
        return
    host, _, port = address.rpartition(":")
    if not host.strip() or not port.isdigit() or not 0 < int(port) < 65536:
        raise ClusterError(
            f"--ray {address}: give HOST:PORT (such as 10.0.0.5:6379), auto for the cluster running"
            " here, or no address for a cluster of this machine's cores"
        )


def _check_answers(address: str) -> None:
    """Refuse at once an address where no cluster listens: Ray itself would retry for a minute,
    writing warnings to the terminal, before it gave up."""
    import socket

    check_address(address)
    if address.startswith("ray://"):
        return  # a Ray client server: Ray's own check is quick
    try:
        # Ray 2.60's own reading of "auto" (RAY_ADDRESS, or the last `ray start` here).
        from ray._private.services import canonicalize_bootstrap_address

        found = canonicalize_bootstrap_address(address)
    except (ImportError, AttributeError):  # another Ray than the pinned one: let it check
        return
    except ConnectionError:
        found = None
    if not found:
        raise ClusterError(
            f"no Ray cluster runs on this machine for --ray {address}; start one with ray start --head"
        )
    host, _, port = found.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except (OSError, ValueError):
        hint = "it is not running (ray start --head starts one)" if address == "auto" else "check the address"
        # The address as given: Ray may have rewritten it (127.0.0.1 as this machine's own address).
        given = found if address == "auto" else address
        raise ClusterError(f"cannot join the Ray cluster at {given}: nothing answers there; {hint}") from None


def _cluster_job(job: BatchJob, cluster: ClusterSettings) -> ClusterJob:
    media = job.request.media if job.request.audio.with_audio else None
    if media is None:
        return ClusterJob(job)
    if cluster.media_url and cluster.folder and media.is_relative_to(cluster.folder.resolve()):
        relative = media.relative_to(cluster.folder.resolve()).as_posix()
        return ClusterJob(job, f"{cluster.media_url.rstrip('/')}/{relative}", media_on_driver=True)
    return ClusterJob(job, media_on_driver=os.access(media, os.R_OK))


def _answer(ray: Any, call: Any) -> WorkerReport:
    """The worker's report, or the file's failure when its worker died on every attempt. A
    worker that died because the cluster went away says nothing about the file: ClusterLostError."""
    try:
        return cast(WorkerReport, ray.get(call))
    except ray.exceptions.RayActorError:
        if not _cluster_answers(ray):
            raise ClusterLostError("lost the Ray cluster") from None
        died = f"processing stopped: its worker process died {WORKER_RETRIES + 1} times (out of memory?)"
        return WorkerReport(FileOutcome(error=died))
    except ray.exceptions.RayTaskError as error:
        return WorkerReport(FileOutcome(error=bug_report(error.cause)))
    except ray.exceptions.RaySystemError:
        raise ClusterLostError("lost the Ray cluster") from None


def _cluster_answers(ray: Any) -> bool:
    """Whether the cluster still runs work: a call that needs no CPU, so busy workers do not delay
    it. A cluster draining or gone does not answer."""
    try:
        return bool(ray.get(ray.remote(num_cpus=0)(_alive).remote(), timeout=PROBE_SECONDS))
    except ray.exceptions.RayError:
        return False


def _alive() -> bool:
    return True
