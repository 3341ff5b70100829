"""Whole folders: pair captions with their media and reference, process every file in worker
processes, keep the results in a project file, resume after an interruption, export the lot.

A file's results reach the project in one transaction when it is finished, so a run killed at
any moment leaves every file either done (never processed again) or pending (processed from the
start on the next run); never half of one.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import Any

from app.core.commands import surest_per_gap
from app.core.errors import PunctumError
from app.core.model import Status, Suggestion
from app.formats import WriteError, write_document
from app.services.punctuate import prepare_model
from app.store.project import DONE, FAILED, PENDING, Project

CAPTION_SUFFIXES = {".srt", ".vtt"}
MEDIA_SUFFIXES = {
    ".mp4", ".mkv", ".mov", ".webm", ".avi", ".m4v", ".mpg", ".mpeg", ".ts",
    ".mp3", ".wav", ".flac", ".ogg", ".oga", ".opus", ".m4a", ".aac", ".wma",
}  # fmt: skip
REFERENCE_MARKERS = ("ref", "transcript")
TIMING_SUFFIX, TIMING_JSON = ".ctm", ".words.json"
REFERENCE_SUFFIXES = {".txt", ".srt", ".vtt"}
_LANGUAGE = re.compile(r"^[a-z]{2,3}(-[A-Za-z]{2,4})?$")
_TEMPORARY = re.compile(r"(^~|~$|^#.*#$|\.(tmp|temp|part|crdownload|swp|bak)$)", re.IGNORECASE)
#: Seconds an editor spends on one suggestion, for the review estimate (a reading and a key press).
SECONDS_PER_SUGGESTION = 4.0


@dataclass
class Pairing:
    """What a folder holds: groups to process, and files that could not be placed."""

    groups: list[dict[str, Any]] = field(default_factory=list)  # stem, captions, media, reference, language
    unpaired: list[Path] = field(default_factory=list)
    ambiguous: dict[str, list[Path]] = field(default_factory=dict)


def pair_folder(folder: Path) -> Pairing:
    """Group files by stem (``talk.mp4``, ``talk.en.srt``, ``talk.ref.txt``), recursively."""
    root = folder.resolve()
    captions: dict[str, list[tuple[Path, str | None]]] = {}
    media: dict[str, list[Path]] = {}
    references: dict[str, list[Path]] = {}
    timings: dict[str, list[Path]] = {}
    for path in _walk(root):
        relative = path.relative_to(root)
        parts = path.name.split(".")
        suffix = path.suffix.lower()
        directory = relative.parent

        def key(stem_parts: list[str]) -> str:
            return (directory / ".".join(stem_parts)).as_posix()  # noqa: B023

        if len(parts) >= 3 and parts[-2].lower() in REFERENCE_MARKERS and suffix in REFERENCE_SUFFIXES:
            references.setdefault(key(parts[:-2]), []).append(path)
        elif suffix in CAPTION_SUFFIXES:
            language = parts[-2] if len(parts) >= 3 and _LANGUAGE.match(parts[-2]) else None
            stem_parts = parts[:-2] if language else parts[:-1]
            captions.setdefault(key(stem_parts), []).append((path, language))
        elif suffix in MEDIA_SUFFIXES:
            media.setdefault(key(parts[:-1]), []).append(path)
        elif is_timing_file(path):
            timings.setdefault(key(parts[:-2] if suffix == ".json" else parts[:-1]), []).append(path)
        elif suffix == ".txt" and len(parts) == 2:
            # A bare "talk.txt" beside "talk.srt" is taken as its reference transcript.
            references.setdefault(key(parts[:-1]), []).append(path)
    pairing = Pairing()
    for stem in sorted(captions):
        found = captions[stem]
        if len(found) > 1:
            pairing.ambiguous[stem] = sorted(p for p, _ in found)
            continue
        group: dict[str, Any] = {"stem": stem, "captions": found[0][0], "language": found[0][1]}
        for name, table in (("media", media), ("reference", references), ("timings", timings)):
            candidates = table.pop(stem, [])
            if len(candidates) > 1:
                pairing.ambiguous[stem] = sorted(candidates)
                group = {}
                break
            group[name] = candidates[0] if candidates else None
        if group:
            pairing.groups.append(group)
    for table in (media, references, timings):
        for stem, paths in table.items():
            if stem not in pairing.ambiguous:
                pairing.unpaired.extend(paths)
    pairing.unpaired.sort()
    return pairing


def is_timing_file(path: Path) -> bool:
    """The recogniser's word times: "talk.ctm" or "talk.words.json"."""
    return path.suffix.lower() == TIMING_SUFFIX or path.name.lower().endswith(TIMING_JSON)


def _walk(root: Path) -> Iterator[Path]:
    """Regular files under ``root``: no hidden or temporary files, no links leading outside."""
    for directory, folders, files in os.walk(root, followlinks=False):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or _TEMPORARY.search(name):
                continue
            path = Path(directory) / name
            if path.is_symlink() and not path.resolve().is_relative_to(root):
                continue
            if path.is_file():
                yield path


# --- processing ------------------------------------------------------------------------------


@dataclass
class BatchSettings:
    model: str | None = None
    apply: str = "none"  # "confident": accept suggestions at least min_confidence; "all"; "none"
    min_confidence: float = 0.9
    workers: int | None = None
    use_audio: bool = True
    int8: bool = False


@dataclass
class BatchSummary:
    done: int = 0
    failed: int = 0
    skipped: int = 0  # already done by an earlier run
    failures: dict[str, str] = field(default_factory=dict)


def import_folder(folder: Path, project: Project) -> Pairing:
    """Register every paired file of ``folder`` not yet in the project."""
    pairing = pair_folder(folder)
    known = {entry.stem for entry in project.files()}
    for group in pairing.groups:
        if group["stem"] in known:
            continue
        try:
            project.add_file(
                group["stem"],
                group["captions"],
                group["media"],
                group["reference"],
                group["language"],
                group.get("timings"),
            )
        except PunctumError as error:
            project.add_file_failed(group["stem"], group["captions"], str(error))
    return pairing


def run_batch(
    project: Project,
    settings: BatchSettings,
    on_progress: Callable[[str, str], None] | None = None,
) -> BatchSummary:
    """Process every pending file; ``on_progress(stem, state)`` hears each start and finish.

    Ctrl+C stops the workers at once; files they were on go back to pending.
    """
    project.reset_interrupted()
    summary = BatchSummary(skipped=sum(1 for e in project.files() if e.state == DONE))
    queue = [e for e in project.files() if e.state == PENDING]
    if not queue:
        return summary
    workers = settings.workers or max(1, min(len(queue), os.cpu_count() or 1, 4))
    threads = max(1, (os.cpu_count() or 1) // workers)
    # A model without an export gets it here, once, rather than in every worker at the same time.
    prepare_model(settings.model, settings.int8)
    finished: SimpleQueue[tuple[int, dict[str, Any]]] = SimpleQueue()
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
                        (_task(project, entry.id),),
                        callback=partial(_deliver, finished, entry.id),
                        error_callback=partial(_deliver_crash, finished, entry.id),
                    )
                    if on_progress:
                        on_progress(entry.stem, "started")
                file_id, outcome = _next_outcome(finished, taken, running, on_worker)
                worker_died = worker_died or bool(outcome.get("worker_died"))
                job, stem = running.pop(file_id)
                if "error" in outcome:
                    project.fail(file_id, job, outcome["error"])
                    summary.failed += 1
                    summary.failures[stem] = outcome["error"]
                else:
                    suggestions = outcome["suggestions"]
                    decisions = _batch_decisions(suggestions, settings)
                    project.finish(file_id, job, suggestions, outcome["report"], decisions)
                    summary.done += 1
                if on_progress:
                    on_progress(stem, "failed" if "error" in outcome else "done")
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


def _next_outcome(
    finished: SimpleQueue[tuple[int, dict[str, Any]]],
    taken: Any,
    running: dict[int, tuple[int, str]],
    on_worker: dict[int, int],
) -> tuple[int, dict[str, Any]]:
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
                return file_id, {
                    "error": "processing stopped: its worker process died (out of memory?)",
                    "worker_died": True,
                }


def _deliver(
    finished: SimpleQueue[tuple[int, dict[str, Any]]], file_id: int, outcome: dict[str, Any]
) -> None:
    finished.put((file_id, outcome))


def _deliver_crash(
    finished: SimpleQueue[tuple[int, dict[str, Any]]], file_id: int, error: BaseException
) -> None:
    finished.put((file_id, {"error": f"processing crashed: {error}"}))


def _task(project: Project, file_id: int) -> dict[str, Any]:
    entry = project.file(file_id)
    row = project.db.execute("SELECT captions_bytes FROM files WHERE id = ?", [file_id]).fetchone()
    return {
        "file_id": file_id,
        "captions": bytes(row[0]),
        "format": entry.captions_format,
        "path": str(entry.captions_path),
        "media": str(entry.media_path) if entry.media_path else None,
        "reference": str(entry.reference_path) if entry.reference_path else None,
        "timings": str(entry.timings_path) if entry.timings_path else None,
        "language": entry.language,
    }


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


def _process(task: dict[str, Any]) -> dict[str, Any]:
    """One file, in a worker: reference transfer, then the model (with audio when there is media)."""
    if _WORKER.get("taken") is not None:
        _WORKER["taken"].put((os.getpid(), task["file_id"]))
    try:
        return _process_file(task)
    except PunctumError as error:
        return {"error": str(error)}
    except (OSError, ValueError) as error:
        return {"error": f"{type(error).__name__}: {error}"}


def _process_file(task: dict[str, Any]) -> dict[str, Any]:
    from app.services.punctuate import Punctuator
    from app.services.review import analyse

    settings: BatchSettings = _WORKER.get("settings", BatchSettings())
    if "punctuator" not in _WORKER:
        _WORKER["punctuator"] = Punctuator(
            settings.model, quantize=settings.int8, threads=int(_WORKER.get("threads", 1))
        )
    analysis = analyse(task, _WORKER["punctuator"], use_audio=settings.use_audio)
    # Reference suggestions first; the model's ids follow theirs.
    return {"suggestions": analysis.suggestions, "report": analysis.report}


def _batch_decisions(
    suggestions: list[Suggestion], settings: BatchSettings
) -> list[tuple[str, dict[str, Any]]]:
    """What ``--apply`` accepts: per gap (and per casing) the most confident suggestion, reference first."""
    if settings.apply == "none":
        return []
    threshold = settings.min_confidence if settings.apply == "confident" else 0.0
    chosen = surest_per_gap(suggestions, threshold, reference_first=True)
    return [("accept_many", {"suggestions": chosen})] if chosen else []


# --- status and export -----------------------------------------------------------------------


def project_status(project: Project) -> list[dict[str, Any]]:
    rows = []
    for entry in project.files():
        row: dict[str, Any] = {"file": entry.stem, "state": entry.state}
        if entry.state == DONE:
            counts = project.counts(entry.id)
            row.update(counts)
            row["review_minutes"] = round(counts[Status.PENDING.value] * SECONDS_PER_SUGGESTION / 60, 1)
        elif entry.state == FAILED:
            row["reason"] = entry.reason
        rows.append(row)
    return rows


def export_project(project: Project, out: Path, format: str | None = None) -> list[Path]:
    """Write every processed file's captions (decisions applied, sentence starts and the words the
    language always capitalises given capitals) to ``out``.

    Inputs are never overwritten: a target that is one of the project's own files is refused.
    """
    from app.services.punctuate import sentence_casing

    out = out.resolve()
    inputs = {p.resolve() for e in project.files() for p in (e.captions_path, e.reference_path) if p}
    written = []
    for entry in project.files():
        if entry.state != DONE:
            continue
        document, history = project.load(entry.id)
        history.do(sentence_casing(document, project.language(entry.id)))
        target_format = format or document.format
        relative = Path(entry.stem).parent / entry.captions_path.with_suffix(f".{target_format}").name
        target = out / relative
        if target.resolve() in inputs:
            raise WriteError(f"{target}: is an input file of this project; export to another folder")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise WriteError(f"{target.parent}: cannot make the folder ({error.strerror or error})") from None
        write_document(document, target, format=target_format)
        written.append(target)
    return written
