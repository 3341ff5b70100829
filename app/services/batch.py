"""Whole folders: pair captions with their media and reference, process every file in worker
processes, keep the results in a project file, resume after an interruption, export the lot.

A file's results reach the project in one transaction when it is finished, so a run killed at
any moment leaves every file either done (never processed again) or pending (processed from the
start on the next run); never half of one. Captions edited on disk after they were imported are
imported again as a new version, and ``export`` refuses to write them until they have been.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import Any

from app.core.commands import ApplyPolicy, accept_confident
from app.core.decisions import AcceptMany, Decision, Settle, encode
from app.core.errors import PunctumError
from app.core.evidence import GapMeasure
from app.core.model import Status, Suggestion
from app.formats import WriteError
from app.services.analysis import AnalysisRequest
from app.services.files import FileKind, classify
from app.services.model import ModelCache, Punctuator, prepare_model
from app.services.projects import (
    add_caption_file,
    carried_decisions,
    load_document,
    reimport_caption_file,
    status_counts,
)
from app.store.project import DONE, FAILED, INTERRUPTED, PENDING, RUNNING, FileEntry, Project

_TEMPORARY = re.compile(r"(^~|~$|^#.*#$|\.(tmp|temp|part|crdownload|swp|bak)$)", re.IGNORECASE)
#: Seconds an editor spends on one suggestion, for the review estimate (a reading and a key press).
#: A person's time per gap left to review (its candidates from the reference and the model are
#: one decision); the review estimate is this times the gaps the triage rule leaves open.
SECONDS_PER_GAP = 4.0


@dataclass(frozen=True)
class FileGroup:
    """One caption file of a folder and the files that go with it."""

    stem: str  # its path in the folder without suffixes ("talks/intro" for talks/intro.en.srt)
    captions: Path
    language: str | None = None  # as the captions' name gives it
    media: Path | None = None
    reference: Path | None = None
    timings: Path | None = None


@dataclass
class Pairing:
    """What a folder holds: groups to process, and files that could not be placed."""

    groups: list[FileGroup] = field(default_factory=list)
    unpaired: list[Path] = field(default_factory=list)
    ambiguous: dict[str, list[Path]] = field(default_factory=dict)
    #: Files whose captions changed on disk since they were imported: what became of each.
    reimported: dict[str, str] = field(default_factory=dict)
    #: Links that were not followed, and why (out of the folder, a loop, pointing nowhere).
    skipped_links: dict[Path, str] = field(default_factory=dict)
    #: Files this import could not read, by stem: failed before any processing, with the reason.
    failed_imports: dict[str, str] = field(default_factory=dict)


def pair_folder(folder: Path) -> Pairing:
    """Group files by stem (``talk.mp4``, ``talk.en.srt``, ``talk.ref.txt``), recursively."""
    root = folder.resolve()
    captions: dict[str, list[tuple[Path, str | None]]] = {}
    media: dict[str, list[Path]] = {}
    references: dict[str, list[Path]] = {}
    timings: dict[str, list[Path]] = {}
    tables = {FileKind.MEDIA: media, FileKind.REFERENCE: references, FileKind.TIMINGS: timings}
    pairing = Pairing()
    for path in _walk(root, pairing.skipped_links):
        role = classify(path)
        if role is None:
            continue
        stem = (path.relative_to(root).parent / role.stem).as_posix()
        if role.kind is FileKind.CAPTIONS:
            captions.setdefault(stem, []).append((path, role.language))
        elif role.kind in tables:
            tables[role.kind].setdefault(stem, []).append(path)
    for stem in sorted(captions):
        found = captions[stem]
        if len(found) > 1:
            pairing.ambiguous[stem] = sorted(p for p, _ in found)
            continue
        companions: dict[str, Path | None] = {}
        for name, table in (("media", media), ("reference", references), ("timings", timings)):
            candidates = table.pop(stem, [])
            if len(candidates) > 1:
                pairing.ambiguous[stem] = sorted(candidates)
                break
            companions[name] = candidates[0] if candidates else None
        else:
            pairing.groups.append(FileGroup(stem, found[0][0], found[0][1], **companions))
    for table in (media, references, timings):
        for stem, paths in table.items():
            if stem not in pairing.ambiguous:
                pairing.unpaired.extend(paths)
    pairing.unpaired.sort()
    return pairing


def _walk(root: Path, skipped_links: dict[Path, str]) -> Iterator[Path]:
    """Regular files under ``root``: no hidden or temporary files; links that lead outside, loop
    or lead nowhere go into ``skipped_links`` with the reason."""
    for directory, folders, files in os.walk(root, followlinks=False):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or _TEMPORARY.search(name):
                continue
            path = Path(directory) / name
            if path.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except RuntimeError:  # pathlib's word for a loop of links (before Python 3.13)
                    skipped_links[path] = "a link that loops"
                    continue
                except OSError as error:
                    looping = error.errno == errno.ELOOP
                    skipped_links[path] = "a link that loops" if looping else "a link to nothing"
                    continue
                if not target.is_relative_to(root):
                    skipped_links[path] = "a link out of the folder"
                    continue
            if path.is_file():
                yield path


# --- processing ------------------------------------------------------------------------------


@dataclass
class BatchSettings:
    model: str | None = None
    # What is accepted without review: nothing by default; "confident", "all" or the triage rule.
    policy: ApplyPolicy = field(default_factory=lambda: ApplyPolicy("none", 0.9))
    workers: int | None = None
    use_audio: bool = True
    listen: bool = False  # the model hears the media too (``gap_evidence``)
    int8: bool | None = None  # None: the default precision (INT8_BY_DEFAULT)


@dataclass
class BatchSummary:
    done: int = 0
    failed: int = 0
    skipped: int = 0  # already done by an earlier run
    failures: dict[str, str] = field(default_factory=dict)
    workers_lowered: str | None = None  # why fewer workers ran than --workers asked for


def worker_count(asked: int | None, files: int, cores: int, summary: BatchSummary, default: int = 4) -> int:
    """Workers for ``files`` files on ``cores`` CPUs: as many as asked (``default`` when nothing
    was), but never more than cores or files, since each worker loads its own model; lowering what
    was asked is recorded in ``summary``."""
    count = max(1, min(asked or default, files, cores))
    if asked and count < asked:
        summary.workers_lowered = (
            f"--workers {asked} lowered to {count}: one per CPU ({cores}) and file to do ({files})"
        )
    return count


def import_folder(folder: Path, project: Project) -> Pairing:
    """Register every paired file of ``folder`` not yet in the project, and import again (as a
    new version, keeping the decisions that still apply) those whose captions changed on disk."""
    pairing = pair_folder(folder)
    known = {entry.stem: entry for entry in project.files()}
    for group in pairing.groups:
        entry = known.get(group.stem)
        if entry is not None:
            if project.captions_changed(entry.id):
                pairing.reimported[group.stem] = _reimport(project, entry.id, group.captions)
            continue
        try:
            add_caption_file(
                project,
                group.stem,
                group.captions,
                group.media,
                group.reference,
                group.language,
                group.timings,
            )
        except PunctumError as error:
            project.add_file_failed(group.stem, group.captions, str(error))
            pairing.failed_imports[group.stem] = str(error)
    return pairing


def _reimport(project: Project, file_id: int, captions: Path) -> str:
    try:
        done = reimport_caption_file(project, file_id, captions)
    except PunctumError as error:
        project.fail(file_id, None, f"captions changed on disk and cannot be read: {error}")
        return f"captions changed on disk and cannot be read; the earlier version is kept ({error})"
    decided = done.kept + done.dropped
    kept = f"{done.kept} of {decided} decisions kept" if decided else "no decisions to keep"
    lost = f", {done.dropped} dropped where the words changed" if done.dropped else ""
    return f"captions changed on disk; imported again as version {done.version} ({kept}{lost})"


def run_batch(
    project: Project,
    settings: BatchSettings,
    on_progress: Callable[[str, str], None] | None = None,
) -> BatchSummary:
    """Process every pending file; ``on_progress(stem, state)`` hears each start and finish.

    Ctrl+C stops the workers at once; files they were on go back to pending.
    """
    summary = BatchSummary()
    queue = pending_files(project, summary)
    if not queue:
        return summary
    workers = worker_count(settings.workers, len(queue), os.cpu_count() or 1, summary)
    threads = max(1, (os.cpu_count() or 1) // workers)
    # A model without an export gets it here, once, rather than in every worker at the same time.
    prepare_model(settings.model, settings.int8)
    finished: SimpleQueue[tuple[int, FileOutcome]] = SimpleQueue()
    running: dict[int, tuple[int, str]] = {}
    context = multiprocessing.get_context("spawn")
    # Workers say which file they are on, so that one killed mid-file (out of memory, say) fails
    # that file: the pool would replace the worker but never report its task, and wait for good.
    taken: Any = context.SimpleQueue()
    on_worker: dict[int, int] = {}
    worker_died = False
    try:
        # Leaving the block early (Ctrl+C) terminates the workers at once.
        with context.Pool(workers, initializer=_start_worker, initargs=(settings, threads, taken)) as pool:
            while queue or running:
                while queue and len(running) < workers:
                    entry = queue.pop(0)
                    running[entry.id] = (project.start_job(entry.id), entry.stem)
                    pool.apply_async(
                        _process,
                        (
                            BatchJob(
                                entry.id,
                                AnalysisRequest.from_project(
                                    project, entry.id, settings.use_audio, settings.listen
                                ),
                            ),
                        ),
                        callback=partial(_deliver, finished, entry.id),
                        error_callback=partial(_deliver_crash, finished, entry.id),
                    )
                    if on_progress:
                        on_progress(entry.stem, "started")
                file_id, outcome = _next_outcome(finished, taken, running, on_worker)
                worker_died = worker_died or outcome.worker_died
                job, stem = running.pop(file_id)
                state = record_outcome(project, settings, summary, (file_id, job, stem), outcome)
                if on_progress:
                    on_progress(stem, state)
            # All done: let the workers exit on their own. Killed while idle, a worker can leave
            # the pool's semaphores registered, and Python then warns of leaks on the terminal.
            # A pool that lost a worker mid-task still counts that task and would wait for it.
            if not worker_died:
                pool.close()
                pool.join()
    except KeyboardInterrupt:
        project.reset_interrupted()
        raise
    return summary


@dataclass(frozen=True)
class BatchJob:
    """One file for a worker: which project file it is, and what to analyse."""

    file_id: int
    request: AnalysisRequest


@dataclass(frozen=True)
class FileOutcome:
    """A worker's answer for one file: its suggestions and report, or why it failed."""

    suggestions: list[Suggestion] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    worker_died: bool = False
    measures: list[GapMeasure] | None = None  # what was measured at each gap, for the review


def _next_outcome(
    finished: SimpleQueue[tuple[int, FileOutcome]],
    taken: Any,
    running: dict[int, tuple[int, str]],
    on_worker: dict[int, int],
) -> tuple[int, FileOutcome]:
    """The next file a worker finished, or one whose worker died on it (``on_worker``: the
    worker process of each file, as the workers said)."""
    while True:
        try:
            return finished.get(timeout=0.5)
        except Empty:
            pass
        while not taken.empty():
            pid, file_id = taken.get()
            on_worker[file_id] = pid
        alive = {child.pid for child in multiprocessing.active_children()}
        for file_id, pid in on_worker.items():
            if file_id in running and pid not in alive and finished.empty():
                died = "processing stopped: its worker process died (out of memory?)"
                return file_id, FileOutcome(error=died, worker_died=True)


def _deliver(finished: SimpleQueue[tuple[int, FileOutcome]], file_id: int, outcome: FileOutcome) -> None:
    finished.put((file_id, outcome))


def _deliver_crash(
    finished: SimpleQueue[tuple[int, FileOutcome]], file_id: int, error: BaseException
) -> None:
    finished.put((file_id, FileOutcome(error=f"processing crashed: {error}")))


_WORKER: dict[str, Any] = {}


def _start_worker(settings: BatchSettings, threads: int, taken: Any = None) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl+C
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
    if _WORKER.get("taken") is not None:
        _WORKER["taken"].put((os.getpid(), job.file_id))
    return process_job(job, _worker_punctuator)


def _worker_punctuator() -> Punctuator:
    """This worker process's model, loaded on its first file and kept for the others."""
    settings: BatchSettings = _WORKER.get("settings", BatchSettings())
    models: ModelCache = _WORKER.setdefault("models", ModelCache())
    return models.punctuator(settings.model, settings.int8, int(_WORKER.get("threads", 1)))


def process_job(job: BatchJob, punctuator: Callable[[], Punctuator]) -> FileOutcome:
    """One file, wherever it runs (a local worker process, a Ray worker): reference transfer, then
    the model (with audio when there is media). What the file or the model refuses is its outcome,
    so that the other files go on."""
    from app.services.analysis import analyse

    try:
        analysis = analyse(job.request, punctuator())
    except PunctumError as error:
        return FileOutcome(error=str(error))
    except (OSError, ValueError) as error:
        return FileOutcome(error=f"{type(error).__name__}: {error}")
    # Reference suggestions first; the model's ids follow theirs.
    return FileOutcome(analysis.suggestions, analysis.report.as_json(), measures=analysis.measures)


def pending_files(project: Project, summary: BatchSummary) -> list[FileEntry]:
    """The files a run processes, in order: those pending, and those a run that died left running
    (put back to pending first). ``summary`` counts the files done by earlier runs."""
    project.reset_interrupted()
    entries = project.files()
    summary.skipped = sum(1 for e in entries if e.state == DONE)
    return [e for e in entries if e.state == PENDING]


def record_outcome(
    project: Project,
    settings: BatchSettings,
    summary: BatchSummary,
    running: tuple[int, int, str],
    outcome: FileOutcome,
) -> str:
    """Commit one file's outcome (``running``: its file id, job id and stem) in one transaction:
    its results and the decisions ``--apply`` makes, or its failure with the reason. Returns the
    file's new state, "done" or "failed". Every batch backend writes through here, and only its
    driver process does."""
    file_id, job, stem = running
    if outcome.error is not None:
        project.fail(file_id, job, outcome.error)
        summary.failed += 1
        summary.failures[stem] = outcome.error
        return FAILED
    carried, settled = carried_decisions(project, file_id, outcome.suggestions)
    decisions, by = _batch_decisions(settled, settings)
    project.finish(
        file_id,
        job,
        outcome.suggestions,
        outcome.report,
        [encode(d) for d in decisions],
        [encode(d) for d in carried],
        outcome.measures,
        by,
    )
    summary.done += 1
    return DONE


def _batch_decisions(suggestions: list[Suggestion], settings: BatchSettings) -> tuple[list[Decision], str]:
    """What ``--apply`` accepts (``commands.accept_confident``), as the decision to record, and who
    decided: the triage rule's settlement is the editor's own (a policy changed there reopens it);
    the other policies are the batch's."""
    chosen = accept_confident(suggestions, settings.policy)
    if not chosen:
        return [], "batch"
    if settings.policy.how == "triage":
        return [Settle((), tuple(chosen))], "rule"
    return [AcceptMany(tuple(chosen))], "batch"


# --- status and export -----------------------------------------------------------------------


@dataclass(frozen=True)
class FileStatus:
    """One file of a project as ``punctum status`` lists it."""

    file: str
    state: str  # pending, running, done, failed, interrupted or stale
    gaps_to_review: int | None = None  # gaps with a pending candidate, for a file that is done
    pending: int | None = None  # suggestions by status
    accepted: int | None = None
    rejected: int | None = None
    review_minutes: float | None = None
    reason: str | None = None

    def as_json(self) -> dict[str, object]:
        return {key: value for key, value in asdict(self).items() if value is not None}


def project_status(project: Project) -> list[FileStatus]:
    """Each file's state (files left running by a process that died are "interrupted"; captions
    changed on disk since they were imported are "stale"), its suggestions by status and the
    review time they need."""
    rows = []
    writing = project.writer() is not None
    for entry in project.files():
        state, reason = entry.state, None
        counts: dict[str, int] = {}
        if entry.state == RUNNING and not writing:
            state = INTERRUPTED
        if entry.state == DONE:
            counts = status_counts(project, entry.id)
        elif entry.state == FAILED:
            reason = entry.reason
        if project.captions_changed(entry.id):
            state = "stale"
            if entry.state != FAILED:
                reason = f"{entry.captions_path.name} changed on disk since it was imported"
        gaps = counts.get("gaps")
        rows.append(
            FileStatus(
                entry.stem,
                state,
                gaps,
                counts.get(Status.PENDING.value),
                counts.get(Status.ACCEPTED.value),
                counts.get(Status.REJECTED.value),
                round(gaps * SECONDS_PER_GAP / 60, 1) if gaps is not None else None,
                reason,
            )
        )
    return rows


class StaleCaptionsError(PunctumError):
    """Captions changed on disk since they were imported: exporting would write the old words."""


class ExportFolderError(PunctumError):
    """An ``--out`` folder that cannot be made: the user's mistake, as a usage error is."""

    exit_code = 2


def export_project(project: Project, out: Path, format: str | None = None) -> list[Path]:
    """Write every processed file's captions (decisions applied, sentence starts and the words the
    language always capitalises given capitals) to ``out``.

    Inputs are never overwritten: a target that is one of the project's own files is refused.
    ``out`` is made if the folder it goes in exists; a missing parent is refused (a mistyped path
    makes no tree of folders). Captions changed on disk since they were imported are refused, so
    the old words are never written in their place: ``punctum batch`` imports them again.
    """
    from app.services.captions_export import export_captions

    if not out.is_dir() and not out.parent.is_dir():
        raise ExportFolderError(f"{out}: the folder {out.parent} does not exist; --out makes one folder only")
    out = out.resolve()
    inputs = {p.resolve() for e in project.files() for p in (e.captions_path, e.reference_path) if p}
    entries = [e for e in project.files() if e.state == DONE]
    stale = [e for e in entries if project.captions_changed(e.id)]
    if stale:
        names = ", ".join(str(e.captions_path) for e in stale)
        raise StaleCaptionsError(
            f"{project.path}: captions changed on disk since they were imported: {names};"
            " punctum batch imports them again (nothing exported)"
        )
    # Every file is read and checked before the first is written: all or nothing.
    ready = []
    for entry in entries:
        document, _ = load_document(project, entry.id)
        target_format = format or document.format
        relative = Path(entry.stem).parent / entry.captions_path.with_suffix(f".{target_format}").name
        target = out / relative
        if target.resolve() in inputs:
            raise WriteError(f"{target}: is an input file of this project; export to another folder")
        ready.append((document, project.language(entry.id), target, target_format))
    for document, language, target, target_format in ready:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise WriteError(f"{target.parent}: cannot make the folder ({error.strerror or error})") from None
        export_captions(document, target, language, format=target_format)
    return [target for _, _, target, _ in ready]


# --- projects, for the command line ----------------------------------------------------------


def open_project(
    path: Path, create: bool = False, *, read_only: bool = False, command: str = "punctum"
) -> Project:
    """A project file, created if ``create`` and new (use it as a context manager). Opened for
    writing, it is this process's until closed: another writer is refused, naming ``command``.
    ``read_only`` (status, export) changes nothing in the file, and opens on read-only media."""
    return Project(path, create=create, read_only=read_only, holder=command)


def file_counts(project: Project) -> tuple[int, int]:
    """How many files the project holds, and how many of them are done."""
    entries = project.files()
    return len(entries), sum(e.state == DONE for e in entries)


class UnknownFileError(PunctumError):
    """A file name the project does not hold: the user's mistake, as a usage error is."""

    exit_code = 2


def relink_media(project: Project, stem: str, media: Path) -> None:
    """Point the file named ``stem`` (as ``punctum status`` lists it) at its media in a new place."""
    entry = next((e for e in project.files() if e.stem == stem), None)
    if entry is None:
        raise UnknownFileError(f"{project.path}: no file {stem!r} (see punctum status)")
    project.relink_media(entry.id, media)
