"""Opening a reviewed file again from its checkpoint: the review as it was, its last decisions
undoable one by one, and a checkpoint that no longer fits passed over."""

from __future__ import annotations

from pathlib import Path

from app.core.model import Source, Status
from app.services.batch import project_status
from app.services.review import ReviewSession
from app.store.project import Project
from tests.test_house_style import analysed

#: Fewer than a session keeps undoable by default, for a test that undoes all of them.
UNDO_KEPT = 12
DECISIONS = UNDO_KEPT + 8


def _review(session: ReviewSession, decisions: int) -> list[tuple[object, ...]]:
    """``decisions`` answers on the first pending mark (every third turned down); what the person
    saw before each and after the last."""
    session.undo_kept = UNDO_KEPT
    seen = []
    for turn in range(decisions):
        pending = [
            s
            for s in session.document.suggestions
            if s.source is Source.MODEL and s.casing is None and s.status is Status.PENDING
        ]
        assert pending, "nothing left to decide"
        first = min(pending, key=lambda s: s.gap)
        seen.append(session.document.state())
        step = session.reject_gap(first.id) if turn % 3 == 2 else session.accept_gap(first.id)
        assert step is not None
    seen.append(session.document.state())
    return seen


def test_a_long_review_reopens_as_it_was_and_undoes_its_last_decisions(sample: Path) -> None:
    session = analysed(sample / "sample.srt")
    project = session.project.path
    seen = _review(session, DECISIONS)
    session.close()

    again = ReviewSession.open_project(project)
    try:
        assert again.document.state() == seen[-1]
        assert again.restored_decisions > DECISIONS  # each answer, and the re-reading after it
        # Opened from a checkpoint: only the decisions after it are replayed.
        assert again.history.begins_after > 0
        assert sum(1 for _ in again.project.decisions(again.file_id, after=again.history.begins_after)) < (
            again.restored_decisions
        )
        for back in range(1, UNDO_KEPT + 1):
            assert again.undo() is not None
            assert again.document.state() == seen[-1 - back], f"undo {back} does not restore what was seen"
        for back in range(UNDO_KEPT, 0, -1):
            assert again.redo() is not None
            assert again.document.state() == seen[-back]
    finally:
        again.close()


def test_decisions_undone_before_closing_can_be_redone_after(sample: Path) -> None:
    session = analysed(sample / "sample.srt")
    project = session.project.path
    seen = _review(session, DECISIONS)
    for _ in range(5):
        assert session.undo() is not None
    assert session.document.state() == seen[-6]
    session.close()

    again = ReviewSession.open_project(project)
    try:
        assert again.document.state() == seen[-6]
        for back in range(5, 0, -1):
            assert again.redo() is not None
            assert again.document.state() == seen[-back]
    finally:
        again.close()


def test_a_damaged_or_outdated_checkpoint_is_passed_over(sample: Path) -> None:
    session = analysed(sample / "sample.srt")
    project = session.project.path
    seen = _review(session, DECISIONS)
    file_id = session.file_id
    session.close()
    with Project(project) as opened:
        counts = project_status(opened).files[0]
        opened.db.execute("UPDATE checkpoints SET state = ? WHERE file_id = ?", [b"{garbage", file_id])
    again = ReviewSession.open_project(project)
    try:
        assert again.history.begins_after == 0  # every decision replayed, as without one
        assert again.document.state() == seen[-1]
        assert project_status(again.project).files[0] == counts
        again.undo()
        again.undo_kept = UNDO_KEPT
        again.close()
        again = ReviewSession.open_project(project)  # a new checkpoint, taken at closing
        assert again.history.begins_after > 0
        assert again.document.state() == seen[-2]
        # A reference added later adds suggestions: the checkpoint made without them is dropped.
        again.add_reference(sample / "reference.txt")
        assert again.project.checkpoint(file_id) is None
    finally:
        again.close()


def test_a_new_analysis_carries_the_same_decisions_from_a_checkpoint_as_from_every_decision(
    sample: Path, tmp_path: Path
) -> None:
    """Decisions taken before a file's checkpoint are carried to a new analysis (the heard pass, a
    re-analysis) to the same gaps, by the same deciders, in the same order, as when every decision
    is replayed."""
    import shutil

    from app.services.analysis import AudioUse, analyse
    from app.services.model import Punctuator

    (sample / "reference.txt").unlink()  # the model alone: triage settles capitals by itself
    session = analysed(sample / "sample.srt")
    analysis = analyse(session.analysis_request(AudioUse.TEXT), Punctuator())
    _review(session, 15)
    session.undo_kept = 5  # the rule's capitals fall before the checkpoint
    project = session.project.path
    session.close()
    replayed = tmp_path / "replayed.punctum"
    shutil.copy(project, replayed)
    with Project(replayed) as copy:
        copy.db.execute("DELETE FROM checkpoints")
    outcomes = []
    for path in (project, replayed):
        again = ReviewSession.open_project(path)
        try:
            assert (again.history.begins_after > 0) == (path == project)
            again.store_analysis(analysis)
            assert again.carried is not None and again.carried.kept > 0
            carried = [(r.action, r.arguments, r.by) for r in again.project.decisions(again.file_id)]
            outcomes.append((again.document.state(), carried, again.decided_by_you()))
        finally:
            again.close()
    assert outcomes[0] == outcomes[1]
