"""Whole folders: pair captions with their media and reference, process every file in worker
processes, keep the results in a project file, resume after an interruption, export the lot.

A file's results reach the project in one transaction when it is finished, so a run killed at
any moment leaves every file either done (never processed again) or pending (processed from the
start on the next run); never half of one. Captions edited on disk after they were imported are
imported again as a new version, and ``export`` refuses to write them until they have been.

Pairing a folder's files is ``folder_pairing``'s job, and scheduling a run ``batch_scheduler``'s:
here on the processes of ``local_pool``, in ``cluster`` on Ray.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path

from app.core.errors import PunctumError, UsageError
from app.core.gap_features import GapMeasure
from app.core.interrupts import terminate_as_interrupt
from app.core.line_breaks import LineChecks
from app.core.model import Document, Status
from app.formats import WriteError
from app.services.batch_scheduler import BatchSettings, BatchSummary, report_warnings, run_pending
from app.services.captions_export import ExportOptions, ExportSteps, RecutReport
from app.services.folder_pairing import Pairing, pair_folder
from app.services.local_pool import start_local_pool
from app.services.projects import (
    UNRECORDED_RECUT_WARNING,
    add_caption_file,
    load_document,
    reimport_caption_file,
    status_counts,
)
from app.services.style_files import StyleStatus
from app.store.project import DONE, FAILED, INTERRUPTED, RUNNING, Project

#: A person's time per gap left to review (its candidates from the reference and the model are
#: one decision); the review estimate is this times the gaps the triage rule leaves open.
SECONDS_PER_GAP = 4.0


def import_folder(folder: Path, project: Project) -> Pairing:
    """Register every paired file of ``folder`` not yet in the project, and import again (as a
    new version, keeping the decisions that still apply) those whose captions changed on disk;
    media found for a file that has none (or whose media is gone) is linked to it, for the run to
    hear. The folder is remembered, so that no export of the project is written inside it."""
    _remember_folder(project, folder)
    pairing = pair_folder(folder, project.path)
    known = {entry.stem: entry for entry in project.files()}
    for group in pairing.groups:
        entry = known.get(group.stem)
        if entry is not None:
            if project.captions_changed(entry.id):
                pairing.reimported[group.stem] = _reimport(project, entry.id, group.captions)
            if group.media is not None and (entry.media_path is None or not entry.media_path.is_file()):
                # Media added to the folder since (or captions transcribed at last): the run hears it.
                project.relink_media(entry.id, group.media)
            continue
        try:
            add_caption_file(project, group)
        except PunctumError as error:
            project.add_file_failed(group.stem, group.captions, str(error))
            pairing.failed_imports[group.stem] = str(error)
    return pairing


#: Where the project keeps the folders ``batch`` reads (a JSON list of absolute paths).
_BATCH_FOLDERS = "batch.folders"


def _remember_folder(project: Project, folder: Path) -> None:
    folders = batch_folders(project)
    root = folder.resolve()
    if root not in folders:
        project.set_setting(_BATCH_FOLDERS, json.dumps([str(f) for f in [*folders, root]]))


def batch_folders(project: Project) -> list[Path]:
    """The folders ``batch`` has read for the project (none for a project it never ran on)."""
    try:
        kept = json.loads(project.setting(_BATCH_FOLDERS) or "[]")
    except ValueError:  # edited by hand: no folder known
        return []
    return [Path(f) for f in kept if isinstance(f, str)] if isinstance(kept, list) else []


def _reimport(project: Project, file_id: int, captions: Path) -> str:
    try:
        done = reimport_caption_file(project, file_id, captions)
    except PunctumError as error:
        project.fail(file_id, None, f"captions changed on disk and cannot be read: {error}")
        return f"captions changed on disk and cannot be read; the earlier version is kept ({error})"
    told = done.told(" where the words changed")
    return f"captions changed on disk; imported again as version {done.version} ({told})"


def run_batch(
    project: Project,
    settings: BatchSettings,
    on_progress: Callable[[str, str], None] | None = None,
) -> BatchSummary:
    """Process every pending file; ``on_progress(stem, state)`` hears each start and finish.

    Ctrl+C or SIGTERM stops the workers at once; files they were on go back to pending.
    """
    summary = BatchSummary()
    with terminate_as_interrupt():  # so the pool is ended and its semaphores released
        run_pending(project, settings, summary, partial(start_local_pool, settings, summary), on_progress)
    return summary


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
    settled: int | None = None  # gaps the triage rule settled by itself that still stand
    decided_by_you: int | None = None  # gaps whose mark a person decided (what the style learns from)
    may_be_wrong: float | None = None  # about how many of those settled may be wrong
    review_minutes: float | None = None
    reason: str | None = None
    warnings: list[str] | None = None  # what its analysis warned of (media without speech...)

    def as_json(self) -> dict[str, object]:
        return {key: value for key, value in asdict(self).items() if value is not None}


@dataclass(frozen=True)
class ProjectStatus:
    """A project as ``punctum status`` shows it: each file, and the project's house style."""

    files: list[FileStatus]
    house_style: StyleStatus


#: What ``status`` says of a file an earlier Punctum analysed without keeping its gaps' readings.
NO_READINGS_WARNING = (
    "analysed by an earlier Punctum: its decisions teach the house style nothing until"
    " `punctum batch` analyses it again (its decisions carried over)"
)


def recut_unrecorded(project: Project) -> list[str]:
    """The processed files an earlier Punctum re-cut without recording the cues, by name."""
    return [e.stem for e in project.files() if e.state == DONE and project.has_unrecorded_recut(e.id)]


def project_status(project: Project) -> ProjectStatus:
    """Each file's state (files left running by a process that died are "interrupted"; captions
    changed on disk since they were imported are "stale"), its suggestions by status and the
    review time they need; and the house style the decisions on all of them have taught (each
    file read once, for both)."""
    from app.services.learnt_capitals import CapitalCount, learnt_line, merged, taught_capitals
    from app.services.restyle import decided, file_examples, project_style, reset_at

    rows = []
    examples = []
    capitals: list[dict[str, CapitalCount]] = []
    reset = reset_at(project)
    writing = project.writer() is not None
    for entry in project.files():
        state, reason = entry.state, None
        counts: dict[str, int] = {}
        may_be_wrong = None
        if entry.state == RUNNING and not writing:
            state = INTERRUPTED
        warnings = None
        if entry.state == DONE:
            loaded = load_document(project, entry.id)
            taught = decided(*loaded)  # read once for the counts and the style's examples
            counts, may_be_wrong = status_counts(*loaded, taught.settled)
            counts["decided_by_you"] = len(taught.taught_at)
            examples += file_examples(project, entry.id, *loaded, state=taught)
            capitals.append(taught_capitals(*loaded, reset))
            warnings = report_warnings(project.report(entry.id)) or None
            if not project.has_gap_readings(entry.id):
                warnings = [*(warnings or []), NO_READINGS_WARNING]
            if project.has_unrecorded_recut(entry.id):
                warnings = [*(warnings or []), UNRECORDED_RECUT_WARNING]
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
                pending=counts.get(Status.PENDING.value),
                accepted=counts.get(Status.ACCEPTED.value),
                rejected=counts.get(Status.REJECTED.value),
                settled=counts.get("settled"),
                decided_by_you=counts.get("decided_by_you"),
                may_be_wrong=round(may_be_wrong, 1) if may_be_wrong is not None else None,
                review_minutes=round(gaps * SECONDS_PER_GAP / 60, 1) if gaps is not None else None,
                reason=reason,
                warnings=warnings,
            )
        )
    return ProjectStatus(
        rows, StyleStatus.of(project_style(project, examples), learnt_line(merged(*capitals)))
    )


class StaleCaptionsError(PunctumError):
    """Captions changed on disk since they were imported: exporting would write the old words."""


class ExportFolderError(UsageError):
    """An ``--out`` folder that cannot be made, or that a batch of the project reads."""


#: What ``batch`` keeps in a project for every ``export`` of it, by option: ``--rebreak`` (lines
#: laid out again) and ``--recut`` (cues cut again at sentence ends; kept under its earlier name,
#: so that projects made before read the same).
EXPORT_OPTIONS = {"rebreak": "export.rebreak", "recut": "export.resegment"}


def remember_for_export(project: Project, option: str, on: bool = True) -> None:
    """``batch --rebreak`` or ``--recut`` (``option``): every export of the project does it
    (``--no-…``, False: no longer)."""
    project.set_setting(EXPORT_OPTIONS[option], "true" if on else "false")


def _kept_for_export(project: Project, option: str) -> bool:
    return project.setting(EXPORT_OPTIONS[option]) == "true"


@dataclass(frozen=True, kw_only=True)
class ProjectExport(ExportSteps):
    """What ``export_project`` wrote, and the lines' checks and the cuts, summed over its files,
    when it re-broke or re-cut them."""

    written: list[Path]


def export_project(
    project: Project,
    out: Path,
    format: str | None = None,
    rebreak: bool | None = None,
    recut: bool | None = None,
) -> ProjectExport:
    """Write every processed file's captions (decisions applied, sentence starts and the words the
    language always capitalises given capitals) to ``out``.

    Inputs are never overwritten: a target that is one of the project's own files is refused, and
    so is an ``out`` inside a folder ``batch`` reads for the project (``ExportFolderError``).
    ``out`` is made if the folder it goes in exists; a missing parent is refused (a mistyped path
    makes no tree of folders). Captions changed on disk since they were imported are refused, so
    the old words are never written in their place: ``punctum batch`` imports them again.
    """
    # As ``batch --rebreak`` and ``--recut`` asked, unless told this time.
    rebreak = _kept_for_export(project, "rebreak") if rebreak is None else rebreak
    recut = _kept_for_export(project, "recut") if recut is None else recut

    if not out.is_dir() and not out.parent.is_dir():
        raise ExportFolderError(f"{out}: the folder {out.parent} does not exist; --out makes one folder only")
    given, out = out, out.resolve()
    for folder in batch_folders(project):
        # (The folder itself is refused below, by the inputs its files would replace or sit beside.)
        if out != folder and out.is_relative_to(folder):
            raise ExportFolderError(
                f"{given}: inside {folder}, the folder punctum batch reads for this project, whose next"
                " run would import the exported captions as new ones; export to a folder outside it"
            )
    inputs = {p.resolve() for e in project.files() for p in (e.captions_path, e.reference_path) if p}
    captions = [e.captions_path.resolve() for e in project.files()]
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
        paired = _pairs_with(target, captions)
        if paired is not None:
            raise WriteError(
                f"{target}: would sit beside {paired.name}, captions of this project with its name,"
                " and a batch of that folder would find two for one file; export to another folder"
            )
        measures = project.gap_measures(entry.id) if recut else None
        ready.append((document, project.language(entry.id), target, target_format, measures))
    return _write_all(ready, out, ExportOptions(rebreak=rebreak, recut=recut))


def _write_all(
    ready: list[tuple[Document, str, Path, str, list[GapMeasure] | None]],
    out: Path,
    options: ExportOptions,
) -> ProjectExport:
    """Write the files ``export_project`` made ready (each document, its language, target, format
    and gap measures), in order. One that cannot be written (a full disk) stops the export, its
    error saying which were written before it and which were not."""
    from app.services.captions_export import export_captions

    before = after = LineChecks(0, 0, 0)
    cuts: RecutReport | None = None
    written: list[Path] = []
    lost: list[str] = []
    for document, language, target, target_format, measures in ready:
        try:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise WriteError(
                    f"{target.parent}: cannot make the folder ({error.strerror or error})"
                ) from None
            exported = export_captions(
                document, target, language, replace(options, format=target_format), measures
            )
        except PunctumError as error:
            left = [target for _, _, target, _, _ in ready[len(written) :]]
            error.args = (f"{error}; {_written_so_far(out, written, left)}",)
            raise
        written.append(target)
        lost += [f"{target.name}: {line}" for line in exported.left_out]
        if exported.lines is not None:
            before, after = before + exported.lines[0], after + exported.lines[1]
        if exported.recut is not None:
            cuts = exported.recut if cuts is None else cuts + exported.recut
    return ProjectExport(
        lines=(before, after) if options.rebreak else None, recut=cuts, left_out=tuple(lost), written=written
    )


def _written_so_far(out: Path, written: list[Path], left: list[Path]) -> str:
    """Which files an export stopped part way wrote in ``out``, and which it did not."""

    def named(paths: list[Path], most: int = 6) -> str:
        names = [p.relative_to(out).as_posix() if p.is_relative_to(out) else str(p) for p in paths]
        more = f" and {len(names) - most} more" if len(names) > most else ""
        return ", ".join(names[:most]) + more

    total = len(written) + len(left)
    if not written:
        return f"nothing written ({total} files)"
    return (
        f"{len(written)} of {total} files written in {out} before it ({named(written)}),"
        f" {len(left)} not ({named(left)})"
    )


def _pairs_with(target: Path, captions: list[Path]) -> Path | None:
    """The project's caption file that ``target`` would be paired with as a second caption file
    of the same name (``talk.vtt`` beside ``talk.srt``), if any."""
    from app.services.files import classify

    role = classify(target)
    folder = target.resolve().parent
    for path in captions:
        other = classify(path)
        if path.parent == folder and role is not None and other is not None and other.stem == role.stem:
            return path
    return None


# --- projects, for the command line ----------------------------------------------------------


def open_project(
    path: Path, create: bool = False, *, read_only: bool = False, command: str = "punctum"
) -> Project:
    """A project file, created if ``create`` and new (use it as a context manager). Opened for
    writing, it is this process's until closed: another writer is refused, naming ``command``.
    ``read_only`` (status, export) changes nothing in the file, and opens on read-only media."""
    return Project(path, create=create, read_only=read_only, holder=command)


def not_exported(project: Project) -> dict[str, str]:
    """The files ``export_project`` leaves out, by name, with why: failed, or not yet processed."""
    return {
        e.stem: f"failed: {e.reason}" if e.state == FAILED else f"{e.state}, not processed yet"
        for e in project.files()
        if e.state != DONE
    }


class UnknownFileError(UsageError):
    """A file name the project does not hold."""


def check_media(media: Path) -> None:
    """Media that can be decoded, or a ``PunctumError`` telling a folder, a pipe or device, an
    empty file, or captions, a transcript or a project as what they are."""
    from app.audio.decode import probe
    from app.services.files import FileKind, classify

    role = classify(media)
    if media.is_file() and role is not None and role.kind is not FileKind.MEDIA:
        raise PunctumError(f"{media}: {role.kind.value}, not media; name the video or audio")
    probe(media)


def relink_media(project: Project, stem: str, media: Path) -> None:
    """Point the file named ``stem`` (as ``punctum status`` lists it) at its media in a new place."""
    entry = next((e for e in project.files() if e.stem == stem), None)
    if entry is None:
        raise UnknownFileError(f"{project.path}: no file {stem!r} (see punctum status)")
    project.relink_media(entry.id, media)
