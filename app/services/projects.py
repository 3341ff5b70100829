"""Caption files in a project: added (read and parsed here; the store keeps bytes and rows),
added again as a new version when they changed on disk, and loaded back as documents with their
decisions replayed."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.align.alignment import align
from app.core import commands
from app.core.decisions import (
    Accept,
    Decision,
    DecisionError,
    EditWord,
    Reject,
    Restyle,
    SetMark,
    Settle,
    decode,
    encode,
    replay,
)
from app.core.history import CueEdit, Decider, History, Step, WordEdit
from app.core.model import Casing, Cue, Document, Source, Status, Suggestion
from app.core.recut_cues import cut_of
from app.core.triage import about_wrong, gaps_settled, gaps_to_review, settled_by_rule
from app.formats import FormatError, format_of, parse_document, read_bytes
from app.services.checkpoints import start_from
from app.services.folder_pairing import FileGroup
from app.store.checkpoints import Checkpoint
from app.store.files import CaptionsRead
from app.store.processing import FileResults
from app.store.project import Project, ProjectError


def add_caption_file(project: Project, group: FileGroup, read: CaptionsRead | None = None) -> int:
    """Add a caption file with the files that go with it (``group``) to the project, its captions
    read and parsed here unless the caller has ``read`` them; unreadable captions are a
    ``FormatError`` and nothing is added."""
    if read is None:
        read = _read_captions(Path(group.captions))
    return project.add_file(
        group.stem, group.captions, group.media, group.reference, group.language, group.timings, read=read
    )


def _read_captions(captions: Path) -> CaptionsRead:
    """``captions`` read and parsed, with the time they were last changed."""
    # Taken before reading, so a change made while it is read shows later (read by the caller,
    # the time is unknown, and the captions are compared by their hash).
    mtime = _mtime(captions)
    data = read_bytes(captions)
    return CaptionsRead(data, parse_document(data, format_of(captions), captions), mtime)


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


@dataclass(frozen=True)
class Reimport:
    """Changed captions added again: the new version, and the earlier decisions that carry over
    (the words on both sides of their gap unchanged) and that do not."""

    version: int
    kept: int
    dropped: int
    #: What became of a re-cut of the cues in effect: "kept" (the words and cues are the same),
    #: "dropped" (they changed: the recorded cut no longer fits), or None (there was none).
    recut: str | None = None

    def told(self, why_dropped: str = "") -> str:
        """The decisions kept and dropped (``why_dropped`` after the count), and the re-cut's fate."""
        decided = self.kept + self.dropped
        kept = f"{self.kept} of {decided} decisions kept" if decided else "no decisions to keep"
        lost = f", {self.dropped} dropped{why_dropped}" if self.dropped else ""
        recut = {
            "kept": "; the cues' re-cut kept",
            "dropped": "; the cues' re-cut not kept (their words changed)",
        }
        return f"{kept}{lost}{recut.get(self.recut or '', '')}"


def reimport_caption_file(project: Project, file_id: int, captions: Path) -> Reimport:
    """Add captions that changed on disk as a new version of the file (to be processed again);
    each decision of the old version is replayed on the new one when it has its suggestions
    (``carried_decisions``) where the words on both sides of its gap are unchanged. Unreadable
    captions are a ``FormatError`` and the project is left as it was."""
    read = _read_captions(captions)
    carried, dropped, recut = _carried_to(project, file_id, read.document)
    version = project.new_version(file_id, captions, read, carried)
    return Reimport(version, len(carried) - (recut == "kept"), dropped, recut)


def reanalyse_file(project: Project, file_id: int) -> Reimport:
    """Make the file, done before, to be analysed again on the captions it holds (its media is heard
    only now): a new version, the old one kept aside, its decisions carried over as
    ``reimport_caption_file`` carries them (``carried_decisions`` replays them on the new
    suggestions)."""
    document = _stored_document(project, file_id)
    carried, dropped, recut = _carried_to(project, file_id, document)
    return Reimport(project.analyse_again(file_id, carried), len(carried) - (recut == "kept"), dropped, recut)


@dataclass(frozen=True)
class _OldVersion:
    """The version a new one replaces: its captions as added, and as decided with their history."""

    original: Document
    decided: Document
    history: History


def _old_version(project: Project, file_id: int) -> _OldVersion | None:
    """The file's current version, read once for what carries over from it; None where its captions
    could not be read when added (nothing was decided on them) or it no longer reads."""
    data, format, path = project.stored_captions(file_id)
    if not data:
        return None
    try:
        original = parse_document(data, format, path)
        decided, history = load_document(project, file_id)
    except (FormatError, ProjectError):
        return None
    return _OldVersion(original, decided, history)


def _carried_to(
    project: Project, file_id: int, new: Document
) -> tuple[list[dict[str, Any]], int, str | None]:
    """What of the old version carries to ``new``: its decisions as outcomes (``_carry_over``), how
    many could not be placed, and what became of a re-cut (``_recut_carried``)."""
    old = _old_version(project, file_id)
    if old is None:
        return [], 0, None
    carried, dropped = _carry_over(project, file_id, old, new)
    return carried, dropped, _recut_carried(old, new, carried)


def _recut_carried(old: _OldVersion, new: Document, carried: list[dict[str, Any]]) -> str | None:
    """A re-cut of the old version's cues in effect, carried (appended to ``carried``) where the
    new captions have the same words in the same cues at the same times: "kept"; "dropped" where
    they do not (the recorded cut no longer fits them); None where there is none."""
    if not any(isinstance(e, CueEdit) for step in old.history.done for e in step.edits):
        return None
    if [_cue_words(cue) for cue in new.cues] != [_cue_words(cue) for cue in old.original.cues]:
        return "dropped"
    cut = cut_of(old.original.cues, old.decided.cues)
    carried.append({"gap": 0, "cut": [[c.words, c.start, c.end, list(c.lines)] for c in cut]})
    return "kept"


def _row_of(step: Step) -> int:
    """Where a step comes in the order decisions were taken: its decision row (-1: none)."""
    return step.row if step.row is not None else -1


def _cue_words(cue: Cue) -> tuple[object, ...]:
    return cue.start, cue.end, tuple(word.text for word in cue.words)


def _carry_over(
    project: Project, file_id: int, old: _OldVersion, new: Document
) -> tuple[list[dict[str, Any]], int]:
    """The old version's decisions as outcomes per gap of ``new``: suggestions accepted or turned
    down, the editor's own marks and corrected words; and how many could not be placed."""
    original, decided = old.original, old.decided
    old_words = [w.text for w in original.words()]
    new_words = [w.text for w in new.words()]
    alignment = align(old_words, new_words)

    def moved(gap: int) -> int | None:
        """Where the gap after old word ``gap`` is now, if the words on both sides of it are."""
        target = alignment.hyp_to_ref[gap]
        if target < 0 or not alignment.exact[target]:
            return None
        if gap + 1 < len(old_words):
            after = alignment.hyp_to_ref[gap + 1]
            return target if after == target + 1 and alignment.exact[after] else None
        return target if target == len(new_words) - 1 else None

    outcomes: list[tuple[int, dict[str, Any]]] = []  # with the place in the history of its step
    dropped = 0

    def carry(old_gap: int, outcome: dict[str, Any], when: int = -1) -> None:
        """Keep ``outcome`` at the gap's new place, or count it dropped when its words changed."""
        nonlocal dropped
        gap = moved(old_gap)
        if gap is None:
            dropped += 1
        else:
            outcomes.append((when, {**outcome, "gap": gap}))

    # Decisions carried to this version and not replayed yet (it was never processed) go on.
    for outcome in project.carried(file_id):
        carry(int(outcome["gap"]), outcome)
    last = old.history.last_changes()

    def decided_when(suggestion: Suggestion) -> tuple[int, str]:
        """The decision row the suggestion was last decided in (-1: not known), and by whom."""
        step = last.get(suggestion.id)
        return (-1, Decider.PERSON.value) if step is None else (_row_of(step), step.by.value)

    editor_marks: dict[int, Suggestion] = {}
    for suggestion in decided.suggestions:
        if suggestion.status is Status.PENDING:
            continue
        if suggestion.source is Source.EDITOR:
            if suggestion.status is Status.ACCEPTED:  # the latest of the editor's marks for the gap
                editor_marks[suggestion.gap] = suggestion
            continue
        when, by = decided_when(suggestion)
        outcome = {
            "mark": suggestion.mark,
            "casing": suggestion.casing.value if suggestion.casing else None,
            "status": suggestion.status.value,
            "by": by,
        }
        carry(suggestion.gap, outcome, when)
    for old_gap, suggestion in sorted(editor_marks.items()):
        when, by = decided_when(suggestion)
        carry(old_gap, {"set_mark": suggestion.mark, "by": by}, when)
    edited = {
        edit.index: _row_of(step)
        for step in old.history.done
        for edit in step.edits
        if isinstance(edit, WordEdit)
    }
    # A capital accepted before the file's checkpoint has no step in the history: its casing
    # suggestion's last decision says when it was taken.
    capitals = {
        s.gap: _row_of(last[s.id]) for s in decided.suggestions if s.casing is not None and s.id in last
    }
    for index, (before, after) in enumerate(zip(original.words(), decided.words(), strict=True)):
        if before.text != after.text:
            carry(index, {"text": after.text}, edited.get(index, capitals.get(index, -1)))
    # In the order they were taken, so that undo takes back the last first, as it did.
    return [outcome for _, outcome in sorted(outcomes, key=lambda pair: pair[0])], dropped


def store_again(project: Project, file_id: int, results: FileResults) -> Reimport:
    """A new analysis of a file someone has decided in (the heard pass after the text's, while the
    person answered): as a re-analysis, a new version whose suggestions are ``results``', each
    decision carried to its gap (never by the suggestion's number, which the new analysis gives
    afresh), kept by whoever took it. One transaction: all of it, or none."""
    with project.transaction():
        told = reanalyse_file(project, file_id)
        carried, _ = carried_decisions(project, file_id, results.suggestions)
        project.finish(file_id, project.start_job(file_id), results, [(*encode(d), by) for d, by in carried])
    return told


def carried_decisions(
    project: Project, file_id: int, suggestions: list[Suggestion]
) -> tuple[list[tuple[Decision, Decider]], list[Suggestion]]:
    """The decisions ``reimport_caption_file`` carried over, as decisions on the new version's
    ``suggestions`` with who took them (a suggestion with the same mark or casing in the same gap
    is accepted or turned down again; a mark accepted before that none proposes now is set as the
    editor's; what the rule settled is settled by it again), and the suggestions with the statuses
    they leave, for the batch's own rule to settle the rest."""
    carried = project.carried(file_id)
    if not carried:
        return [], suggestions
    document, history = load_document(project, file_id)
    document.add_suggestions(list(suggestions))
    decisions: list[tuple[Decision, Decider]] = []
    settled: list[int] = []  # the rule's settlement, carried as one

    def do(decision: Decision, by: Decider = Decider.PERSON) -> None:
        """Replay one decision; kept only when it changes something (the history drops the rest)."""
        before = document.changes_since_save
        with contextlib.suppress(commands.EditError, IndexError):
            replay(document, history, decision, by)
        if document.changes_since_save != before:
            decisions.append((decision, by))

    for outcome in carried:
        gap = int(outcome["gap"])
        # Outcomes carried by an older version do not say who decided: a person, as they were read.
        by = Decider(outcome.get("by", Decider.PERSON))
        if "cut" in outcome:
            do(decode("recut", {"cut": outcome["cut"]}))
        elif "text" in outcome:
            do(EditWord(gap, str(outcome["text"])))
        elif "set_mark" in outcome:
            do(SetMark(gap, str(outcome["set_mark"])), by)
        else:
            casing = Casing(outcome["casing"]) if outcome.get("casing") else None
            match = next(
                (
                    s
                    for s in document.suggestions
                    if s.gap == gap
                    and s.status is Status.PENDING
                    and s.source is not Source.EDITOR
                    and s.casing == casing
                    and (casing is not None or s.mark == outcome["mark"])
                ),
                None,
            )
            accepted = outcome["status"] == Status.ACCEPTED.value
            if by is Decider.RULE:  # the rule's settlement, settled again (or left to settle anew)
                if match is not None and accepted:
                    settled.append(match.id)
            elif match is not None:
                do(Accept(match.id) if accepted else Reject(match.id), by)
            elif accepted and casing is None:
                do(SetMark(gap, str(outcome["mark"])), by)
    if settled:
        do(Settle((), tuple(settled)), Decider.RULE)
    return decisions, list(document.suggestions)


#: What ``status``, ``export`` and the editor say of a file an earlier Punctum re-cut without
#: recording the cues (``Project.has_unrecorded_recut``).
UNRECORDED_RECUT_WARNING = (
    "re-cut by an earlier Punctum, which did not record the cues: they are cut again by today's"
    " rules and may differ from the ones approved; check them before exporting"
)


def load_document(project: Project, file_id: int) -> tuple[Document, History]:
    """The file's document as it stands: the captions as added, their suggestions, and the
    decisions replayed through the editor's own commands (so undo works as it did), from the
    file's checkpoint on where it has one (``services.checkpoints``)."""
    checkpoint = project.checkpoint(file_id)
    if checkpoint is not None:
        try:
            return _replayed(project, file_id, checkpoint)
        except _CheckpointMismatchError:
            pass  # a checkpoint the decisions after it do not follow from: replay them all
    return _replayed(project, file_id, None)


class _CheckpointMismatchError(Exception):
    """The decisions after a checkpoint undo or redo what the history started from it lacks."""


def _replayed(project: Project, file_id: int, checkpoint: Checkpoint | None) -> tuple[Document, History]:
    document = _stored_document(project, file_id)
    document.language = project.language(file_id)
    history = History(document)
    if checkpoint is None:
        document.add_suggestions(project.suggestions(file_id))
    else:
        start_from(document, history, checkpoint)
    for row, action, arguments, by in project.decisions(file_id, after=history.begins_after):
        try:
            decision = decode(action, arguments)
        except DecisionError as error:  # a row this version cannot read: the project's problem
            raise ProjectError(
                f"{project.path}: a recorded decision of file {_name(project, file_id)} cannot be read ({error})"
            ) from None
        steps = history.step_counts
        try:
            replay(document, history, decision, _replayed_by(decision, by), row)
        except (KeyError, IndexError, commands.EditError) as error:  # a damaged row: the project's
            if checkpoint is not None:
                raise _CheckpointMismatchError from None
            raise ProjectError(
                f"{project.path}: a recorded {action} does not fit file {_name(project, file_id)} ({error})"
            ) from None
        if checkpoint is not None and history.step_counts == steps:
            raise _CheckpointMismatchError  # every recorded decision changed something when it was taken
    document.changes_since_save = 0
    return document, history


def _replayed_by(decision: Decision, by: Decider) -> Decider:
    """Who a recorded decision is replayed as: the rule's own are its settlements and re-readings;
    an accept or a mark recorded as the rule's is a decision an older version carried over from a
    version before, without saying whose, and was a person's as far as anyone can tell."""
    if by is Decider.RULE and not isinstance(decision, Settle | Restyle):
        return Decider.PERSON
    return by


def _stored_document(project: Project, file_id: int) -> Document:
    """The captions as they were added; a ``ProjectError`` where they no longer parse."""
    data, format, path = project.stored_captions(file_id)
    try:
        return parse_document(data, format, path)
    except FormatError as error:
        raise ProjectError(
            f"{project.path}: the stored captions of file {_name(project, file_id)} cannot be read ({error})"
        ) from None


def _name(project: Project, file_id: int) -> str:
    """The file as ``punctum status`` names it, quoted, for a message."""
    return repr(project.file(file_id).stem)


def status_counts(
    document: Document, history: History, standing: set[int] | None = None
) -> tuple[dict[str, int], float]:
    """Suggestions of a file (its ``load_document``) by status, as the decisions leave them, and the
    gaps still to review (``"gaps"``: a gap's candidates, from the reference and the model, count
    once) and those the triage rule settled that still stand (``"settled"``; ``standing``: their
    suggestions, when the caller has them); with about how many of these may be wrong."""
    if standing is None:
        standing = settled_by_rule(document, history)
    counts = {
        **document.status_counts(),
        "gaps": gaps_to_review(document.suggestions),
        "settled": gaps_settled(document.suggestions, standing),
    }
    return counts, about_wrong(document.suggestions, standing)
