"""One file of a batch run, as a worker does it, wherever it runs (a local worker process, a Ray
worker): what it is handed, the analysis, and the outcome it answers with. Workers never write
the project; the driver commits each outcome (``batch_scheduler``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.core.errors import file_failure
from app.core.gap_features import GapMeasure
from app.core.gap_readings import GapReading
from app.core.model import Suggestion
from app.ml.house_style import HouseStyle
from app.services.analysis import AnalysisRequest
from app.services.model import Punctuator


@dataclass(frozen=True)
class BatchJob:
    """One file for a worker: which project file it is, and what to analyse."""

    file_id: int
    request: AnalysisRequest
    #: The project's house style, which a new file's gaps are read with (None: the model's own).
    style: HouseStyle | None = None


@dataclass(frozen=True)
class FileOutcome:
    """A worker's answer for one file: its suggestions and report, or why it failed."""

    suggestions: list[Suggestion] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    measures: list[GapMeasure] | None = None  # what was measured at each gap, for the review
    readings: list[GapReading] | None = None  # what the readers said at each gap, for the house style


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
    suggestions = analysis.suggestions
    if job.style is not None:
        from app.services.restyle import styled

        suggestions = styled(analysis.document, suggestions, analysis.readings, job.style)
    # Reference suggestions first; the model's ids follow theirs.
    return FileOutcome(
        suggestions, analysis.report.as_json(), measures=analysis.measures, readings=analysis.readings
    )
