"""The scheduling of a batch run, the same wherever its files are processed: take the files to do
(those pending, and those a run that died left running), hand them to the workers as they have
room, commit each outcome as it comes back, and on Ctrl+C put the files still out back to pending.

Where the files run is behind ``Workers``: the local process pool (``local_pool``) or actors on a
Ray cluster (``cluster``). This process, the driver, is the project's only writer: each file's
outcome reaches the project here, in one transaction, so a run stopped at any moment leaves
every file either done or pending.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from app.core.audio_use import DEFAULT_AUDIO_USE, AudioUse
from app.core.commands import Apply, ApplyPolicy, accept_confident
from app.core.decisions import AcceptMany, Decision, Settle, encode
from app.core.errors import PunctumError
from app.core.history import Decider
from app.core.model import Suggestion
from app.core.triage import about_wrong, gaps_settled
from app.services.analysis import AnalysisRequest
from app.services.batch_job import BatchJob, FileOutcome
from app.services.hearing import AUDIO_GIVEN, audio_given, why_hear_again
from app.services.model import prepare_model
from app.services.projects import carried_decisions, reanalyse_file
from app.store.project import DONE, FAILED, PENDING, FileEntry, Project


@dataclass
class BatchSettings:
    model: str | None = None
    # What is accepted without review: nothing by default; "confident", "all" or the triage rule.
    policy: ApplyPolicy = field(default_factory=lambda: ApplyPolicy(Apply.NONE))
    workers: int | None = None
    audio: AudioUse = DEFAULT_AUDIO_USE  # what of the media and word timings is used
    int8: bool | None = None  # None: the default precision (INT8_BY_DEFAULT)


@dataclass
class BatchSummary:
    done: int = 0
    failed: int = 0
    skipped: int = 0  # already done by an earlier run
    failures: dict[str, str] = field(default_factory=dict)
    workers_lowered: str | None = None  # why fewer workers ran than --workers asked for
    settled: int = 0  # gaps --apply triage settled in this run (as ``punctum status`` counts them)
    may_be_wrong: float = 0.0  # about how many of those may be wrong (``triage.about_wrong``)
    commit_seconds: float = 0.0  # the driver's time writing results: what bounds a large cluster
    #: What the files done in this run warn of (media without speech, a reference for another
    #: video...), by file: kept in the project too, and shown by ``punctum status``.
    warnings: dict[str, list[str]] = field(default_factory=dict)
    #: Files done before and analysed again, as their media is heard only now: what was done,
    #: by file.
    heard_again: dict[str, str] = field(default_factory=dict)


def report_warnings(report: dict[str, Any]) -> list[str]:
    """The warnings a file's stored report holds: its analysis's and its reference's."""
    reference = report.get("reference") or {}
    return [str(w) for w in [*report.get("warnings", []), *reference.get("warnings", [])]]


class Workers(Protocol):
    """Where a run's files are processed: the local process pool, or actors on a Ray cluster."""

    #: How many files the workers hold at once.
    capacity: int

    def submit(self, job: BatchJob, stem: str) -> None:
        """Hand one file (``stem`` names it) to a worker."""

    def next_finished(self) -> tuple[int, FileOutcome]:
        """Wait for the next file a worker is done with: its id, and its outcome (its failure,
        when its worker died on it)."""


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


def run_pending(
    project: Project,
    settings: BatchSettings,
    summary: BatchSummary,
    start_workers: Callable[[int], AbstractContextManager[Workers]],
    on_progress: Callable[[str, str], None] | None = None,
) -> None:
    """Process every pending file on the workers ``start_workers(files to do)`` starts (and stops
    when the run ends), and those done before to hear again (``hearing``); ``on_progress(stem,
    state)`` hears each start ("started", or "started again") and finish, and ``summary`` counts
    what was done."""
    queue, again = _pending_files(project, settings, summary)
    if not queue:
        return
    # A malformed model is refused before any worker starts; one without an export gets it here,
    # once, rather than in every worker at the same time.
    prepare_model(settings.model, settings.int8)
    running: dict[int, tuple[int, FileEntry]] = {}  # by file id: its job id and entry
    # New files are read with the house style the project's decisions taught (and the style it was
    # given): a batch's own decisions are the rule's, so the style stays the same all run.
    from app.services.restyle import project_style
    from app.services.review_style import project_teaching

    examples, capitals = project_teaching(project)  # and the capitals the answers taught
    style = project_style(project, examples)
    with start_workers(len(queue)) as workers:
        try:
            while queue or running:
                while queue and len(running) < workers.capacity:
                    entry = queue.pop(0)
                    running[entry.id] = (project.start_job(entry.id, again=entry.id in again), entry)
                    request = AnalysisRequest.from_project(project, entry.id, settings.audio)
                    given = BatchJob(entry.id, request, None if style.neutral else style, capitals)
                    workers.submit(given, entry.stem)
                    if on_progress:  # a file done before starts again: its count as done is taken back
                        on_progress(entry.stem, "started again" if entry.id in again else "started")
                file_id, outcome = workers.next_finished()
                job, entry = running.pop(file_id)
                committing = time.perf_counter()
                if file_id in again:
                    state = _record_heard_again(
                        project, settings, summary, (entry, job, again[file_id]), outcome
                    )
                else:
                    state = _record_outcome(project, settings, summary, (entry, job), outcome)
                summary.commit_seconds += time.perf_counter() - committing
                if on_progress:
                    on_progress(entry.stem, state)
        except KeyboardInterrupt:
            project.reset_interrupted()  # the files still out go back to pending
            raise


def _pending_files(
    project: Project, settings: BatchSettings, summary: BatchSummary
) -> tuple[list[FileEntry], dict[int, tuple[str, str]]]:
    """The files a run processes, in order: those pending, those a run that died left running and
    those that failed before (put back to pending first); then those done before that would be
    given media or word timings now that they were not (``hearing``), with why, by file id.
    ``summary`` counts the files done by earlier runs."""
    project.reset_interrupted()
    for entry in project.files():
        # What made it fail (its media, a permission, a worker killed) may have been mended since.
        # Captions that could not be read are not retried: they are imported again once changed.
        if (
            entry.state == FAILED
            and project.has_captions(entry.id)
            and not project.captions_changed(entry.id)
        ):
            project.retry(entry.id)
    entries = project.files()
    again = {e.id: why for e in entries if (why := why_hear_again(project, e, settings.audio))}
    summary.skipped = sum(1 for e in entries if e.state == DONE and e.id not in again)
    return [e for e in entries if e.state == PENDING or e.id in again], again


def _record_heard_again(
    project: Project,
    settings: BatchSettings,
    summary: BatchSummary,
    running: tuple[FileEntry, int, tuple[str, str]],
    outcome: FileOutcome,
) -> str:
    """Commit the outcome of a file done before and analysed again (``running``: its entry, job id,
    and what it was analysed again with and why) in one transaction: a new version with its
    decisions carried over, and the new results. Failed, its earlier results stand and the summary
    warns of it. Returns "done"."""
    entry, job, (what, why) = running
    error = outcome.error
    if error is None:
        try:
            with project.transaction():  # all of it, or (the project's problem) none
                carried = reanalyse_file(project, entry.id)
                _record_outcome(project, settings, summary, (entry, job), outcome)
        except PunctumError as problem:
            error = str(problem)
    if error is not None:
        project.job_failed(job, error)
        summary.skipped += 1  # done, as it was
        summary.warnings.setdefault(entry.stem, []).append(
            f"not analysed again with {what} ({why}): {error}; its earlier results stand"
            " (punctum relink mends the media; batch --no-audio leaves the file as it is)"
        )
        return DONE
    summary.heard_again[entry.stem] = f"analysed again with {what} ({why}; {carried.told()})"
    return DONE


def _record_outcome(
    project: Project,
    settings: BatchSettings,
    summary: BatchSummary,
    running: tuple[FileEntry, int],
    outcome: FileOutcome,
) -> str:
    """Commit one file's outcome (``running``: its entry and job id) in one transaction: its
    results (with what its analysis was given, ``hearing.audio_given``) and the decisions
    ``--apply`` makes, or its failure with the reason. Returns the file's new state, "done" or
    "failed"."""
    entry, job = running
    file_id, stem = entry.id, entry.stem
    if outcome.error is not None:
        project.fail(file_id, job, outcome.error)
        summary.failed += 1
        summary.failures[stem] = outcome.error
        return FAILED
    results = outcome.results
    carried, settled = carried_decisions(project, file_id, results.suggestions)
    decisions, by = _batch_decisions(settled, settings, entry.reference_path is not None)
    if by is Decider.RULE:
        accepted = [i for d in decisions if isinstance(d, Settle) for i in d.accept]
        summary.settled += gaps_settled(settled, accepted)
        summary.may_be_wrong += about_wrong(settled, accepted)
    given = {AUDIO_GIVEN: audio_given(project, entry, settings.audio)}
    project.finish(
        file_id,
        job,
        replace(results, report={**results.report, **given}),
        [(*encode(d), who) for d, who in carried] + [(*encode(d), by) for d in decisions],
    )
    summary.done += 1
    warnings = report_warnings(results.report)
    if warnings:
        summary.warnings[stem] = warnings
    return DONE


def _batch_decisions(
    suggestions: list[Suggestion], settings: BatchSettings, reference_given: bool
) -> tuple[list[Decision], Decider]:
    """What ``--apply`` accepts (``commands.accept_confident``), as the decision to record, and who
    decided: the triage rule's settlement is the editor's own (a policy changed there reopens it);
    the other policies are the batch's."""
    chosen = accept_confident(suggestions, settings.policy, reference_given)
    if not chosen:
        return [], Decider.BATCH
    if settings.policy.how is Apply.TRIAGE:
        return [Settle((), tuple(chosen))], Decider.RULE
    return [AcceptMany(tuple(chosen))], Decider.BATCH
