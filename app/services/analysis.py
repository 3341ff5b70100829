"""The one use case: suggestions for one caption file.

``analyse`` takes an ``AnalysisRequest`` (the captions and what is known about them) and a loaded
``Punctuator``, and returns an ``Analysis``: the parsed document, the suggestions (the reference's,
then the model's), the audio it measured, the text model's reading and a report. The command
line's ``punctuate``, the batch workers and the editor's background process all call it; nothing
else puts reference transfer, word timings, audio evidence, the text model and the listener
together. It touches no project file: its caller owns the project and writes the results.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.core.audio_use import DEFAULT_AUDIO_USE as DEFAULT_AUDIO_USE  # re-exported for the command line
from app.core.audio_use import AudioUse as AudioUse  # re-exported for the command line
from app.core.gap_features import GapMeasure
from app.core.gap_readings import GapReading
from app.core.model import Document, Evidence, Suggestion
from app.formats import format_of, parse_document
from app.services.gap_evidence import gap_evidence
from app.services.suggestions import TextReading, drop_capitals_export_gives, suggestions_from, text_reading

if TYPE_CHECKING:
    from app.ml.house_style import HouseStyle
    from app.services.learnt_capitals import CapitalCount
    from app.services.listening import Readings
    from app.services.model import Punctuator
    from app.store.project import FileResults, Project

Progress = Callable[[str, float], None]  # (what is being done, fraction done or -1 when unknown)


@dataclass(frozen=True)
class AnalysisRequest:
    """One caption file to analyse. ``captions`` are the file's bytes, parsed once, by ``analyse``."""

    captions: bytes
    format: str
    path: Path  # where the captions came from, for messages
    media: Path | None = None
    reference: Path | None = None
    timings: Path | None = None  # a recogniser's word times (.ctm, .words.json)
    language: str | None = None  # detected from the text when None
    audio: AudioUse = DEFAULT_AUDIO_USE  # what of the media and word timings is used
    #: Whether listening also hears where each word is said (for re-cutting, the waveform, P);
    #: ``punctuate`` asks only with ``--recut``, as it costs an eighth of the listening.
    word_times: bool = True

    @property
    def listens(self) -> bool:
        """Whether the recogniser listens along the words: asked to, with media to hear."""
        return self.audio is AudioUse.LISTEN and self.media is not None

    def passes(self) -> tuple[AnalysisRequest, ...]:
        """The analyses a person waits on, in order: where the recogniser listens, first the text
        model's reading with the timings (shown in a second or two), then the listening one, which
        reuses that reading; else this one alone."""
        if not self.listens:
            return (self,)
        return replace(self, audio=AudioUse.TIMINGS), self

    @classmethod
    def from_file(cls, path: Path, **known: Any) -> AnalysisRequest:
        """A request for a caption or text file on disk (``known``: the other fields)."""
        from app.formats import read_bytes

        return cls(read_bytes(path), format_of(path), path, **known)

    @classmethod
    def from_project(
        cls, project: Project, file_id: int, audio: AudioUse = DEFAULT_AUDIO_USE
    ) -> AnalysisRequest:
        """A request for a project's file, read here so that ``analyse`` never touches the project."""
        entry = project.file(file_id)
        return cls(
            project.captions_bytes(file_id),
            entry.captions_format,
            entry.captions_path,
            media=entry.media_path,
            reference=entry.reference_path,
            timings=entry.timings_path,
            language=entry.language,
            audio=audio,
        )


@dataclass
class AnalysisReport:
    """What an analysis used and found, as stored with the file's results."""

    words: int
    language: str | None = None
    evidence: str = Evidence.TEXT  # the richest evidence any gap had
    warnings: list[str] = field(default_factory=list)
    reference: dict[str, Any] | None = None  # marks carried and skipped, word error rate, warnings
    timings: dict[str, int] | None = None  # words of a timing file matched to the captions

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class Analysis:
    """What ``analyse`` found."""

    document: Document  # the captions as parsed, with the word timings found for them
    suggestions: list[Suggestion]  # the reference's first, then the model's
    report: AnalysisReport
    track: Any = None  # app.audio.analysis.AudioTrack when there was media
    measures: list[GapMeasure] | None = None  # per word: pause and pitch at its gap, when measured
    reading: TextReading | None = None  # the text model's, before listening: a later pass reuses it
    #: Per word: what the readers said at its gap, kept for the house style (``services.restyle``).
    readings: list[GapReading] | None = None

    def with_style(
        self, style: HouseStyle | None, capitals: Mapping[str, CapitalCount] | None = None
    ) -> Analysis:
        """This analysis with the model's suggestions read with the house style ``style`` and the
        ``capitals`` the project's answers taught first (``restyle.styled``), as batch and
        ``punctuate --style`` start a file; itself when neither is given."""
        if style is None and not capitals:
            return self
        from app.ml.house_style import HouseStyle as NeutralStyle
        from app.services.restyle import styled

        suggestions = styled(
            self.document, self.suggestions, self.readings, style or NeutralStyle(), capitals
        )
        return replace(self, suggestions=suggestions)

    def results(self) -> FileResults:
        """What the analysis leaves in a project: its suggestions, report, measures and readings."""
        from app.store.project import FileResults

        return FileResults(self.suggestions, self.report.as_json(), self.measures, self.readings)


#: Why the media of a text without timings (plain text, no timing file) goes unused.
_UNTIMED = (
    "the text has no timings, so nothing says where in the media its words are said:"
    " the media was not used (captions with times, or --timings, would be heard)"
)


def _timed(document: Document) -> bool:
    """Whether anything says when the words are said: the cues' times or the words' own."""
    return any(cue.end > cue.start for cue in document.cues) or any(
        word.start is not None for word in document.words()
    )


@dataclass(frozen=True)
class _Stages:
    """Tells ``progress`` what an analysis is doing, and stops it when ``cancelled`` says so."""

    progress: Progress | None
    cancelled: Callable[[], bool] | None

    def __call__(self, text: str, fraction: float = -1.0) -> None:
        if self.cancelled is not None and self.cancelled():
            raise InterruptedError("cancelled")
        if self.progress is not None:
            self.progress(text, fraction)


def analyse(
    request: AnalysisRequest,
    punctuator: Punctuator,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    track: Any = None,
    reading: TextReading | None = None,
) -> Analysis:
    """Reference transfer, then the text model, then, when ``request.audio`` is LISTEN and there is
    media, the recogniser listening along the words; the suggestions from what they read.

    Safe on a worker thread or in another process. ``track`` is an already analysed
    ``AudioTrack`` of the media, to skip decoding it again. ``reading`` is an earlier analysis's
    text reading of the same captions (the editor's, shown before listening), to skip reading them
    again; a reading of other words or another language is not used.
    """
    stage = _Stages(progress, cancelled)
    document = parse_document(request.captions, request.format, request.path)
    report = AnalysisReport(words=document.word_count)
    language = document.language = request.language
    _carry_reference(request, document, report, stage)
    _attach_timings(request, document, report, stage)
    media, track = _media_to_hear(request, document, report, track, stage)
    stage("Measuring pauses")
    evidence = gap_evidence(document, media, track) if request.audio.with_audio else None
    if reading is None or not reading.reads(document, language):
        stage("Loading the punctuation model")
        punctuator.load()
        stage("Suggesting punctuation")
        reading = text_reading(document, punctuator, language, evidence)
    heard = None
    if media is not None and request.listens and reading.language is not None:
        heard = _listen_along(request, document, reading, track, punctuator, stage)
    suggestions, found = suggestions_from(document, reading, evidence, heard)
    report.language, report.evidence = found.language, found.evidence
    document.language = found.language
    drop_capitals_export_gives(document, found.language)
    report.warnings += found.warnings
    stage("Done", 1.0)
    measures = evidence.measures if evidence is not None else None
    if measures is not None:
        from app.services.listening import with_heard_times

        # Kept with the measures (a project stores them), so a later export cuts its cues by
        # the words' times: the captions' own or a timing file's, else those heard.
        measures = with_heard_times(measures, document, heard.word_times if heard is not None else ())
    return Analysis(
        document, [*document.suggestions, *suggestions], report, track, measures, reading, found.readings
    )


def _carry_reference(
    request: AnalysisRequest, document: Document, report: AnalysisReport, stage: _Stages
) -> None:
    """The reference's marks carried onto ``document`` as suggestions, when there is a reference."""
    from app.services.transfer import propose_from_reference, read_reference

    if request.reference is None:
        return
    stage("Carrying over the reference's punctuation")
    carried = propose_from_reference(document, read_reference(request.reference), request.language or "en")
    report.reference = {k: v for k, v in carried.items() if k in ("carried", "skipped", "wer", "warnings")}


def _attach_timings(
    request: AnalysisRequest, document: Document, report: AnalysisReport, stage: _Stages
) -> None:
    """The timing file's word times put on ``document``'s words, when there is one to use."""
    if request.timings is None or not request.audio.with_audio:
        return
    from app.services.documents import attach_timing_file

    stage("Reading the word timings")
    report.timings = attach_timing_file(document, request.timings, request.language or "en")
    if not report.timings.get("aligned"):
        report.warnings.append(f"{request.timings.name}: no word matched the captions")


def _media_to_hear(
    request: AnalysisRequest, document: Document, report: AnalysisReport, track: Any, stage: _Stages
) -> tuple[Path | None, Any]:
    """The media to use and its analysed track (``track`` if given, else decoded here); neither
    when the audio is not to be used or nothing says when the words are said."""
    media = request.media if request.audio.with_audio else None
    if media is not None and not _timed(document):
        report.warnings.append(_UNTIMED)
        media = track = None
    if media is not None and track is None:
        from app.audio.analysis import analyse_media
        from app.audio.decode import probe

        # Media far longer than its captions (3 h behind a minute of captions) is heard only as
        # far as the captions go, and the person is told: decoding the rest cost minutes and GBs.
        until = max((cue.end for cue in document.cues), default=0) / 1000 + MEDIA_BEYOND_CAPTIONS_S
        length = probe(media).duration
        if length and length > until + MEDIA_BEYOND_CAPTIONS_S:  # more than a short ending left out
            report.warnings.append(
                f"{media.name} runs {_clock(length)} and the captions end at {_clock(until - MEDIA_BEYOND_CAPTIONS_S)}:"
                f" only its first {_clock(until)} is listened to"
            )
        stage("Listening to the audio", 0.0)
        track = analyse_media(media, lambda f: stage("Listening to the audio", f), stage.cancelled, until)
    return media, track


#: Seconds of media heard after the captions' last cue ends (a cue's words may run on past it).
MEDIA_BEYOND_CAPTIONS_S = 30.0


def _clock(seconds: float) -> str:
    """``seconds`` as h:mm:ss, or m:ss under an hour."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def _listen_along(
    request: AnalysisRequest,
    document: Document,
    reading: TextReading,
    track: Any,
    punctuator: Punctuator,
    stage: _Stages,
) -> Readings:
    """What ``punctuator``'s recogniser hears along ``document``'s words in the media's ``track``."""
    from app.services.listening import listen

    # Said before the recogniser loads and hears its first window (seconds on a busy machine),
    # which the last stage's name ("Measuring pauses") would otherwise be shown through.
    stage("Listening along the words", 0.0)
    if punctuator.one_file:
        punctuator.release_text_model()
    return listen(
        document,
        reading,
        track,
        punctuator.listener,
        lambda f: stage("Listening along the words", f),
        stage.cancelled,
        request.word_times,
    )
