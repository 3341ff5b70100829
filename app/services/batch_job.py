"""One file of a batch run, as a worker does it, wherever it runs (a local worker process, a Ray
worker): what it is handed, the analysis, and the outcome it answers with. Workers never write
the project; the driver commits each outcome (``batch_scheduler``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from app.core.errors import file_failure
from app.ml.house_style import HouseStyle
from app.services.analysis import AnalysisRequest
from app.services.learnt_capitals import CapitalCount
from app.services.model import Punctuator
from app.store.project import FileResults


@dataclass(frozen=True)
class BatchJob:
    """One file for a worker: which project file it is, and what to analyse."""

    file_id: int
    request: AnalysisRequest
    #: The project's house style, which a new file's gaps are read with (None: the model's own).
    style: HouseStyle | None = None
    #: What the project's answers taught of words' capitals (``services.learnt_capitals``).
    capitals: dict[str, CapitalCount] = field(default_factory=dict)


@dataclass(frozen=True)
class FileOutcome:
    """A worker's answer for one file: what its analysis leaves in the project, or why it failed."""

    results: FileResults = field(default_factory=lambda: FileResults([], {}))
    error: str | None = None


def process_job(job: BatchJob, punctuator: Callable[[], Punctuator]) -> FileOutcome:
    """One file: reference transfer, then the model (with audio when there is media). What the
    file or the model refuses is its outcome (``core.errors.file_failure``), so that the other
    files go on; a bug is raised, for the worker to report as one."""
    from app.services.analysis import analyse

    try:
        analysis = analyse(job.request, punctuator())
    except Exception as error:
        reason = file_failure(error)
        if reason is None:
            raise  # a bug: the worker reports it as one (``bug_report``)
        return FileOutcome(error=reason)
    return FileOutcome(analysis.with_style(job.style, job.capitals).results())
