"""The editor window, driven by the keyboard as an editor would (offscreen Qt, the real model)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PySide6.QtWidgets")

from PySide6.QtCore import QSettings, Qt

from app.core.model import Source, Status
from app.services.review import ReviewSession
from app.ui.models import PROBLEM_COLOUR, CueModel, GapModel
from app.ui.window import MainWindow
from tests.conftest import FIXTURES, ROOT, SAMPLE, requires_ffmpeg

ANALYSIS_TIMEOUT = 240_000  # ms: the first analysis starts the model in a fresh process


@pytest.fixture
def window(qtbot, tmp_path: Path, sample: Path):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    # The recogniser listens only in the tests about listening (a few seconds a file).
    settings.setValue("model/audio", "timings")
    window = MainWindow(settings=settings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    yield window
    window.close()


def wait_for_open(qtbot, window: MainWindow) -> None:
    qtbot.waitUntil(lambda: window.cue_model is not None, timeout=30_000)


def wait_for_error(qtbot, window: MainWindow) -> str:
    qtbot.waitUntil(lambda: window.last_error is not None, timeout=30_000)
    return str(window.last_error)


def wait_for_suggestions(qtbot, window: MainWindow) -> None:
    qtbot.waitUntil(
        lambda: window.session is not None and window.session.analysed and not window.worker.busy,
        timeout=ANALYSIS_TIMEOUT,
    )
    assert window.last_error is None, window.last_error


def press(qtbot, window: MainWindow, key: Qt.Key, modifiers=Qt.KeyboardModifier.NoModifier) -> None:
    qtbot.keyClick(window, key, modifiers)


def test_review_the_sample_by_keyboard_and_export(qtbot, window: MainWindow, sample: Path) -> None:
    assert window.files.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    session = window.session
    assert session is not None
    sources = {s.source for s in session.document.suggestions}
    assert {Source.REFERENCE, Source.MODEL} <= sources
    # The list is the triage queue, one row per gap; the rest was settled by the rule.
    queue = session.queue()
    assert window.gap_view.model().rowCount() == len(queue) < len(session.gaps())
    assert f"{sum(g.pending for g in queue)} gaps to review" in window.counts_label.text()

    # Accept: the first suggestion in reading order is current; A writes its mark.
    first = window.current_id
    assert first is not None
    proposal = session.document.suggestion(first)
    press(qtbot, window, Qt.Key.Key_A)
    assert session.document.suggestion(first).status is Status.ACCEPTED
    if proposal.casing is None:
        assert session.document.word(proposal.gap).mark == proposal.mark
    assert window.current_id != first  # moved on to the next pending one

    # Reject: X turns it down and nothing is written.
    second = window.current_id
    assert second is not None
    mark_before = session.document.word(session.document.suggestion(second).gap).mark
    press(qtbot, window, Qt.Key.Key_X)
    assert session.document.suggestion(second).status is Status.REJECTED
    assert session.document.word(session.document.suggestion(second).gap).mark == mark_before

    # Change: "?" puts a question mark where the suggestion proposed something else.
    while session.document.suggestion(window.current_id).casing is not None:
        press(qtbot, window, Qt.Key.Key_J)
    third = window.current_id
    gap = session.document.suggestion(third).gap
    press(qtbot, window, Qt.Key.Key_Question)
    assert session.document.word(gap).mark == "?"
    assert session.document.suggestion(third).status is Status.REJECTED
    assert window.actions_by_name["undo"].text().replace("&", "") == "Undo Change mark to ?"
    counts_after_change = window.counts_label.text()

    # Undo and redo by keyboard.
    press(qtbot, window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert session.document.word(gap).mark == ""
    assert session.document.suggestion(third).status is Status.PENDING
    assert window.current_id == third  # undo shows what it undid
    press(
        qtbot, window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    )
    assert session.document.word(gap).mark == "?"
    # The counts follow the document through undo and redo, in gaps: the accepted one and the
    # rejected one at least are decided (after "?" the model's own proposal there still waits).
    assert window.counts_label.text() == counts_after_change
    decided = re.search(r"(\d+) decided by you", window.counts_label.text())
    assert decided is not None and int(decided[1]) >= 2

    # Export: timings exactly as they were, the decided marks in, sentences capitalised.
    out = sample / "reviewed.srt"
    assert window.files.export(out)
    original = (sample / "sample.srt").read_text().split("\n")
    exported = out.read_text().split("\n")
    assert [line for line in exported if "-->" in line] == [line for line in original if "-->" in line]
    assert exported[2].startswith("Hello")
    words = [w for w in " ".join(exported).split() if w.strip("?.,!:").isalpha()]
    assert any(word.endswith("?") for word in words)

    # Settings ▸ Re-break lines (off by default, kept): the same words and timings, lines laid out
    # again, and the status bar says what that did to the lines' checks.
    rebreak = window.actions_by_name["rebreak"]
    assert rebreak.isCheckable() and not rebreak.isChecked()
    rebreak.trigger()
    assert window.settings.value("export/rebreak") == "true"
    rebroken = sample / "rebroken.srt"
    assert window.files.export(rebroken)
    assert "lines re-broken" in window.statusBar().currentMessage()
    assert rebroken.read_text().split() == out.read_text().split()
    assert max(len(line) for line in rebroken.read_text().splitlines()) <= 42
    # Settings ▸ Re-cut cues (off by default, kept): the same words, cues cut at sentence ends
    # (timed by the sample's word-times file, paired with its captions), and the status bar says so.
    recut = window.actions_by_name["recut"]
    assert recut.isCheckable() and not recut.isChecked()
    recut.trigger()
    assert window.settings.value("export/recut") == "true"
    recut_file = sample / "recut.srt"
    assert window.files.export(recut_file)
    said = window.statusBar().currentMessage()
    assert "cues re-cut 24 ->" in said and "estimated" not in said, said
    words = [
        line
        for line in recut_file.read_text().splitlines()
        if line and "-->" not in line and not line.isdigit()
    ]
    assert (
        " ".join(words).split()
        == " ".join(
            line for line in out.read_text().splitlines() if line and "-->" not in line and not line.isdigit()
        ).split()
    )
    assert (sample / "sample.srt").read_text() == (SAMPLE / "sample.srt").read_text()  # input untouched


def test_accept_above_threshold_is_one_undoable_step(qtbot, window: MainWindow, sample: Path) -> None:
    window.files.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    session = window.session
    assert session is not None
    by_rule = session.counts()["accepted"]  # what the triage rule settled on opening
    window.review.accept_above(0.9)
    assert session.counts()["accepted"] > by_rule
    # Every sure suggestion is decided: accepted, or turned down by a surer one for its gap.
    assert not [s for s in session.document.suggestions if s.confidence >= 0.9 and s.status is Status.PENDING]
    press(qtbot, window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert session.counts()["accepted"] == by_rule
    assert window.actions_by_name["redo"].text().replace("&", "").startswith("Redo Accept")


@requires_ffmpeg
def test_media_gives_a_waveform_with_pauses_and_is_listened_to(
    qtbot, window: MainWindow, sample: Path
) -> None:
    # The Settings item (on unless turned off; the fixture turned it off) lets the recogniser
    # listen along the words, from the next file opened, and is kept.
    listen = window.actions_by_name["listen"]
    assert listen.isCheckable() and not listen.isChecked()
    listen.trigger()
    assert window.settings.value("model/audio") == "listen"
    stages: list[str] = []
    window.worker.progress.connect(lambda stage, _: stages.append(stage))
    window.files.open_captions(sample / "sample.srt", sample / "sample.mp4")
    wait_for_suggestions(qtbot, window)  # the text model's first, then refined by listening
    # The listening pass takes the text model's reading from the first: the text is read once.
    assert stages.count("Suggesting punctuation") == 1
    assert stages.index("Listening along the words") > stages.index("Suggesting punctuation")
    waveform = window.waveform.waveform
    assert waveform is not None
    assert 61 < waveform.duration < 63
    # The sample's voice pauses 0.8 s between paragraphs; the longest pauses are found.
    assert max(end - start for start, end in waveform.pauses) >= 0.6
    assert window.media.path is not None
    model = [s for s in window.session.document.suggestions if s.source is Source.MODEL and s.casing is None]
    assert model and {s.evidence for s in model} == {"heard"}
    # Where each word is said is ticked on the waveform, every word in order: here as the
    # recogniser's timing file beside the captions (sample.words.json) gives it, since given word
    # times win over heard ones.
    given = json.loads((sample / "sample.words.json").read_text(encoding="utf-8"))
    assert window.waveform.words == [(word["start"], word["end"]) for word in given]
    # The evidence panel shows what each reader chose at a gap the model proposed a mark for.
    document = window.session.document
    for _ in range(len(document.suggestions)):
        current = document.suggestion(window.current_id)
        if current.casing is None and current.source is Source.MODEL:
            break
        press(qtbot, window, Qt.Key.Key_J)
    heard, read = current.readings["heard"], current.readings["read"]
    assert f"heard {heard[0].strip() or 'no mark'} {heard[1]:.2f}" in window.evidence.text()
    assert f"read {read[0].strip() or 'no mark'} {read[1]:.2f}" in window.evidence.text()


def test_listening_turned_off_in_an_earlier_version_stays_off(qtbot, tmp_path: Path) -> None:
    from app.core.audio_use import AudioUse
    from app.ui.shortcuts import saved_audio_use

    settings = QSettings(str(tmp_path / "earlier.ini"), QSettings.Format.IniFormat)
    settings.setValue("model/listen", "false")  # as versions before the one audio setting kept it
    window = MainWindow(settings=settings)
    qtbot.addWidget(window)
    listen = window.actions_by_name["listen"]
    assert not listen.isChecked() and saved_audio_use(settings) is AudioUse.TIMINGS
    listen.trigger()  # on again: kept as the one setting
    assert saved_audio_use(settings) is AudioUse.LISTEN and settings.value("model/audio") == "listen"
    assert not settings.contains("model/listen")
    fresh = QSettings(str(tmp_path / "fresh.ini"), QSettings.Format.IniFormat)
    assert saved_audio_use(fresh) is AudioUse.LISTEN  # on unless turned off


def test_captions_named_with_their_language_open_with_the_media_and_reference_batch_pairs(
    qtbot, window: MainWindow, sample: Path
) -> None:
    from app.services.batch import pair_folder

    folder = sample.parent / "talks"
    folder.mkdir()
    (folder / "talk.en.srt").write_bytes((sample / "sample.srt").read_bytes())
    (folder / "talk.mp4").write_bytes((sample / "sample.mp4").read_bytes())
    (folder / "talk.ref.txt").write_bytes((sample / "reference.txt").read_bytes())
    (folder / "other.mp4").write_bytes(b"not this one")
    window.files.open_captions(folder / "talk.en.srt")
    wait_for_open(qtbot, window)
    assert window.session is not None
    entry = window.session.entry
    (group,) = pair_folder(folder).groups
    assert entry.media_path == group.media == folder / "talk.mp4"
    assert entry.reference_path == group.reference == folder / "talk.ref.txt"


def test_caption_checks_flag_fast_cues(qtbot, window: MainWindow, sample: Path) -> None:
    window.files.open_captions(sample / "sample.srt", None, None)
    wait_for_open(qtbot, window)
    model = window.cue_model
    assert model is not None
    fast = [row for row in range(model.rowCount()) if model.check(row).cps > window.limits.max_cps]
    assert fast  # the sample has cues read faster than 17 characters per second
    index = model.index(fast[0], CueModel.CPS)
    assert model.data(index, Qt.ItemDataRole.BackgroundRole) == PROBLEM_COLOUR


def test_unreadable_captions_give_a_dialog_and_the_window_stays(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.srt"
    broken.write_bytes(b"\x00\x01 not captions \xff" * 50)
    window.files.open_captions(broken)
    assert "cannot be opened" in wait_for_error(qtbot, window)
    assert window.pages.currentIndex() == 0  # still on the welcome screen, usable
    assert not window.files.open_paths([tmp_path / "notes.docx"])


def test_missing_media_is_reported_and_review_goes_on(qtbot, window: MainWindow, sample: Path) -> None:
    window.files.open_captions(sample / "sample.srt", sample / "gone.mp4", sample / "reference.txt")
    assert "missing" in wait_for_error(qtbot, window)
    window.last_error = None
    wait_for_suggestions(qtbot, window)
    assert window.session is not None and window.session.document.suggestions


def test_changed_shortcut_and_help_overlay(qtbot, tmp_path: Path, sample: Path) -> None:
    settings = QSettings(str(tmp_path / "keys.ini"), QSettings.Format.IniFormat)
    settings.setValue("shortcuts/accept", "Y")
    window = MainWindow(settings=settings)
    qtbot.addWidget(window)
    window.show()
    window.files.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    first = window.current_id
    press(qtbot, window, Qt.Key.Key_A)  # no longer accept
    assert window.session.document.suggestion(first).status is Status.PENDING
    press(qtbot, window, Qt.Key.Key_Y)
    assert window.session.document.suggestion(first).status is Status.ACCEPTED
    press(qtbot, window, Qt.Key.Key_F1)
    assert window.help.isVisible() and ("Y", "Accept") in window.help.listed()
    window.close()


def test_killed_during_review_reopens_with_every_decision(tmp_path: Path, sample: Path) -> None:
    """The editor is killed (SIGKILL) right after a run of keyboard decisions; nothing is lost."""
    environment = {**os.environ, "PUNCTUM_DATA_DIR": str(tmp_path / "data"), "QT_QPA_PLATFORM": "offscreen"}
    driver = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.editor_driver",
            str(sample / "sample.srt"),
            str(sample / "reference.txt"),
            "7",
        ],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = driver.stdout.readline()
        assert line, "the editor stopped before deciding anything"
        made = json.loads(line)
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait(30)
    session = ReviewSession.open(sample / "sample.srt")
    try:
        assert session.restored_decisions >= 7
        for sid, status in made["decided"].items():
            assert session.document.suggestion(int(sid)).status.value == status
        assert [w.mark for w in session.document.words()] == made["marks"]
    finally:
        session.close()


def test_thousands_of_repaints_do_not_wear_out_none(qtbot, window: MainWindow, sample: Path) -> None:
    """Item models answer None for most roles; some Qt bindings lose a reference to None each
    time, which aborts the process after a few thousand repaints. Guard against that build."""
    window.files.open_captions(sample / "sample.srt", None, None)
    wait_for_open(qtbot, window)
    model = window.cue_model
    assert model is not None
    index = model.index(0, CueModel.TEXT)
    before = sys.getrefcount(None)
    for _ in range(20_000):
        index.data(Qt.ItemDataRole.DecorationRole)
    assert sys.getrefcount(None) >= before - 100


def test_dropped_files_open_together_and_are_remembered(qtbot, window: MainWindow, sample: Path) -> None:
    from PySide6.QtCore import QMimeData, QPointF, QUrl
    from PySide6.QtGui import QDropEvent

    data = QMimeData()
    names = ("reference.txt", "sample.srt", "notes.docx")
    data.setUrls([QUrl.fromLocalFile(str(sample / name)) for name in names])
    event = QDropEvent(
        QPointF(10, 10),
        Qt.DropAction.CopyAction,
        data,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    messages: list[str] = []
    window.statusBar().messageChanged.connect(messages.append)
    window.dropEvent(event)
    qtbot.waitUntil(lambda: "Not opened: notes.docx" in messages, timeout=5000)  # said, not silently dropped
    qtbot.waitUntil(lambda: window.session is not None, timeout=5000)
    entry = window.session.entry
    assert entry.captions_path == (sample / "sample.srt").resolve()
    assert entry.reference_path == (sample / "reference.txt").resolve()
    assert entry.media_path == (sample / "sample.mp4").resolve()  # found beside the captions
    assert window.recent_list.item(0).text() == str((sample / "sample.srt").resolve())
    wait_for_suggestions(qtbot, window)


def test_cancel_stops_the_analysis_and_it_can_be_run_again(
    qtbot, window: MainWindow, sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (sample / "sample.mp4").unlink()  # text only, so the model is the slow part
    # The analysis is held at its first progress report until the click has landed, so a fast
    # machine cannot finish it before the person's cancel.
    reached, released = threading.Event(), threading.Event()

    def hold(_text: str, _fraction: float) -> None:
        if not reached.is_set():
            reached.set()
            released.wait(30)

    submit = window.worker.submit

    def submit_held(name: str, *args: Any, **kwargs: Any) -> Any:
        task = submit(name, *args, **kwargs)
        if name == "suggest":
            task.signals.progress.connect(hold, Qt.ConnectionType.DirectConnection)
        return task

    monkeypatch.setattr(window.worker, "submit", submit_held)
    window.files.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_open(qtbot, window)
    qtbot.waitUntil(reached.is_set, timeout=30_000)
    qtbot.waitUntil(window.cancel_button.isVisible, timeout=10_000)  # the analysis has started
    qtbot.mouseClick(window.cancel_button, Qt.MouseButton.LeftButton)
    released.set()
    qtbot.waitUntil(lambda: not window.worker.busy, timeout=10_000)
    assert window.session is not None and not window.session.analysed
    assert not window.cancel_button.isVisible()
    window.actions_by_name["suggest"].trigger()
    wait_for_suggestions(qtbot, window)
    assert window.session.document.suggestions


def test_a_reference_waits_for_the_analysis_and_failures_after_it_get_a_dialog(
    qtbot, window: MainWindow, sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Storing the result can fail after the work itself went well (a full disk, say).
    def full_disk(*_: object, **__: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("app.store.project.Project.store_results", full_disk)
    (sample / "sample.mp4").unlink()  # text only, so the model is the slow part
    window.files.open_captions(sample / "sample.srt", None, None)
    wait_for_open(qtbot, window)
    assert window.worker.busy
    # The analysis replaces the suggestions when it ends: a reference opened now would have its
    # decisions point at the model's suggestions instead.
    window.files.add_reference(sample / "reference.txt")
    assert "Not while suggestions are being made" in wait_for_error(qtbot, window)
    window.last_error = None
    qtbot.waitUntil(lambda: not window.worker.busy, timeout=ANALYSIS_TIMEOUT)
    assert "No space left on device" in wait_for_error(qtbot, window)  # a dialog, not a silent stop
    # Nothing is shown that the project does not hold; with room again, Make suggestions works.
    assert window.session is not None and not window.session.document.suggestions
    monkeypatch.undo()
    window.actions_by_name["suggest"].trigger()
    qtbot.waitUntil(
        lambda: bool(window.session and window.session.document.suggestions), timeout=ANALYSIS_TIMEOUT
    )
    assert window.gap_model is not None and window.gap_model.rowCount() > 0

    # A project saved under a name without a suffix gets one, so it can be opened again.
    window.files.save_project_as(tmp_path / "my project")
    assert (tmp_path / "my project.punctum").is_file()


def test_lowest_confidence_first_starts_with_the_least_sure(qtbot, window: MainWindow, sample: Path) -> None:
    window.files.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    session = window.session
    press(qtbot, window, Qt.Key.Key_L)
    least = min(g.queue_key[1] for g in session.queue() if g.pending)
    assert session.gap_of(window.current_id).queue_key[1] == least
    press(qtbot, window, Qt.Key.Key_J)
    assert session.gap_of(window.current_id).queue_key[1] >= least


def _visited_by_j(qtbot, window: MainWindow) -> list[tuple[int, bool]]:
    """The gaps (word, and whether a mark row) J walks through from the top until it stops or
    comes back round to the first gap left."""
    session = window.session
    assert session is not None
    window.current_id = None
    visited: list[tuple[int, bool]] = []
    first = None
    for _ in range(len(session.gaps()) + 2):
        before = window.current_id
        press(qtbot, window, Qt.Key.Key_J)
        if window.current_id is None or window.current_id in (before, first):
            break
        first = first or window.current_id
        gap = session.gap_of(window.current_id)
        visited.append((gap.index, bool(gap.marks)))
    return visited


def test_the_queue_holds_what_needs_a_person_and_j_k_walk_only_it(
    qtbot, window: MainWindow, sample: Path
) -> None:
    from app.core.triage import TriagePolicy, triage
    from app.services.analysis import AudioUse
    from app.services.model import Punctuator
    from tests.benchmarks.review_effort import bundled_sample

    window.files.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    session = window.session
    assert session is not None
    # What the benchmark predicts for the bundled sample is what the editor shows.
    predicted = bundled_sample(Punctuator(), sample, AudioUse.TIMINGS)["queue"]  # the fixture's setting
    assert f"{predicted} gaps to review" in window.counts_label.text()
    assert window.gap_model is not None and window.gap_model.rowCount() == predicted
    # Only gaps where the reference and the model disagree, or one of them speaks alone.
    queue = session.queue()
    for gap in queue:
        assert gap.pending
        reference, model = gap.by(Source.REFERENCE), gap.by(Source.MODEL)
        assert gap.disagreement or reference is None or model is None
    assert [g.disagreement for g in queue] == sorted((g.disagreement for g in queue), reverse=True)
    # No row asks for a capital that export gives anyway ("Hello" first, English days).
    words = list(session.document.words())
    assert not [g for g in queue if not g.marks and (g.index == 0 or words[g.index].text == "saturday")]
    # The rule's settlement is one recorded, undoable decision.
    assert window.actions_by_name["undo"].text().replace("&", "") == "Undo Settle by triage"
    decided_by = [row[0] for row in session.project.db.execute("SELECT decided_by FROM decisions")]
    assert decided_by == ["rule"]
    # J visits the queue's gaps in its order, and nothing else; K steps back.
    visited = _visited_by_j(qtbot, window)
    assert visited == [(g.index, bool(g.marks)) for g in queue]
    # Past the last, J comes back to the first gap left (nothing was decided): the queue is done
    # only when nothing is left.
    assert window.statusBar().currentMessage() == "Nothing left after here: back to the first gap left"
    assert session.gap_of(window.current_id) == queue[0]
    press(qtbot, window, Qt.Key.Key_K)
    assert window.current_id == queue[0].lead.id  # nothing before the first
    press(qtbot, window, Qt.Key.Key_J)
    press(qtbot, window, Qt.Key.Key_J)
    press(qtbot, window, Qt.Key.Key_K)
    assert session.gap_of(window.current_id) == queue[1]  # K steps back
    # E shows every gap again, the settled ones among them; E again goes back to the queue.
    press(qtbot, window, Qt.Key.Key_E)
    everything = session.gaps()
    assert window.gap_model.rowCount() == len(everything) > len(queue)
    assert len(_visited_by_j(qtbot, window)) == sum(g.pending for g in everything) == len(queue)
    press(qtbot, window, Qt.Key.Key_E)
    assert window.gap_model.rowCount() == len(queue)
    # Deciding a gap keeps it in the list (to look at again) but J skips it.
    window.current_id = None
    press(qtbot, window, Qt.Key.Key_J)
    first = session.gap_of(window.current_id).index
    press(qtbot, window, Qt.Key.Key_A)
    assert not next(g for g in session.queue() if g.index == first).pending
    assert window.gap_model.rowCount() == len(queue)
    assert f"{predicted - 1} gaps to review" in window.counts_label.text()
    assert triage(session.document.suggestions, TriagePolicy(), True).accepted == []


def test_what_triage_settled_is_checked_least_sure_first_and_a_wrong_one_taken_back(
    qtbot, window: MainWindow, sample: Path
) -> None:
    (sample / "reference.txt").unlink()  # the model alone settles
    window.files.open_captions(sample / "sample.srt", None, None)
    wait_for_suggestions(qtbot, window)
    session = window.session
    assert session is not None and window.gap_model is not None
    settled = session.settled_by_rule()
    assert settled
    press(qtbot, window, Qt.Key.Key_S)
    model = window.gap_model
    rows = model.gaps
    assert {s.id for g in rows for s in g.suggestions if s.id in settled} == settled
    shown = [model.data(model.index(row, GapModel.MODEL)) for row in range(model.rowCount())]
    sureness = [float(text.split()[-1]) for text in shown]
    assert sureness == sorted(sureness)  # the least sure first, as the Model column reads
    # No reference: each settled because the model alone was that sure.
    why = [model.data(model.index(row, GapModel.WHY)) for row in range(model.rowCount())]
    assert why == [f"model alone, {sure:.2f} sure" for sure in sureness]
    assert "may be wrong" in window.statusBar().currentMessage()
    # J walks through them although they are decided; X takes a wrong one back, and it leaves the list.
    if len(rows) > 1:
        window.review.select(rows[0].lead.id)
        press(qtbot, window, Qt.Key.Key_J)
        assert window.current_id == rows[1].lead.id
    marked = next(g for g in rows if g.marks)
    window.review.select(marked.lead.id)
    press(qtbot, window, Qt.Key.Key_X)
    assert session.document.word(marked.index).mark == ""
    assert marked.index not in [g.index for g in window.gap_model.gaps]
    assert len(session.settled_by_rule()) < len(settled)
    # A re-triage does not settle again what the person took back.
    window.set_triage_policy(window.triage_policy())
    assert all(session.document.suggestion(s.id).status is Status.REJECTED for s in marked.marks)
    # S again: the queue as before.
    press(qtbot, window, Qt.Key.Key_S)
    assert not window.review.settled_only and window.gap_model.gaps == session.queue()


def test_a_policy_change_re_triages_and_undo_takes_back_the_rules_settlement(
    qtbot, window: MainWindow, sample: Path
) -> None:
    from app.core.triage import TriagePolicy

    (sample / "reference.txt").unlink()  # the model alone: its threshold decides
    window.files.open_captions(sample / "sample.srt", None, None)
    wait_for_suggestions(qtbot, window)
    session = window.session
    assert session is not None and not session.has_reference

    def to_review() -> int:
        return sum(g.pending for g in session.queue())

    at_default = to_review()
    settled_at_default = session.settled_by_rule()
    settled_marks = [
        session.document.suggestion(i)
        for i in settled_at_default
        if session.document.suggestion(i).casing is None
    ]
    # The surest settle, as many as are expected right at the default target of 97%.
    assert settled_marks and sum(s.confidence for s in settled_marks) / len(settled_marks) >= 0.97
    # A laxer target settles more; what the stricter one queued is now settled.
    window.set_triage_policy(TriagePolicy(precision_target=0.6))
    lax = to_review()
    assert lax < at_default
    assert session.settled_by_rule() > settled_at_default
    assert f"{lax} gaps to review" in window.counts_label.text()
    # A stricter one takes the laxer one's settlement back: the model alone settles nothing.
    window.set_triage_policy(TriagePolicy(precision_target=None))
    assert session.settled_by_rule() == set()
    assert to_review() == len(session.gaps())
    assert not any(w.mark for w in session.document.words())  # the rule's marks taken out again
    # The policy is kept for the next file.
    assert window.triage_policy() == TriagePolicy(precision_target=None)
    # Undo by keyboard: the laxer settlement is back, then the first one, then none.
    press(qtbot, window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert to_review() == lax
    press(qtbot, window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert to_review() == at_default and session.settled_by_rule() == settled_at_default
    press(qtbot, window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert session.settled_by_rule() == set()
    assert all(s.status is Status.PENDING for s in session.document.suggestions)
    assert window.gap_model is not None and window.gap_model.rowCount() == len(session.gaps())
    assert f"{len(session.gaps())} gaps to review" in window.counts_label.text()
    # Undone as recorded: the project opened again shows the same.
    path = session.project.path
    window.close()
    reopened = ReviewSession.open_project(path)
    try:
        assert all(s.status is Status.PENDING for s in reopened.document.suggestions)
        assert reopened.history.redo_description == "Settle by triage"
    finally:
        reopened.close()


@pytest.mark.parametrize(
    ("stored", "target"),
    [
        ("0.6", 0.90),  # earlier versions offered 0.50 to 1.00: the nearest the dialog offers
        ("1.0", 0.99),
        ("-1", 0.90),
        ("0.95", 0.95),
        ("nan", 0.97),  # no number: the default
        ("inf", 0.97),
        ("lots", 0.97),
        ("none", None),  # the model alone settles nothing, as the dialog keeps it
    ],
)
def test_a_stored_triage_target_is_the_one_the_policy_dialog_shows(
    qtbot, tmp_path: Path, stored: str, target: float | None
) -> None:
    from app.ui.dialogs import TriagePolicyDialog

    kept = tmp_path / "settings.ini"
    kept.write_text(f"[triage]\nmodel_threshold={stored}\n", encoding="utf-8")
    window = MainWindow(settings=QSettings(str(kept), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    policy = window.triage_policy()  # what the editor settles by
    assert policy.precision_target == target
    dialog = TriagePolicyDialog(policy, window)
    qtbot.addWidget(dialog)
    assert dialog.model_alone.isChecked() is (target is not None)
    if target is not None:
        assert dialog.target.text() == f"{target:.2f}"
    assert dialog.policy() == policy  # OK with nothing changed keeps what the editor did


def test_the_editor_settles_by_the_target_its_dialog_shows_when_an_older_one_was_kept(
    qtbot, tmp_path: Path, sample: Path
) -> None:
    from app.ui.dialogs import TriagePolicyDialog

    kept = tmp_path / "settings.ini"
    kept.write_text("[model]\naudio=timings\n\n[triage]\nmodel_threshold=0.6\n", encoding="utf-8")
    window = MainWindow(settings=QSettings(str(kept), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.show()
    (sample / "reference.txt").unlink()  # the model alone: its target decides
    window.files.open_captions(sample / "sample.srt", None, None)
    wait_for_suggestions(qtbot, window)
    session = window.session
    assert session is not None
    settled = session.settled_by_rule()
    assert settled
    # Settled at the dialog's lowest target, 0.90, not at the 0.60 kept (which settles every gap of
    # the sample): some gaps wait for a person.
    assert sum(g.pending for g in session.queue()) > 0
    # The dialog opened now shows that target: OK with nothing changed settles nothing differently.
    dialog = TriagePolicyDialog(window.triage_policy(), window)
    qtbot.addWidget(dialog)
    assert dialog.target.text() == "0.90"
    window.set_triage_policy(dialog.policy())
    assert session.settled_by_rule() == settled
    window.close()


@requires_ffmpeg
def test_the_evidence_panel_shows_what_is_known_about_a_gap(qtbot, window: MainWindow, sample: Path) -> None:
    from app.audio.analysis import analyse_media
    from app.audio.gap_features import caption_gaps
    from app.formats import parse_document
    from app.services.documents import attach_timing_file

    window.files.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    session = window.session
    assert session is not None
    cafe = 8  # "... maple street repair cafe ‖ every saturday ...": the reference ends a sentence
    assert session.document.word(cafe).text == "cafe"
    press(qtbot, window, Qt.Key.Key_E)  # every gap: this one may have been settled by the rule
    gap = next(g for g in session.gaps() if g.index == cafe and g.marks)
    window.review.select(gap.lead.id)
    # Measured again here, straight from the audio layer, for the same gap.
    document = parse_document((sample / "sample.srt").read_bytes(), "srt", sample / "sample.srt")
    attach_timing_file(document, sample / "sample.words.json", "en")  # opened with the captions
    _, prosody, timings = caption_gaps(document, analyse_media(sample / "sample.mp4"))
    pause_ms = round(prosody[cafe].pause * 1000)
    end_ms = round(timings[cafe].end * 1000)
    text = window.evidence.text()
    # The words as they stand (the rule may have settled this gap already), on both sides.
    assert "maple street repair cafe <b>‖</b> every saturday a few" in text.lower().replace(".", "").replace(
        ",", ""
    )
    assert "<b>Reference</b>&nbsp;</td><td>.</td>" in text
    assert f"<b>Pause</b>&nbsp;</td><td>{pause_ms} ms</td>" in text
    change = prosody[cafe].pitch_change
    if change is not None and 1 <= abs(change) <= 12:
        direction = "rising" if change > 0 else "falling"
        assert f"{direction} {abs(round(change, 1)):.1f} semitones over the word" in text
    # However little room the pane has, every line of the evidence can be reached: it was cut
    # off at the window's default size, its last lines (the readers' disagreement) out of sight.
    splitter = window.editor_page.evidence_scroll.parentWidget()
    sizes = splitter.sizes()
    splitter.setSizes([sizes[0], sum(sizes[1:]) - 40, 40])
    qtbot.waitUntil(lambda: window.editor_page.evidence_scroll.height() <= 70, timeout=5_000)
    panel, scroll = window.evidence, window.editor_page.evidence_scroll
    qtbot.waitUntil(lambda: panel.height() >= panel.heightForWidth(panel.width()), timeout=5_000)
    assert panel.width() <= scroll.viewport().width() and scroll.verticalScrollBar().maximum() > 0
    # The gap is marked on the waveform, and P plays the three seconds around it.
    assert window.waveform.gap == end_ms
    press(qtbot, window, Qt.Key.Key_P)
    assert window.media._stop_at == max(0, end_ms - 1500) + 3000
    # Without a sound device P played in silence and said nothing: now it says why.
    from PySide6.QtMultimedia import QMediaDevices

    silent = "No sound device: the media plays in silence (the waveform shows where)"
    assert (window.statusBar().currentMessage() == silent) == (not QMediaDevices.audioOutputs())


def test_gui_without_a_display_says_so_in_one_line() -> None:
    environment = {
        k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    result = subprocess.run(
        [sys.executable, "-m", "app", "gui", "--sample"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 3
    assert result.stderr.strip().startswith("punctum: no display") and "\n" not in result.stderr.strip()


def test_pitch_is_told_in_semitones_over_the_word_and_a_short_track_says_so() -> None:
    from app.core.gap_features import GapMeasure
    from app.ui.evidence import pitch_text

    # A 0.1 s word rising at 89 semitones a second moves 8.9 semitones, not "+89".
    assert pitch_text(GapMeasure(120, 89.0, 1500, 8.9)) == "rising 8.9 semitones over the word"
    assert pitch_text(GapMeasure(120, -30.0, 1500, -2.4)) == "falling 2.4 semitones over the word"
    assert pitch_text(GapMeasure(120, 5.0, 1500, 0.4)).startswith("level")
    assert pitch_text(GapMeasure(120, None, 1500, None)) == "too little voiced sound in the word to tell"
    assert pitch_text(GapMeasure(None, None, None, None)) == "not measured"


def test_each_queue_row_reads_as_the_words_around_its_gap_with_the_proposal_in_place(
    qtbot, window: MainWindow, sample: Path
) -> None:
    from app.services.captions_export import exported_spelling

    window.files.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    model, document = window.gap_model, window.session.document
    assert model is not None and model.rowCount() > 0
    for row in range(model.rowCount()):
        gap = model.gap(row)
        shown = model.data(model.index(row, GapModel.CONTEXT))
        word = document.word(gap.index)
        if gap.marks:  # "…fix them together[.] nobody pays…": the mark accept would write, in place
            mark = gap.lead.mark.strip() or "no mark"
            # Spelt as export writes it: the transcript showed "hello" where export writes "Hello".
            spelt = exported_spelling(document, gap.index, window.session.language)
            assert f"{word.prefix}{spelt}[{mark}]" in shown
        else:  # a capital: the word as it would be written
            assert f"[{word.prefix}{word.text[:1].upper()}" in shown
        assert 4 <= len(shown.replace("…", "").split()) <= 9
        # The tooltip gives more of the sentence around it.
        assert len(model.data(model.index(row, GapModel.CONTEXT), Qt.ItemDataRole.ToolTipRole)) > len(shown)
    # The context column takes the room the word alone took: wider than the two proposal columns.
    header = window.gap_view.horizontalHeader()
    assert header.sectionSize(GapModel.CONTEXT) > header.sectionSize(GapModel.REFERENCE)


def test_cues_recut_are_previewed_applied_as_one_step_undone_and_kept(
    qtbot, window: MainWindow, sample: Path
) -> None:
    """Edit ▸ Re-cut (Ctrl+Shift+C): today's cues beside the re-cut ones; Apply is one undoable
    step that changes where cues begin and end and nothing else; the project keeps it."""
    from PySide6.QtWidgets import QLabel, QPlainTextEdit

    from app.ui.dialogs import RecutPreviewDialog

    window.files.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    session = window.session
    assert session is not None
    window.review.accept_above(0.0)  # every gap's surest mark in: the reference's sentences
    cuts = [(c.start, c.end) for c in session.document.cues]
    # What the transcript shows is what export writes: it showed "here's", "i", "saturday" where
    # the preview and the export wrote "Here's", "I", "Saturday".
    from PySide6.QtGui import QTextDocument

    from app.services.captions_export import as_exported

    exported = as_exported(session.document, session.language)
    model = window.cue_model
    assert model is not None
    checked = 0
    for row, cue in enumerate(exported.cues):
        if any(
            s.status is Status.PENDING
            for s in session.document.suggestions
            if s.gap in range(model.first_word(row), model.first_word(row) + len(cue.words))
        ):
            continue  # a proposal still shown in place
        shown = QTextDocument()
        shown.setHtml(model.cue_html(row, session.document.cues[row]))
        assert shown.toPlainText() == cue.text().replace("\n", "\u2029"), row
        checked += 1
    assert checked >= 12  # of 24 cues: the rest hold a proposal still
    words = [w.rendered() for w in session.document.words()]
    press(
        qtbot, window, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    )
    dialog = window.findChild(RecutPreviewDialog)
    assert dialog is not None and dialog.isVisible()
    now, recut = dialog.findChildren(QPlainTextEdit)
    assert now.toPlainText().count(" - ") == 24 and 0 < recut.toPlainText().count(" - ") < 24
    # Each cue as export writes it (sentence starts capitalised), how long it is up and how fast
    # it reads, and what it is over.
    assert "\nHello" in recut.toPlainText() and "\nhello" not in recut.toPlainText()
    assert re.search(r"\(\d+\.\d\d s, \d+\.\d cps\)", recut.toPlainText())
    over = now.toPlainText().count("⚠")
    labels = [label.text() for label in dialog.findChildren(QLabel)]
    assert over >= 1 and f"Now: 24 cues, {over} over a limit" in labels
    # The summary above counts as the preview does (it said 21 -> 4 beside "13 over a limit").
    recut_over = recut.toPlainText().count("⚠")
    assert f"over a caption limit {over} -> {recut_over}" in labels[0], labels
    assert any(
        label.startswith("Re-cut: ") and label.endswith(f" {recut_over} over a limit") for label in labels
    )
    assert [(c.start, c.end) for c in session.document.cues] == cuts  # a preview changes nothing
    current = window.current_id
    assert current is not None
    dialog.accept()
    # The cue of the suggestion at hand is still the one shown, in the cues as they are now.
    shown = window.transcript.currentIndex().row()
    assert shown == window.cue_model.cue_of_word(session.document.suggestion(current).gap)
    # Settings ▸ Re-cut on export shows what export will do: the cues stand re-cut.
    on_export = window.actions_by_name["recut"]
    assert on_export.isChecked() and not on_export.isEnabled()
    assert window.settings.value("export/recut", "false") == "false"  # the setting is not changed
    after = [(c.start, c.end) for c in session.document.cues]
    assert len(after) == recut.toPlainText().count(" - ") and after != cuts
    assert [w.rendered() for w in session.document.words()] == words
    assert window.cue_model is not None and window.cue_model.rowCount() == len(after)
    assert window.waveform.cues == after  # the waveform shows the new boundaries
    assert "cues re-cut 24 ->" in window.statusBar().currentMessage()
    # Cues end where sentences end (or at a clause of a long one); none leaves a sentence's start.
    ends = [cue.words[-1].mark for cue in session.document.cues]
    assert sum(mark in (".", "?", "!") for mark in ends) >= 0.6 * len(ends), ends
    assert all(mark in (".", "?", "!", ",", ":", ";") for mark in ends), ends
    press(qtbot, window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert [(c.start, c.end) for c in session.document.cues] == cuts and window.waveform.cues == cuts
    assert not on_export.isChecked() and on_export.isEnabled()
    press(
        qtbot, window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    )
    assert [(c.start, c.end) for c in session.document.cues] == after
    path = session.project.path
    window.close()
    reopened = ReviewSession.open_project(path)
    try:
        assert [(c.start, c.end) for c in reopened.document.cues] == after
        assert [w.rendered() for w in reopened.document.words()] == words
    finally:
        reopened.close()


def test_the_editor_tells_what_the_style_learnt_and_resets_it(
    qtbot, window: MainWindow, sample: Path
) -> None:
    from PySide6.QtWidgets import QMessageBox

    from tests.test_house_style import pending_commas

    (sample / "reference.txt").unlink()  # the model alone
    window.files.open_captions(sample / "sample.srt", None, None)
    qtbot.waitUntil(
        lambda: window.session is not None and window.session.analysed and not window.worker.busy,
        timeout=240_000,
    )
    assert window.last_error is None, window.last_error
    session = window.session
    assert session is not None
    cues = window.cue_model
    assert cues is not None

    def shown() -> list[str]:
        """Every cue's text as the transcript shows it (kept by the model until it changes)."""
        return [cues.data(cues.index(row, CueModel.TEXT)) for row in range(cues.rowCount())]

    told = []
    for _ in range(5):  # the person turns down one comma after another, by keyboard
        commas = pending_commas(session)
        window.review.select(commas[min(commas)].id)
        shown()
        qtbot.keyClick(window, Qt.Key.Key_X)
        told.append(window.statusBar().currentMessage())
        # The transcript shows every gap as it is now, those the re-reading changed too.
        assert shown() == [cues.cue_html(row, cue) for row, cue in enumerate(session.document.cues)]
    # The status bar tells the style when what it learnt changes, not at every decision.
    assert any(message.startswith("House style from") for message in told), told
    assert "fewer of the model's marks" in session.style().summary()
    before = len(pending_commas(session))

    # Review ▸ Reset the house style, asked first.
    window.actions_by_name["reset_style"].trigger()
    box = next(b for b in window.findChildren(QMessageBox) if b.isVisible())
    next(b for b in box.buttons() if b.text() == "&Reset").click()
    assert session.style().neutral
    assert window.statusBar().currentMessage().startswith("House style reset")
    assert len(pending_commas(session)) > before  # read again as the model reads them
    assert window.gap_model is not None and window.gap_model.rowCount() == len(session.queue())
    assert sum(s.status is Status.REJECTED and s.mark == "," for s in session.document.suggestions) == 5


# --- issue 77: what a person reads in the window --------------------------------------------------


def test_the_editor_counts_gaps_as_status_and_batch_do_on_the_sample(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    """The status line after triage, the list's heading and the counts under it say what `punctum
    status` and `punctum batch` say of the same captions and reference, triage applied: the same
    numbers, in gaps."""
    import shutil

    from tests.conftest import run_punctum_here

    folder = tmp_path / "talks"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "b.srt")
    shutil.copy(SAMPLE / "reference.txt", folder / "b.ref.txt")
    project = tmp_path / "talks.punctum"
    batch = run_punctum_here(
        "batch", str(folder), "--project", str(project), "--apply", "triage", "--no-audio"
    )
    assert batch.returncode == 0, batch.stderr
    said = re.search(r"(\d+) gaps settled by triage \(about (\d+) may be wrong\)", batch.stdout)
    assert said is not None, batch.stdout
    status = run_punctum_here("status", "--json", str(project))
    (row,) = json.loads(status.stdout)
    left, settled, wrong = row["gaps_to_review"], row["settled"], f"{row['may_be_wrong']:.0f}"
    assert (int(said[1]), said[2]) == (settled, wrong)

    # The editor reads the words alone, as batch --no-audio did.
    window.settings.setValue("model/audio", "text")
    messages: list[str] = []
    window.statusBar().messageChanged.connect(messages.append)
    window.files.open_captions(folder / "b.srt", None, folder / "b.ref.txt")
    wait_for_suggestions(qtbot, window)
    assert (
        f"Triage settled {settled} gaps by itself, about {wrong} of them may be wrong; {left} gaps left to you"
        in messages
    )
    assert window.counts_label.text() == (
        f"{left} gaps to review · {settled} settled by triage (about {wrong} may be wrong) · 0 decided by you"
    )
    press(qtbot, window, Qt.Key.Key_S)
    assert window.list_heading.text().startswith(
        f"Settled by triage: {settled} gaps, about {wrong} of them may be wrong"
    )
    assert window.gap_model is not None and window.gap_model.rowCount() == settled
    assert window.statusBar().currentMessage() == window.list_heading.text()

    # One X takes one settled gap back: one gap decided by you, and status of the editor's own
    # project counts as the window does.
    press(qtbot, window, Qt.Key.Key_X)
    assert window.session is not None
    mine = run_punctum_here("status", "--json", str(window.session.project.path))
    (now,) = json.loads(mine.stdout)
    assert window.counts_label.text() == (
        f"{now['gaps_to_review']} gaps to review · {now['settled']} settled by triage (about"
        f" {now['may_be_wrong']:.0f} may be wrong) · 1 decided by you"
    )
    assert now["settled"] < settled


def test_the_header_the_style_and_status_count_the_same_decisions(
    qtbot, window: MainWindow, sample: Path
) -> None:
    """A person's answers of every kind (turned down, accepted, another mark, a mark put in by
    hand, no mark): the header's "decided by you", the house style's "from N decisions" (Review
    menu) and ``punctum status`` count the same gaps."""
    from PySide6.QtWidgets import QMessageBox

    from tests.conftest import run_punctum_here

    (sample / "reference.txt").unlink()  # the model alone: every decision teaches
    window.settings.setValue("model/audio", "text")
    messages: list[str] = []
    window.statusBar().messageChanged.connect(messages.append)
    window.files.open_captions(sample / "sample.srt", None, None)
    wait_for_suggestions(qtbot, window)
    session = window.session
    assert session is not None
    # The suggestions arrive counted in gaps, as the header counts (it said "26 suggestions").
    assert any(m.startswith(f"Suggestions for {len(session.gaps())} gaps in ") for m in messages), messages
    keys = [Qt.Key.Key_X, Qt.Key.Key_A, Qt.Key.Key_Period, Qt.Key.Key_X, Qt.Key.Key_Comma, Qt.Key.Key_A]
    keys += [Qt.Key.Key_Backspace, Qt.Key.Key_X]
    for key in keys:
        press(qtbot, window, key)
    decided = re.search(r"(\d+) decided by you", window.counts_label.text())
    assert decided is not None and int(decided[1]) == len(keys), window.counts_label.text()

    window.actions_by_name["show_style"].trigger()
    box = next(b for b in window.findChildren(QMessageBox) if b.isVisible())
    assert f"House style from {len(keys)} decisions" in box.text(), box.text()
    assert f"In this file, {len(keys)} gaps decided by you." in box.text()
    box.close()

    status = run_punctum_here("status", "--json", str(session.project.path))
    (row,) = json.loads(status.stdout)
    assert row["decided_by_you"] == row["house_style"]["decisions"] == len(keys)
    assert window.counts_label.text().startswith(f"{row['gaps_to_review']} gaps to review")
    told = run_punctum_here("status", str(session.project.path)).stdout
    assert f"decided by you: {len(keys)} gaps" in told
    assert f"house style from {len(keys)} decisions" in told


def test_what_the_re_reading_changed_is_said_and_j_goes_back_to_a_gap_left(
    qtbot, window: MainWindow, sample: Path
) -> None:
    from app.core.history import Decider, SuggestionEdit

    (sample / "reference.txt").unlink()  # the model alone: every decision re-reads the rest
    window.settings.setValue("model/audio", "text")
    window.files.open_captions(sample / "sample.srt", None, None)
    wait_for_suggestions(qtbot, window)
    session = window.session
    assert session is not None
    said = []
    for _ in range(6):
        press(qtbot, window, Qt.Key.Key_X)
        last = session.history.done[-1]
        if last.by is Decider.RULE and last.joins_previous:
            edits = [e for e in last.edits if isinstance(e, SuggestionEdit)]
            added = sum(e.before is None for e in edits)
            message = window.statusBar().currentMessage()
            assert "Read again with the house style: " in message, message
            assert (f"{added} new proposal" in message) == bool(added), message
            assert message.endswith("(Ctrl+Z takes it back with your answer)")
            said.append(message)
    assert said, "no answer was followed by a re-reading"

    # J past the last gap goes back to the first one left, and says so.
    model = window.gap_model
    assert model is not None
    pending = [row for row in range(model.rowCount()) if model.gap(row).pending]
    assert len(pending) > 1
    window.review.select(model.gap(pending[-1]).lead.id)
    press(qtbot, window, Qt.Key.Key_J)
    assert window.current_id == model.gap(pending[0]).lead.id
    assert window.statusBar().currentMessage() == "Nothing left after here: back to the first gap left"


def test_the_settled_list_goes_least_sure_first_says_why_and_x_keeps_the_place(
    qtbot, window: MainWindow, sample: Path
) -> None:
    window.files.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    press(qtbot, window, Qt.Key.Key_S)
    model = window.gap_model
    assert model is not None and model.rowCount() > 4
    # The least sure first, as the Model column reads (every row has a confidence, capitals too).
    shown = [model.data(model.index(row, GapModel.MODEL)) for row in range(model.rowCount())]
    sureness = [float(text.split()[-1]) for text in shown]
    assert sureness == sorted(sureness), shown
    # Why each settled: with a reference, where it and the model agree.
    assert model.headerData(GapModel.WHY, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole) == (
        "Settled because"
    )
    why = {model.data(model.index(row, GapModel.WHY)) for row in range(model.rowCount())}
    assert why == {"reference and model agree"}
    tip = model.data(model.index(0, GapModel.WHY), Qt.ItemDataRole.ToolTipRole)
    assert "right 97.3% of the time" in tip
    # The heading stays when the status message has gone.
    window.statusBar().clearMessage()
    heading = window.list_heading
    assert heading.isVisible() and heading.text().startswith(f"Settled by triage: {model.rowCount()} gaps")
    assert "the least sure first" in heading.text()
    # X on the third row takes it back; the row that takes its place is the one selected.
    press(qtbot, window, Qt.Key.Key_J)
    press(qtbot, window, Qt.Key.Key_J)
    assert model.row_of(window.current_id) == 2
    taken_back = model.gap(2)
    press(qtbot, window, Qt.Key.Key_X)
    assert (taken_back.index, bool(taken_back.marks)) not in [(g.index, bool(g.marks)) for g in model.gaps]
    assert model.row_of(window.current_id) == 2
    assert window.gap_view.currentIndex().row() == 2
    # A on a settled gap keeps it, says so and goes on (it did nothing and said nothing).
    here = window.current_id
    press(qtbot, window, Qt.Key.Key_A)
    assert (
        window.statusBar().currentMessage()
        == "Accepted already (triage settled it): it stays; X takes it back"
    )
    assert model.row_of(window.current_id) == 3 and window.current_id != here


def test_s_with_nothing_settled_says_why_and_what_would_settle(
    qtbot, window: MainWindow, sample: Path
) -> None:
    """S said "Settled by triage: 0 gaps" with no word of why."""
    (sample / "reference.txt").unlink()
    window.settings.setValue("model/audio", "text")
    window.settings.setValue("triage/model_threshold", "none")  # the model settles nothing alone
    window.files.open_captions(sample / "sample.srt", None, None)
    wait_for_suggestions(qtbot, window)
    assert window.session is not None and not window.session.settled_by_rule()
    press(qtbot, window, Qt.Key.Key_S)
    assert window.list_heading.text() == (
        "Settled by triage: no gap, as the policy lets the model settle nothing alone; where a"
        " reference transcript agrees with the model it settles too (File ▸ Open reference)."
    )


def _free_for_message(window: MainWindow) -> int:
    """The width the status bar paints its message in: up to its first permanent widget shown
    (as QStatusBar lays it out: 6 pixels from the left, 2 before that widget)."""
    bar = window.statusBar()
    shown = [w for w in (window.progress_label, window.progress, window.cancel_button) if w.isVisible()]
    right = min((w.x() for w in shown), default=bar.width() - 10) - 2
    return right - 6


@requires_ffmpeg
def test_the_status_line_while_suggestions_come_is_whole_and_says_what_runs(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    from PySide6.QtCore import QTimer

    from tests.conftest import sample_opening

    window.resize(1280, 720)
    window.settings.setValue("model/audio", "listen")
    captions, media = sample_opening(tmp_path)
    progress: list[tuple[str, float, bool]] = []
    window.worker.progress.connect(
        lambda text, f: progress.append((text, f, window.cancel_button.isVisible()))
    )
    fits: list[tuple[str, int, int, bool]] = []

    def look(message: str) -> None:
        bar = window.statusBar()
        if bar.currentMessage() == message:
            fits.append(
                (
                    message,
                    bar.fontMetrics().horizontalAdvance(message),
                    _free_for_message(window),
                    window.worker.busy,
                )
            )

    def shown(message: str) -> None:
        if message.startswith("Triage settled"):  # looked at once the status bar is laid out
            QTimer.singleShot(100, lambda: look(message))

    window.statusBar().messageChanged.connect(shown)
    window.files.open_captions(captions, media)
    wait_for_suggestions(qtbot, window)
    qtbot.wait(200)
    # The first triage message comes while the recogniser listens, beside its progress: whole.
    assert fits, "the triage message was gone within 0.1 s"
    first = fits[0]
    assert first[3], "the first triage message came while nothing else ran"
    assert first[1] <= first[2], f"{first[0]!r} needs {first[1]} px, has {first[2]}"
    # Before the recogniser loads and hears its first window, the line says it listens (not the
    # stage before, "Measuring pauses").
    stages = [text for text, _, _ in progress]
    listening = stages.index("Listening along the words")
    assert progress[listening][:2] == ("Listening along the words", 0.0)
    assert stages[listening - 1] == "Measuring pauses"
    # Cancel while there is something to cancel; not at "Done" 100%.
    done = [visible for text, f, visible in progress if text == "Done"]
    assert done and not any(done)
    assert all(visible for _, f, visible in progress if f < 1)


@requires_ffmpeg
def test_the_evidence_says_how_readers_combine_hides_an_octave_leap_and_capitals_have_a_confidence(
    qtbot, window: MainWindow, sample: Path
) -> None:
    window.settings.setValue("model/audio", "listen")
    window.files.open_captions(sample / "sample.srt", sample / "sample.mp4", sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    session, model = window.session, window.gap_model
    assert session is not None and model is not None
    press(qtbot, window, Qt.Key.Key_E)  # every gap
    rows = model.gaps
    # A heard gap: both readers, and what the model's suggestion made of them.
    heard = next(
        g
        for g in rows
        if g.marks and (m := g.by(Source.MODEL, pending=False)) is not None and "heard" in m.readings
    )
    window.review.select(heard.lead.id)
    suggestion = heard.by(Source.MODEL, pending=False)
    assert suggestion is not None
    mark = suggestion.mark.strip() or "no mark"
    text = window.evidence.text()
    assert f"combined: {mark} {suggestion.confidence:.2f} (each mark" in text, text
    # "flat" (... the tires were flat ‖ and one pedal ...): the pitch tracker jumps from about
    # 95 Hz to 361 Hz over the word, which is no voice's movement.
    words = [w.text for w in session.document.words()]
    flat = next(g for g in rows if g.marks and words[g.index] == "flat")
    window.review.select(flat.lead.id)
    text = window.evidence.text()
    assert "pitch unclear" in text and "30.0 semitones" not in text
    # A capital's row gives the model's confidence, in the list and in the panel.
    capital = next(g for g in rows if not g.marks and g.by(Source.MODEL, pending=False) is not None)
    proposal = capital.by(Source.MODEL, pending=False)
    assert proposal is not None
    row = model.row_of(capital.lead.id)
    assert model.data(model.index(row, GapModel.MODEL)) == f"Capital {proposal.confidence:.2f}"
    window.review.select(capital.lead.id)
    assert f"Capital {proposal.confidence:.2f}" in window.evidence.text()


def test_pitch_beyond_an_octave_over_a_word_is_unclear() -> None:
    from app.core.gap_features import GapMeasure
    from app.ui.evidence import pitch_text

    assert pitch_text(GapMeasure(120, 188.0, 1500, 18.8)).startswith("pitch unclear")
    assert pitch_text(GapMeasure(120, -150.0, 1500, -13.0)).startswith("pitch unclear")
    assert pitch_text(GapMeasure(120, 120.0, 1500, 12.0)) == "rising 12.0 semitones over the word"


def _export_dialog_folder(qtbot, window: MainWindow) -> Path:
    """Where File ▸ Export's dialog opens (the dialog itself, found and cancelled)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QFileDialog

    seen: list[Path] = []

    def look() -> None:
        dialog = QApplication.activeModalWidget()
        if isinstance(dialog, QFileDialog):
            seen.append(Path(dialog.selectedFiles()[0]).parent)
            dialog.reject()
        else:
            QTimer.singleShot(50, look)

    QTimer.singleShot(0, look)
    window.actions_by_name["export"].trigger()
    assert seen, "no export dialog"
    return seen[0]


def test_the_export_dialog_opens_where_the_user_exports_not_in_the_bundled_sample(
    qtbot, window: MainWindow, sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    window.files.open_sample()  # the sample Punctum carries, in the folder it was installed in
    wait_for_suggestions(qtbot, window)
    assert window.session is not None and window.session.entry.captions_path.parent == SAMPLE.resolve()
    assert _export_dialog_folder(qtbot, window) == home
    # Once exported somewhere, the dialog opens there.
    exports = tmp_path / "exports"
    exports.mkdir()
    assert window.files.export(exports / "talk.srt")
    assert _export_dialog_folder(qtbot, window) == exports
    # Captions in a folder of one's own, with no export yet: beside them.
    window.settings.remove("export/folder")
    window.files.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    assert _export_dialog_folder(qtbot, window) == sample.resolve()


def test_opening_shows_the_editor_at_once_and_a_failure_goes_back_to_the_recent_files(
    qtbot, window: MainWindow, sample: Path, tmp_path: Path
) -> None:
    """Reopening showed the welcome page for some seconds before the project, as if nothing were
    being opened."""
    damaged = tmp_path / "damaged.punctum"
    damaged.write_bytes(b"not a project")
    assert window.pages.currentIndex() == 0
    window.files.open_project(damaged)
    assert (
        window.pages.currentIndex() == 1 and window.statusBar().currentMessage() == "Opening damaged.punctum…"
    )
    wait_for_error(qtbot, window)
    assert window.pages.currentIndex() == 0  # nothing was opened
    window.files.open_captions(sample / "sample.srt", None, None)
    assert window.pages.currentIndex() == 1
    wait_for_open(qtbot, window)
    assert window.pages.currentIndex() == 1


def test_an_scc_file_opens_in_the_editor_and_exports_as_scc_with_its_captions_frames(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    from app.formats import read_document

    captions = tmp_path / "news.scc"
    captions.write_bytes((FIXTURES / "asr.scc").read_bytes())
    assert window.files.open_captions(captions, None, None)
    wait_for_suggestions(qtbot, window)
    assert window.cue_model is not None and window.cue_model.rowCount() == 11
    out = tmp_path / "reviewed.scc"
    assert window.files.export(out)
    written, read = read_document(out), read_document(captions)
    assert [(c.start, c.end) for c in written.cues] == [(c.start, c.end) for c in read.cues]
    assert written.cues[0].text().startswith("Hello")  # sentences capitalised, as exports do
    assert captions.read_bytes() == (FIXTURES / "asr.scc").read_bytes()
