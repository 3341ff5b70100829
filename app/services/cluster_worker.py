"""A Ray worker of ``punctum batch --ray``: the actor that processes files on a cluster node, with
the model loaded on its first file and kept, and the media read where the node can read it (at
its path, or fetched from an fsspec URL). What it is handed and what it answers are here too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from app.core.errors import PunctumError
from app.core.memory import cap_malloc_arenas
from app.services.analysis import AnalysisRequest
from app.services.batch_job import BatchJob, FileOutcome, process_job
from app.services.batch_scheduler import BatchSettings
from app.services.model import ModelCache, Punctuator


class WorkerCannotReadError(PunctumError):
    """A worker cannot read what the driver can (the media, the model): the cluster lacks shared
    storage. The run stops and nothing is marked failed, so a rerun after the fix does it all."""


@dataclass(frozen=True)
class ClusterJob:
    """One file for a Ray worker: the batch's job, and where the worker reads its media."""

    job: BatchJob
    media_url: str | None = None
    #: Whether the driver can read the media: then a worker that cannot stops the run (the
    #: cluster's storage is at fault); otherwise the file fails as it would locally.
    media_on_driver: bool = False


@dataclass(frozen=True)
class WorkerReport:
    """A worker's answer for one file, and what it says about the worker."""

    outcome: FileOutcome
    node: str = "?"
    pid: int = 0
    model_loads: int = 0  # this worker process's, so far
    retried: bool = False  # the file's first worker died on it
    refusal: str | None = None  # why this worker cannot do any file (WorkerCannotReadError)


class FileWorker:
    """One worker process of the pool, made a Ray actor by ``run_batch_on_ray``: it loads the
    model on its first file and keeps it for the others."""

    def __init__(self, settings: BatchSettings) -> None:
        cap_malloc_arenas()  # a cluster node's worker process, not started by app.launch
        self.settings = settings
        self.models = ModelCache()
        self.calls = 0

    def process(self, work: ClusterJob) -> WorkerReport:
        import ray

        # Ray runs the calls a dead worker left again on the worker it starts in its place.
        retried = self.calls == 0 and ray.get_runtime_context().was_current_actor_reconstructed
        self.calls += 1
        node = str(ray.util.get_node_ip_address())  # type: ignore[no-untyped-call]

        def report(outcome: FileOutcome, refusal: str | None = None) -> WorkerReport:
            return WorkerReport(outcome, node, os.getpid(), self.models.loads, retried, refusal)

        try:
            with _media_here(work) as request:
                punctuator = self._punctuator()
                return report(process_job(replace(work.job, request=request), lambda: punctuator))
        except WorkerCannotReadError as error:
            return report(FileOutcome(error=str(error)), f"node {node}: {error}")

    def _punctuator(self) -> Punctuator:
        punctuator = self.models.punctuator(self.settings.model, self.settings.int8, threads=1)
        try:
            # The first worker on a node without the model's export makes it in the node's
            # cache; the others wait for it rather than make it again. Loaded, it stays loaded.
            with _node_lock():
                punctuator.load()
        except PunctumError as error:
            model = self.settings.model
            if model is not None and _looks_like_a_path(model) and not Path(model).expanduser().exists():
                raise WorkerCannotReadError(
                    f"cannot load the model: there is no {model} on this node; give --model a path"
                    " every node sees, or install the same punctum on every node"
                ) from None
            # The model is there and fails as it is: its own reason, not the storage's.
            raise WorkerCannotReadError(f"cannot load the model: {error}") from None
        return punctuator


def _looks_like_a_path(model: str) -> bool:
    """Whether ``--model`` names a folder (rather than a Hugging Face id or the shipped model)."""
    return model.startswith(("/", ".", "~"))


@contextmanager
def _media_here(work: ClusterJob) -> Iterator[AnalysisRequest]:
    """The request with its media readable on this node: at its path, or fetched from its URL
    to a temporary file for the file's time (the audio decoder reads files)."""
    request = work.job.request
    if request.media is None or not request.audio.with_audio:
        yield request
        return
    if work.media_url is None:
        if work.media_on_driver and not os.access(request.media, os.R_OK):
            raise WorkerCannotReadError(
                f"cannot read the media {request.media}: put the media on storage every node"
                " mounts at the same path, or give --media-url"
            )
        yield request
        return
    copy = _fetch(work.media_url, request.media.suffix)
    try:
        yield replace(request, media=copy)
    finally:
        copy.unlink(missing_ok=True)


def _fetch(url: str, suffix: str) -> Path:
    handle, name = tempfile.mkstemp(suffix=suffix, prefix="punctum-media-")
    copy = Path(name)
    try:
        import fsspec

        with fsspec.open(url, "rb") as source, os.fdopen(handle, "wb") as target:
            shutil.copyfileobj(source, target, 1 << 20)
    except (OSError, ValueError, ImportError) as error:
        copy.unlink(missing_ok=True)
        reason = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        raise WorkerCannotReadError(
            f"cannot read the media {url} ({reason}); check --media-url and this node's access to it"
        ) from None
    return copy


@contextmanager
def _node_lock() -> Iterator[None]:
    import fcntl

    from app.ml.base_encoder import cache_root

    cache_root().mkdir(parents=True, exist_ok=True)
    with (cache_root() / ".cluster-prepare.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
