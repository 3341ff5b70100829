"""The review session the editor runs on: decisions saved as made, autosave, project copies."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core.model import Source, Status
from app.formats import FormatError
from app.services.autosave import autosave_path
from app.services.review import ReviewSession
from app.services.waveform import Waveform
from tests.conftest import SAMPLE, requires_ffmpeg


def test_decisions_are_kept_in_the_autosave_and_come_back(sample: Path) -> None:
    session = ReviewSession.open(sample / "sample.srt")
    assert autosave_path(sample / "sample.srt").is_file()
    session.add_reference(sample / "reference.txt")
    ids = [s.id for s in session.review_order() if s.casing is None][:3]
    session.accept(ids[0])
    session.reject(ids[1])
    session.change_mark(ids[2], "?")
    session.undo()
    session.redo()
    marks = [w.mark for w in session.document.words()]
    session.close()  # as a crash would: nothing more is written

    again = ReviewSession.open(sample / "sample.srt")
    try:
        assert again.restored_decisions == 5
        assert again.document.suggestion(ids[0]).status is Status.ACCEPTED
        assert again.document.suggestion(ids[1]).status is Status.REJECTED
        assert [w.mark for w in again.document.words()] == marks
        assert "?" in marks
        assert again.history.undo_description == "Change mark to ?"  # undo goes on where it was
    finally:
        again.close()


def test_a_decision_the_project_cannot_save_is_not_shown_as_made(sample: Path) -> None:
    import sqlite3

    from app.store.project import ProjectError

    session = ReviewSession.open(sample / "sample.srt")
    session.add_reference(sample / "reference.txt")
    first, second = [s.id for s in session.review_order() if s.casing is None][:2]
    session.accept(first)
    session.project.db.execute("PRAGMA busy_timeout = 100")  # fail fast instead of waiting 30 s
    other = sqlite3.connect(str(session.project.path), isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another program holds the file
    try:
        with pytest.raises(ProjectError, match="could not be saved"):
            session.accept(second)
        with pytest.raises(ProjectError, match="could not be saved"):
            session.undo()
        assert session.document.suggestion(second).status is Status.PENDING
        assert session.document.suggestion(first).status is Status.ACCEPTED
    finally:
        other.execute("ROLLBACK")
        other.close()
    session.reject(second)
    session.close()
    again = ReviewSession.open(sample / "sample.srt")
    try:
        assert again.restored_decisions == 2  # the accept, and the reject made once the file was free
        assert again.document.suggestion(first).status is Status.ACCEPTED
        assert again.document.suggestion(second).status is Status.REJECTED
    finally:
        again.close()


def test_captions_changed_on_disk_start_afresh_and_keep_the_old_work(sample: Path) -> None:
    session = ReviewSession.open(sample / "sample.srt", reference=sample / "reference.txt")
    session.add_reference(sample / "reference.txt")
    session.accept(session.review_order()[0].id)
    session.close()
    captions = sample / "sample.srt"
    captions.write_text(captions.read_text().replace("hello", "hallo"))
    fresh = ReviewSession.open(captions)
    try:
        assert fresh.restored_decisions == 0
        assert fresh.document.word(0).text == "hallo"
        kept = list(autosave_path(captions).parent.glob("sample-*.punctum"))
        assert len(kept) == 2  # the earlier autosave is set aside, not deleted
    finally:
        fresh.close()


def test_unreadable_captions_are_refused_before_any_project_is_made(sample: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.vtt"
    broken.write_text("this is not WebVTT\n")
    with pytest.raises(FormatError):
        ReviewSession.open(broken)
    assert not autosave_path(broken).exists()


def test_save_as_copies_decisions_and_keeps_paths_working(sample: Path, tmp_path: Path) -> None:
    session = ReviewSession.open(sample / "sample.srt", sample / "sample.mp4")
    session.add_reference(sample / "reference.txt")
    first = session.review_order()[0].id
    session.accept(first)
    elsewhere = tmp_path / "projects" / "mine.punctum"
    elsewhere.parent.mkdir()
    copy = session.save_as(elsewhere)
    session.close()
    try:
        assert copy.document.suggestion(first).status is Status.ACCEPTED
        assert copy.entry.captions_path == (sample / "sample.srt").resolve()
        assert copy.entry.media_path == (sample / "sample.mp4").resolve()
        assert copy.entry.reference_path == (sample / "reference.txt").resolve()
        copy.reject(first)
    finally:
        copy.close()
    reopened = ReviewSession.open_project(elsewhere)
    try:
        assert reopened.document.suggestion(first).status is Status.REJECTED
    finally:
        reopened.close()


def test_accept_above_takes_the_surest_per_gap_and_export_capitalises(sample: Path) -> None:
    session = ReviewSession.open(sample / "sample.srt")
    try:
        session.add_reference(sample / "reference.txt")
        assert all(s.source is Source.REFERENCE for s in session.document.suggestions)
        step = session.accept_above(0.5)
        assert step is not None
        assert session.counts()["pending"] == 0
        out = sample / "out.vtt"
        session.export(out)
        text = out.read_text()
        assert text.startswith("WEBVTT")
        assert "Hello, and welcome to the Maple Street" in text
        with pytest.raises(FormatError.__mro__[1]):  # WriteError: never over the input unasked
            session.export(sample / "sample.srt")
    finally:
        session.close()


def test_export_gives_english_days_their_capitals_without_any_suggestion(sample: Path) -> None:
    session = ReviewSession.open(sample / "sample.srt")
    try:
        assert session.language == "en"  # not analysed yet: English unless told otherwise
        out = sample / "out.srt"
        session.export(out)
        text = out.read_text()
        assert "every Saturday" in text and "next Saturday" in text
        assert session.document.word(10).text == "saturday"  # the document itself is unchanged
    finally:
        session.close()


def test_waveform_levels_and_pauses() -> None:
    import numpy as np

    class Track:
        duration = 4.0
        energy_db = np.array([-80.0] * 100 + [0.0] * 100 + [-80.0] * 200, dtype=np.float32)
        speech = np.array([0.0] * 31 + [0.9] * 32 + [0.0] * 62, dtype=np.float32)

    waveform = Waveform.from_track(Track())
    levels = waveform.levels(0, 4000, 4)
    assert list(levels) == [0.0, 1.0, 0.0, 0.0]
    assert waveform.pauses[0][0] == 0.0 and waveform.pauses[-1][1] == pytest.approx(4.0, abs=0.05)


def test_timing_file_feeds_the_model_its_pauses(sample: Path) -> None:
    from app.services.analysis import analyse
    from app.services.model import Punctuator

    session = ReviewSession.open(sample / "sample.srt", timings=sample / "sample.words.json")
    try:
        analysis = analyse(session.analysis_request(), Punctuator())
        assert analysis.report.timings is not None and analysis.report.timings["aligned"] == 178
        model = [s for s in analysis.suggestions if s.source is Source.MODEL and s.casing is None]
        timed = [s for s in model if s.evidence == "timing"]
        assert len(timed) >= 0.9 * len(model)  # all but gaps with no next word to time against
    finally:
        session.close()


def test_a_first_version_project_is_upgraded_in_place(tmp_path: Path) -> None:
    import sqlite3

    from app.services.folder_pairing import FileGroup
    from app.services.projects import add_caption_file
    from app.store.project import SCHEMA_VERSION, Project
    from app.store.schema import MIGRATIONS

    path = tmp_path / "old.punctum"
    connection = sqlite3.connect(path)
    connection.executescript(MIGRATIONS[1] + "; PRAGMA user_version = 1;")
    connection.close()
    with Project(path) as project:
        group = FileGroup("sample", SAMPLE / "sample.srt", timings=SAMPLE / "sample.words.json")
        file_id = add_caption_file(project, group)
        assert project.file(file_id).timings_path == (SAMPLE / "sample.words.json").resolve()
        assert project.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert "cues" not in project.db.table_names()  # the captions' bytes are their one copy
        assert project.captions_bytes(file_id) == (SAMPLE / "sample.srt").read_bytes()


def test_a_decision_row_this_version_cannot_read_is_the_project_s_error(tmp_path: Path) -> None:
    import time

    from app.services.folder_pairing import FileGroup
    from app.services.projects import add_caption_file, load_document
    from app.store.project import Project, ProjectError

    with Project(tmp_path / "p.punctum", create=True) as project:
        file_id = add_caption_file(project, FileGroup("sample", SAMPLE / "sample.srt"))
        project.db.execute(
            "INSERT INTO decisions (file_id, action, arguments, decided_by, decided_at, version)"
            " VALUES (?, 'shrug', '{}', 'editor', ?, 1)",
            [file_id, time.time()],
        )
        # A ProjectError, which a re-import catches to carry nothing over rather than fail.
        with pytest.raises(
            ProjectError,
            match=r"p\.punctum: a recorded decision of file 'sample' cannot be read \(unknown action 'shrug'\)",
        ):
            load_document(project, file_id)


@requires_ffmpeg
def test_the_background_process_ends_by_itself_when_idle_and_at_once_when_cancelled() -> None:
    from app.services.worker_process import WorkerProcess

    worker = WorkerProcess()
    waveform = worker.read_audio(SAMPLE / "sample.mp4")
    assert waveform.duration > 50
    idle = worker._process
    worker.stop()
    # Returned on its own (exit 0), not killed: a killed child leaves its libraries' semaphores
    # behind and Python reports them as leaked when the editor closes.
    assert idle.exitcode == 0

    with pytest.raises(InterruptedError):
        worker.read_audio(SAMPLE / "sample.mp4", cancelled=lambda: True)
    assert worker._process is None  # the busy child was stopped, not waited for
    worker.stop()


def test_triage_settles_as_the_rule_and_a_new_policy_leaves_a_persons_decisions_alone(sample: Path) -> None:
    from app.core.triage import TriagePolicy
    from app.services.analysis import AudioUse, analyse
    from app.services.model import Punctuator

    session = ReviewSession.open(sample / "sample.srt", reference=sample / "reference.txt")
    session.store_analysis(analyse(session.analysis_request(AudioUse.TEXT), Punctuator()))
    session.settle(TriagePolicy())
    settled = session.settled_by_rule()
    assert settled and session.counts()["gaps"] == len([g for g in session.queue() if g.pending])
    overruled = session.gap_of(min(settled))  # a person turns down one gap the rule settled
    session.reject_gap(overruled.lead.id)
    session.settle(TriagePolicy(agreement=False))  # settles nothing: everything else reopens
    assert session.settled_by_rule() == set()
    for suggestion in session.document.suggestions:
        if suggestion.id in {s.id for s in overruled.suggestions}:
            assert suggestion.status is Status.REJECTED
        else:
            assert suggestion.status is Status.PENDING
    assert session.document.word(overruled.index).mark == ""
    statuses = {s.id: s.status for s in session.document.suggestions}
    decided_by = [row[0] for row in session.project.db.execute("SELECT decided_by FROM decisions")]
    # The person's answer re-reads the rest with the house style it taught (a step of the rule).
    assert decided_by == ["rule", "editor", "rule", "rule"]
    session.close()

    again = ReviewSession.open(sample / "sample.srt")
    try:
        assert {s.id: s.status for s in again.document.suggestions} == statuses
        assert again.history.undo_description == "Settle by triage"
    finally:
        again.close()


@requires_ffmpeg
def test_decisions_made_while_the_recogniser_listens_stay_on_their_gaps(sample: Path) -> None:
    """As the editor does: the text model's suggestions shown first, four decisions taken while the
    recogniser listens, then the heard pass stored over them. Each decision is still on its gap
    with its mark, no gap holds two of the model's marks, and undo takes them back."""
    from app.core.audio_use import AudioUse
    from app.services.analysis import analyse
    from app.services.model import Punctuator

    session = ReviewSession.open(sample / "sample.srt", media=sample / "sample.mp4")
    try:
        first, second = session.analysis_request(AudioUse.LISTEN).passes()
        punctuator = Punctuator()
        shown = analyse(first, punctuator)
        session.store_analysis(shown)
        marks = sorted(
            (s for s in session.document.suggestions if s.source is Source.MODEL and s.casing is None),
            key=lambda s: s.gap,
        )
        assert len(marks) >= 8
        accepted, rejected, changed = marks[1], marks[3], marks[5]
        session.accept(accepted.id)
        session.reject_gap(rejected.id)
        session.change_mark(changed.id, "?" if changed.mark != "?" else ".")
        unmarked = next(
            g for g in range(10, 200) if not any(s.gap == g for s in session.document.suggestions)
        )
        session.set_mark(unmarked, ":")
        wanted = {
            g: session.document.word(g).mark for g in (accepted.gap, rejected.gap, changed.gap, unmarked)
        }
        session.store_analysis(analyse(second, punctuator, reading=shown.reading))
        assert session.carried is not None and session.carried.dropped == 0
        for document in (session.document, ReviewSession.open_project(session.project.path).document):
            assert {g: document.word(g).mark for g in wanted} == wanted
        assert any(s.evidence == "heard" for s in session.document.suggestions)
        model_marks = [
            s.gap
            for s in session.document.suggestions
            if s.source is Source.MODEL and s.casing is None and s.status is not Status.REJECTED
        ]
        assert len(model_marks) == len(set(model_marks))
        assert session.document.suggestion(
            next(
                s.id
                for s in session.document.suggestions
                if s.gap == rejected.gap and s.source is Source.MODEL
            )
        ).status is Status.REJECTED or not any(
            s.gap == rejected.gap and s.source is Source.MODEL for s in session.document.suggestions
        )
        undone = []
        while any(session.document.word(g).mark for g in wanted) and len(undone) < 8:
            undone.append(session.undo())
        # Last first, as they were taken: the first decision (the accept) comes back last.
        assert undone[-1] is not None and undone[-1].description == "Accept suggestion"
        assert all(session.document.word(g).mark == "" for g in wanted)
    finally:
        session.close()
