"""Reviewing one caption file: what the editor window does, without the window.

A ``ReviewSession`` holds a document, its undo history and the project file that keeps it. Every
decision is recorded in the project before the method returns, so a crash loses nothing: opening
the same captions again replays them. Captions opened on their own get an autosave project in the
user's data folder, keyed by the captions' path; a project the user saved is used as it is.

The slow part, ``app.services.analysis.analyse`` (audio, reference alignment, the model), reads
only the ``analysis_request`` it is given, so the editor runs it in its background process and
hands the result back to ``store_analysis`` on the thread that owns the session.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from pathlib import Path
from typing import Any

from app.core import commands
from app.core.audio_use import DEFAULT_AUDIO_USE, AudioUse
from app.core.checks import STYLE_GUIDE_LIMITS
from app.core.decisions import (
    Accept,
    AcceptMany,
    ChangeMark,
    Decision,
    EditWord,
    Redo,
    Reject,
    RejectMany,
    SetMark,
    Settle,
    Undo,
    encode,
    step_of,
)
from app.core.decisions import Recut as RecutCues
from app.core.errors import PunctumError
from app.core.gap_features import GapMeasure
from app.core.gap_readings import GapReading
from app.core.history import CueEdit, Decider, History, Step
from app.core.marks import SENTENCE_END_CLASSES, model_class
from app.core.model import Document, Source, Status, Suggestion
from app.core.recut_cues import cut_of
from app.core.triage import (
    ReviewRow,
    TriagePolicy,
    gaps_of,
    gaps_to_review,
    proposed_gaps,
    review_queue,
    settled_by_rule,
    triage,
)
from app.formats import format_of, parse_document
from app.ml.house_style import HouseStyle, StyleExample
from app.ml.style_fit import PRIORS
from app.services.analysis import Analysis, AnalysisRequest
from app.services.autosave import autosave_path, free_stem, matching_file
from app.services.captions_export import Exported, RecutReport, as_exported, heard_times, recut_captions
from app.services.checkpoints import CHECKPOINT_EVERY, UNDO_KEPT, collect_less, save_checkpoint
from app.services.folder_pairing import FileGroup
from app.services.learnt_capitals import CapitalCount
from app.services.projects import Reimport, add_caption_file, load_document, store_again
from app.services.restyle import pending_again, reopening
from app.services.review_style import SessionStyle
from app.store.files import CaptionsRead
from app.store.project import DONE, FileEntry, Project

#: What a project open in the editor says of its holder to another writer (a batch, say).
EDITOR = "the Punctum editor"


class ReviewError(PunctumError):
    """A review action the session cannot take."""


class ReviewSession(SessionStyle):
    """One file of a project under review, as the editor sees it."""

    def __init__(self, project: Project, file_id: int, fresh: Document | None = None) -> None:
        """``fresh``: the document of a file just added (nothing to replay), to skip reloading it."""
        collect_less()
        self.project = project
        self.file_id = file_id
        self._measures: list[GapMeasure] | None = None
        self.policy: TriagePolicy | None = None
        #: The caption limits a re-cut keeps to (the editor's Settings).
        self.limits = STYLE_GUIDE_LIMITS
        self.learns = True
        self.priors = PRIORS
        #: What became of the decisions when a new analysis was stored over them (``store_again``).
        self.carried: Reimport | None = None
        self._readings: list[GapReading] | None = None
        self._other_examples: list[StyleExample] | None = None
        self._other_capitals: dict[str, CapitalCount] = {}
        self._fitted: tuple[Step | None, HouseStyle] | None = None
        #: How many of a person's last decisions the file opened again can undo one by one.
        self.undo_kept = UNDO_KEPT
        #: Decisions recorded since the last checkpoint was taken (``services.checkpoints``).
        self._unchecked = 0
        if fresh is not None:
            self.document, self.history = fresh, History(fresh)
            self.restored_decisions = 0
        else:
            self.document, self.history = load_document(project, file_id)
            self.restored_decisions = project.decision_count(file_id)
        #: An earlier Punctum re-cut the file without recording the cues: today's rules cut them.
        self.recut_unrecorded = fresh is None and project.has_unrecorded_recut(file_id)

    @classmethod
    def open(
        cls,
        captions: Path,
        media: Path | None = None,
        reference: Path | None = None,
        project_path: Path | None = None,
        language: str | None = None,
        timings: Path | None = None,
    ) -> ReviewSession:
        """Open captions for review, resuming the decisions of an earlier session on the same file.

        Raises ``FormatError`` for captions that cannot be read, before any project is touched.
        """
        captions = Path(captions).resolve()
        data = captions.read_bytes() if captions.is_file() else None
        if data is None:
            raise ReviewError(f"{captions}: no such file")
        document = parse_document(data, format_of(captions), captions)  # refuse unreadable captions first
        path = project_path or autosave_path(captions)
        path.parent.mkdir(parents=True, exist_ok=True)
        project = Project(path, create=True, holder=EDITOR)
        try:
            file_id = matching_file(project, captions, data)
            if file_id is None and project_path is None and project.files():
                # The captions changed on disk since they were autosaved: keep the old work aside.
                project.close()
                path.rename(path.with_name(f"{path.stem}-{int(time.time())}.punctum"))
                project = Project(path, create=True, holder=EDITOR)
            if file_id is None:
                group = FileGroup(
                    free_stem(project, captions.stem), captions, language, media, reference, timings
                )
                file_id = add_caption_file(project, group, CaptionsRead(data, document))
                session = cls(project, file_id, fresh=document)
            else:
                session = cls(project, file_id)
        except BaseException:
            project.close()
            raise
        if media is not None and session.entry.media_path != media.resolve():
            session.relink_media(media)
        return session

    @classmethod
    def open_project(cls, path: Path, file_id: int | None = None) -> ReviewSession:
        project = Project(path, holder=EDITOR)
        try:
            entries = [e for e in project.files() if e.state != "failed"]
            if not entries:
                raise ReviewError(f"{path}: the project has no readable caption files")
            chosen = file_id if file_id is not None else entries[0].id
            return cls(project, chosen)
        except BaseException:
            project.close()
            raise

    def close(self) -> None:
        """Close the project, first taking a checkpoint of the review so far (the next opening
        replays only the decisions after it)."""
        try:
            if self._unchecked:
                save_checkpoint(self.project, self.file_id, self.document, self.history, self.undo_kept)
        finally:
            self.project.close()

    # --- what is there ----------------------------------------------------------------------

    @property
    def entry(self) -> FileEntry:
        return self.project.file(self.file_id)

    @property
    def analysed(self) -> bool:
        return self.entry.state == DONE

    @property
    def language(self) -> str:
        """The language as given, or as the analysis detected it."""
        return self.project.language(self.file_id)

    def save_as(self, path: Path) -> ReviewSession:
        """A copy of the project at ``path`` (decisions included), opened on the same file."""
        path = Path(path)
        if path.resolve() == self.project.path:
            return self
        if path.exists() and path.stat().st_size and not path.suffix == ".punctum":
            raise ReviewError(f"{path}: exists and is not a Punctum project; not overwriting it")
        self.project.copy_to(path)
        return ReviewSession.open_project(path, self.file_id)

    def counts(self) -> dict[str, int]:
        """Suggestions by status, and the gaps still to review (``"gaps"``)."""
        return {**self.document.status_counts(), "gaps": gaps_to_review(self.document.suggestions)}

    # --- review by exception -------------------------------------------------------------------

    @property
    def has_reference(self) -> bool:
        """Whether the file has a reference transcript: then the model alone settles nothing
        (``commands.has_reference``, as batch decides it)."""
        return commands.has_reference(self.document.suggestions, self.entry.reference_path is not None)

    def settled_by_rule(self) -> set[int]:
        """Suggestions the triage rule accepted that still stand (``triage.settled_by_rule``)."""
        return settled_by_rule(self.document, self.history)

    def settle(self, policy: TriagePolicy) -> Step | None:
        """Apply ``policy`` as one undoable decision of the rule: what an earlier rule settled goes
        back to pending (unless a person has decided it since), then the gaps ``policy`` settles
        are accepted. Everything else waits in the queue."""
        self.policy = policy
        if self.learns and (not (style := self.style()).neutral or self._other_files()[1]):  # or capitals
            return self._reread(alone=commands.SETTLE_NAME, style=style)  # re-settles as it re-reads
        _, reopen = reopening(self.document.suggestions, self.settled_by_rule())
        trial = pending_again(self.document.suggestions, set(reopen))
        accept = sorted(triage(trial, policy, self.has_reference).accepted)
        return self._do(Settle(tuple(reopen), tuple(accept)), by=Decider.RULE)

    def queue(self, settled: set[int] | None = None) -> list[ReviewRow]:
        """The gaps for a person, in the order to review them (``app.core.triage.review_queue``);
        ``settled``: ``settled_by_rule()`` when the caller has it already."""
        return review_queue(self.document.suggestions, self.settled_by_rule() if settled is None else settled)

    def gaps(self) -> list[ReviewRow]:
        """Every gap with a proposal, in reading order."""
        return proposed_gaps(self.document.suggestions)

    def gap_of(self, suggestion_id: int) -> ReviewRow:
        """The review row a suggestion belongs to."""
        try:
            word = self.document.suggestion(suggestion_id).gap
        except KeyError:
            raise ReviewError(f"no suggestion {suggestion_id}") from None
        # Its row holds the marks of one gap and the capitals after it: rows are made of the
        # suggestions beside it alone (a long call holds tens of thousands).
        near = [s for s in self.document.suggestions if word - 1 <= s.gap <= word + 1]
        for gap in gaps_of(near):
            if any(s.id == suggestion_id for s in gap.suggestions):
                return gap
        raise ReviewError(f"no suggestion {suggestion_id} among the marks")

    def measures(self) -> list[GapMeasure]:
        """What the last analysis measured at each word's gap (read from the project once)."""
        if self._measures is None:
            self._measures = self.project.gap_measures(self.file_id) or []
        return self._measures

    def gap_measure(self, word: int) -> GapMeasure | None:
        """What the analysis measured at the gap after ``word``, if it did."""
        measures = self.measures()
        return measures[word] if word < len(measures) else None

    def word_times(self) -> list[tuple[int, int]]:
        """When each word is said (ms), where the analysis heard it or the captions give it."""
        return [times for times in heard_times(self.measures()) or [] if times is not None]

    def review_order(self) -> list[Suggestion]:
        """The reference's and the model's suggestions in reading order."""
        suggestions = [s for s in self.document.suggestions if s.source is not Source.EDITOR]
        return sorted(suggestions, key=lambda s: (s.gap, s.casing is not None, s.id))

    # --- analysis ---------------------------------------------------------------------------

    def analysis_request(self, audio: AudioUse = DEFAULT_AUDIO_USE) -> AnalysisRequest:
        """What ``analyse`` needs, read here so the worker never touches the project. Media that has
        gone missing is left out (the editor offers to find it); batch reports it as a failure."""
        request = AnalysisRequest.from_project(self.project, self.file_id, audio)
        if request.media is not None and not request.media.is_file():
            request = dataclasses.replace(request, media=None)
        return request

    def store_analysis(self, analysis: Analysis) -> None:
        """Keep the suggestions (replacing earlier ones) and show them in the document.

        On a file with no suggestions and no decisions yet (the usual first analysis) they are
        added in place; otherwise the document is reloaded, its decisions carried to their gaps
        (``carried`` says how many were kept and dropped).
        """
        self.carried = None
        decided = next(self.project.decisions(self.file_id), None) is not None
        if decided:
            # Decisions name suggestions by number, and a new analysis numbers its own afresh: they
            # are carried to their gaps instead.
            self.carried = store_again(self.project, self.file_id, analysis.results())
        else:
            self.project.store_results(self.file_id, analysis.results())
        self._measures = None
        self._readings = None
        self._fitted = None
        if not self.document.suggestions and not decided:
            # As a reloaded document has it, so that the style reads the gaps the same way.
            self.document.language = self.project.language(self.file_id)
            self.document.add_suggestions(list(analysis.suggestions))
        else:
            self.reload()

    def reload(self) -> None:
        """Show what the project file holds: after a step that stopped half way, the document in
        memory may lack what the file took."""
        self.document, self.history = load_document(self.project, self.file_id)
        self._fitted = None

    def relink_media(self, media: Path) -> None:
        self.project.relink_media(self.file_id, media)

    def add_reference(self, reference: Path) -> dict[str, Any]:
        """Carry over a reference opened after the captions, its marks numbered after every
        suggestion already there; earlier decisions stay as they are."""
        from app.services.transfer import propose_from_reference, read_reference

        document = copy.deepcopy(self.document)
        report = propose_from_reference(document, read_reference(reference), self.entry.language or "en")
        known = {s.id for s in self.document.suggestions}
        self.project.set_reference(self.file_id, reference)
        self.project.add_suggestions(self.file_id, [s for s in document.suggestions if s.id not in known])
        self.reload()
        return report

    # --- decisions: each recorded, then applied, before returning -----------------------------
    # Recording first: a decision the project file could not take is not shown as made.

    def _do(self, decision: Decision, by: Decider = Decider.PERSON) -> Step | None:
        step = step_of(self.document, decision)
        if step is None or not step.edits:
            return None
        row = self.project.record(self.file_id, *encode(decision), by)
        step = dataclasses.replace(step, by=by, row=row)
        self.history.do(step)
        self._checked()
        if by is Decider.PERSON and not isinstance(decision, RecutCues):
            self._reread()  # every answer says what is right in this file: read the rest again
        return step

    def accept(self, suggestion_id: int) -> Step | None:
        return self._do(Accept(suggestion_id))

    def recut_preview(self) -> tuple[Document, Document, RecutReport]:
        """The document as export writes it now and as it would after ``recut`` (capitals in),
        and what the re-cut does to the cuts' checks."""
        now = as_exported(self.document, self.language)
        recut, told = recut_captions(now, self.measures(), self.language, self.limits)
        return now, recut, told

    def recut(self) -> Step | None:
        """Cut the cues again at sentence ends within ``limits``, by the words' times as heard
        (estimated from the cues where the media was not heard): one undoable decision, recorded
        as the cues it made."""
        recut, _ = recut_captions(self.document, self.measures(), self.language, self.limits)
        return self._do(RecutCues(cut=cut_of(self.document.cues, recut.cues)))

    @property
    def cues_recut(self) -> bool:
        """Whether the cues stand cut again (a re-cut applied and not undone): export writes them so."""
        return any(isinstance(edit, CueEdit) for step in self.history.done for edit in step.edits)

    def reject(self, suggestion_id: int) -> Step | None:
        return self._do(Reject(suggestion_id))

    def change_mark(self, suggestion_id: int, mark: str) -> Step | None:
        return self._do(ChangeMark(suggestion_id, mark))

    def set_mark(self, word: int, mark: str) -> Step | None:
        return self._do(SetMark(word, mark))

    def edit_word(self, word: int, text: str) -> Step | None:
        return self._do(EditWord(word, text))

    def accept_gap(self, suggestion_id: int) -> Step | None:
        """Accept a proposal and, for a sentence mark, the capital it calls for after it (the
        reference's before the model's), as one decision."""
        chosen = self.document.suggestion(suggestion_id)
        ids = [chosen.id]
        if chosen.casing is None and model_class(chosen.mark) in SENTENCE_END_CLASSES:
            capitals = [s for s in self.gap_of(suggestion_id).capitals if s.status is Status.PENDING]
            if capitals:
                ids.append(max(capitals, key=lambda s: (s.source is Source.REFERENCE, s.confidence)).id)
        if len(ids) == 1:
            return self.accept(chosen.id)
        return self._do(AcceptMany(tuple(ids)))

    def reject_gap(self, suggestion_id: int) -> Step | None:
        """Turn down a proposal and every other one the reference and the model made for its gap:
        no mark there, and no capital after it."""
        gap = self.gap_of(suggestion_id)
        ids = [suggestion_id] + [
            s.id
            for s in gap.suggestions
            if s.status is not Status.REJECTED and s.source is not Source.EDITOR and s.id != suggestion_id
        ]
        return self._do(RejectMany(tuple(ids)))

    def accept_above(self, threshold: float) -> Step | None:
        """Accept what ``commands.accept_confident`` settles at ``threshold``: per gap, the surest
        pending suggestion at least that sure, the reference's first."""
        policy = commands.ApplyPolicy(commands.Apply.CONFIDENT, threshold)
        return self._do(AcceptMany(tuple(commands.accept_confident(self.document.suggestions, policy))))

    def undo(self) -> Step | None:
        if self.history.undo_description is None:
            return None
        self.project.record(self.file_id, *encode(Undo()))
        self._unchecked += 1
        return self.history.undo()

    def redo(self) -> Step | None:
        if self.history.redo_description is None:
            return None
        self.project.record(self.file_id, *encode(Redo()))
        self._unchecked += 1
        return self.history.redo()

    def _checked(self) -> None:
        """Count one more decision recorded; every ``CHECKPOINT_EVERY``, take a checkpoint."""
        self._unchecked += 1
        if self._unchecked >= CHECKPOINT_EVERY:
            save_checkpoint(self.project, self.file_id, self.document, self.history, self.undo_kept)
            self._unchecked = 0

    # --- export -----------------------------------------------------------------------------

    def export(
        self,
        target: Path,
        format: str | None = None,
        replace_source: bool = False,
        rebreak: bool = False,
        recut: bool = False,
    ) -> Exported:
        """Write the captions as reviewed: timings untouched, marks applied, sentence starts (and the
        words the language always capitalises) capitalised; ``rebreak``: lines laid out again;
        ``recut``: cues cut again at sentence ends, timed by the words as heard."""
        from app.services.captions_export import ExportOptions, export_captions

        options = ExportOptions(format, replace_source, rebreak=rebreak, recut=recut, limits=self.limits)
        return export_captions(
            self.document, target, self.language, options, self.measures() if recut else None
        )
