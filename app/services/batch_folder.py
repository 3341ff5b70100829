"""``punctum batch`` as a use case: a folder's media without captions transcribed when asked, its
files imported into a project, the pending ones processed here or on a Ray cluster, and every file
left failed in the summary. The command line only reads the options and tells what is reported."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from app.ml.house_style import HouseStyle
    from app.services.batch_scheduler import BatchSettings, BatchSummary
    from app.services.cluster import ClusterSettings
    from app.services.folder_pairing import Pairing
    from app.services.transcribe import FolderTranscription
    from app.store.project import Project

#: ``batch --apply confident``'s bar unless another is given.
BATCH_CONFIDENT = 0.9


@dataclass(frozen=True)
class FolderBatch:
    """What ``punctum batch`` is asked to do: the folder, the project file, how its files are
    processed; the house style given to the project, and ``--rebreak`` and ``--recut`` kept in
    it for every export (None: as they were); whether media without captions is transcribed first
    (in ``language``, detected when None); and the Ray cluster to run on (None: here)."""

    folder: Path
    project: Path
    settings: BatchSettings
    style: HouseStyle | None = None
    rebreak: bool | None = None
    recut: bool | None = None
    transcribe: bool = False
    language: str | None = None
    cluster: ClusterSettings | None = None


class BatchEvents(Protocol):
    """What a batch run tells as it goes, for the command line to show."""

    def transcribing(self, media: Path, state: str) -> None:
        """A medium's transcription "started", "failed" or is "done"."""

    def transcribed(self, done: FolderTranscription) -> None:
        """The folder's transcription is over (``done.transcribed`` may be empty)."""

    def imported(self, pairing: Pairing) -> None:
        """The folder is imported: what could not be paired, was ambiguous, imported again or skipped
        (media whose transcription failed is not among the unpaired: it is failed)."""

    def running(self, total: int, done: int) -> AbstractContextManager[Callable[[str, str], None]]:
        """The run of the project's ``total`` files (``done`` of them done before) as a context whose
        value hears each file's start and finish (``run_batch``'s ``on_progress``)."""
        ...


def run_folder(batch: FolderBatch, events: BatchEvents) -> BatchSummary:
    """Run ``batch``: its summary counts as failed every file left failed, whichever run failed it
    (retried here, or captions still unreadable), and whether in processing, at import or in
    transcription."""
    from app.services.batch import import_folder, open_project, remember_for_export, run_batch
    from app.store.project import DONE, FAILED

    # The project is this run's before any work: a second run on it stops at once, rather than
    # transcribe the same media and replace the captions the first one imported.
    with open_project(batch.project, create=True, command="punctum batch") as project:
        if batch.style is not None:
            from app.services.restyle import give_style

            give_style(project, batch.style)  # new files are read with it; decisions move it on
        for option, on in (("rebreak", batch.rebreak), ("recut", batch.recut)):
            if on is not None:
                remember_for_export(project, option, on)
        failed = _transcribe(batch, project, events) if batch.transcribe else {}
        pairing = import_folder(batch.folder, project)
        # Media that was not transcribed is a failed file, counted and told as one.
        pairing.unpaired = [path for path in pairing.unpaired if path not in failed]
        events.imported(pairing)
        entries = project.files()
        with events.running(len(entries), sum(e.state == DONE for e in entries)) as on_progress:
            if batch.cluster is None:
                summary = run_batch(project, batch.settings, on_progress)
            else:
                from app.services.cluster import run_batch_on_ray

                summary = run_batch_on_ray(project, batch.settings, batch.cluster, on_progress)
        summary.failures = {e.stem: e.reason or "failed" for e in project.files() if e.state == FAILED}
        summary.failed = len(summary.failures)
    return summary


def _transcribe(batch: FolderBatch, project: Project, events: BatchEvents) -> dict[Path, str]:
    """Captions for the folder's media that has none, before the folder is paired. The media that
    could not be transcribed is registered as failed files (status lists them, with why), by the
    stem batch pairs them under, so that the captions a later transcription makes are imported as
    the file's new version; it is returned, with why."""
    from app.services.files import classify
    from app.services.transcribe import transcribe_folder

    done = transcribe_folder(batch.folder, language=batch.language, on_file=events.transcribing)
    events.transcribed(done)
    known = {entry.stem for entry in project.files()}
    root = batch.folder.resolve()
    for media, why in done.failed.items():
        role = classify(media)
        name = role.stem if role is not None else media.stem
        stem = (media.resolve().relative_to(root).parent / name).as_posix()
        if stem not in known:
            project.add_file_failed(stem, media.with_suffix(".vtt"), f"not transcribed: {why}")
    return done.failed
