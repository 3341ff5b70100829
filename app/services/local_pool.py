"""The local batch's workers: a pool of processes on this machine, each loading the model on its
first file and keeping it, as the scheduler's ``Workers``; and what runs in those processes.
"""

from __future__ import annotations

import multiprocessing
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from multiprocessing.pool import Pool
from queue import Empty, SimpleQueue
from typing import Any

from app.core.errors import bug_report
from app.services.batch_job import BatchJob, FileOutcome, process_job
from app.services.batch_scheduler import BatchSettings, BatchSummary, worker_count
from app.services.model import ModelCache, Punctuator
from app.services.parent_watch import start_worker_process


@contextmanager
def start_local_pool(settings: BatchSettings, summary: BatchSummary, files: int) -> Iterator[LocalPool]:
    """Worker processes for ``files`` files; Ctrl+C (leaving the block early) ends them at once."""
    cores = os.cpu_count() or 1
    workers = worker_count(settings.workers, files, cores, summary)
    threads = max(1, cores // workers)
    context = multiprocessing.get_context("spawn")
    # Workers say which file they are on, so that one killed mid-file (out of memory, say) fails
    # that file: the pool would replace the worker but never report its task, and wait for good.
    taken: Any = context.SimpleQueue()
    with context.Pool(workers, initializer=_start_worker, initargs=(settings, threads, taken)) as pool:
        local = LocalPool(pool, workers, taken)
        yield local
        # All done: let the workers exit on their own. Killed while idle, a worker can leave
        # the pool's semaphores registered, and Python then warns of leaks on the terminal.
        # A pool that lost a worker mid-task still counts that task and would wait for it.
        if not local.lost_a_worker:
            pool.close()
            pool.join()


class LocalPool:
    """The pool's processes as ``Workers``: one file each at a time."""

    def __init__(self, pool: Pool, capacity: int, taken: Any) -> None:
        self.pool = pool
        self.capacity = capacity
        self.taken = taken  # (process id, file id) as each worker starts a file
        self.finished: SimpleQueue[tuple[int, FileOutcome]] = SimpleQueue()
        self.out: set[int] = set()  # the files handed out and not yet answered
        self.on_worker: dict[int, int] = {}  # the worker process of each file, as the workers said
        self.lost_a_worker = False

    def submit(self, job: BatchJob, stem: str) -> None:
        self.out.add(job.file_id)
        self.pool.apply_async(
            _process,
            (job,),
            callback=partial(self._deliver, job.file_id),
            error_callback=partial(self._crashed, job.file_id),
        )

    def next_finished(self) -> tuple[int, FileOutcome]:
        while True:
            try:
                file_id, outcome = self.finished.get(timeout=0.5)
            except Empty:
                dead = self._file_of_a_dead_worker()
                if dead is None:
                    continue
                self.lost_a_worker = True
                file_id = dead
                outcome = FileOutcome(error="processing stopped: its worker process died (out of memory?)")
            self.out.discard(file_id)
            return file_id, outcome

    def _file_of_a_dead_worker(self) -> int | None:
        """A file still out whose worker process has died, once every answer has been taken."""
        while not self.taken.empty():
            pid, file_id = self.taken.get()
            self.on_worker[file_id] = pid
        alive = {child.pid for child in multiprocessing.active_children()}
        for file_id, pid in self.on_worker.items():
            if file_id in self.out and pid not in alive and self.finished.empty():
                return file_id
        return None

    def _deliver(self, file_id: int, outcome: FileOutcome) -> None:
        self.finished.put((file_id, outcome))

    def _crashed(self, file_id: int, error: BaseException) -> None:
        self.finished.put((file_id, FileOutcome(error=bug_report(error))))


# --- in the worker processes -----------------------------------------------------------------

_WORKER: dict[str, Any] = {}


def _start_worker(settings: BatchSettings, threads: int, taken: Any) -> None:
    start_worker_process()
    # A spawned worker starts with Python's default filters: without these, libraries'
    # deprecation notices would reach the user's terminal, as the command line's own do not.
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    _WORKER["settings"] = settings
    _WORKER["threads"] = threads
    _WORKER["taken"] = taken


def _process(job: BatchJob) -> FileOutcome:
    """One file, in a worker process of the local pool."""
    _WORKER["taken"].put((os.getpid(), job.file_id))
    return process_job(job, _worker_punctuator)


def _worker_punctuator() -> Punctuator:
    """This worker process's model, loaded on its first file and kept for the others."""
    settings: BatchSettings = _WORKER["settings"]
    models: ModelCache = _WORKER.setdefault("models", ModelCache())
    return models.punctuator(settings.model, settings.int8, int(_WORKER["threads"]))
