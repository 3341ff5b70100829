"""The editor window, driven by the keyboard as an editor would (offscreen Qt, the real model)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("PySide6.QtWidgets")

from PySide6.QtCore import QSettings, Qt

from app.core.model import Source, Status
from app.services.review import ReviewSession
from app.ui.models import PROBLEM_COLOUR, CueModel
from app.ui.window import MainWindow
from tests.conftest import ROOT, SAMPLE, requires_ffmpeg

ANALYSIS_TIMEOUT = 240_000  # ms: the first analysis starts the model in a fresh process


@pytest.fixture
def window(qtbot, tmp_path: Path, sample: Path):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
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
    assert window.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    session = window.session
    assert session is not None
    sources = {s.source for s in session.document.suggestions}
    assert {Source.REFERENCE, Source.MODEL} <= sources
    assert window.suggestion_view.model().rowCount() == len(session.document.suggestions)
    assert "pending" in window.counts_label.text()

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
    # The counts follow the document through undo and redo.
    assert window.counts_label.text() == counts_after_change
    accepted = sum(s.status is Status.ACCEPTED for s in session.document.suggestions)
    assert accepted >= 1 and f"accepted {accepted}" in window.counts_label.text()

    # Export: timings exactly as they were, the decided marks in, sentences capitalised.
    out = sample / "reviewed.srt"
    assert window.export(out)
    original = (sample / "sample.srt").read_text().split("\n")
    exported = out.read_text().split("\n")
    assert [line for line in exported if "-->" in line] == [line for line in original if "-->" in line]
    assert exported[2].startswith("Hello")
    words = [w for w in " ".join(exported).split() if w.strip("?.,!:").isalpha()]
    assert any(word.endswith("?") for word in words)
    assert (sample / "sample.srt").read_text() == (SAMPLE / "sample.srt").read_text()  # input untouched


def test_accept_above_threshold_is_one_undoable_step(qtbot, window: MainWindow, sample: Path) -> None:
    window.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    session = window.session
    assert session is not None
    window.accept_above(0.9)
    assert session.counts()["accepted"] > 0
    # Every sure suggestion is decided: accepted, or turned down by a surer one for its gap.
    assert not [s for s in session.document.suggestions if s.confidence >= 0.9 and s.status is Status.PENDING]
    press(qtbot, window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert session.counts()["accepted"] == 0
    assert window.actions_by_name["redo"].text().replace("&", "").startswith("Redo Accept")


@requires_ffmpeg
def test_media_gives_a_waveform_with_pauses(qtbot, window: MainWindow, sample: Path) -> None:
    window.open_captions(sample / "sample.srt", sample / "sample.mp4", sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    waveform = window.waveform.waveform
    assert waveform is not None
    assert 61 < waveform.duration < 63
    # The sample's voice pauses 0.8 s between paragraphs; the longest pauses are found.
    assert max(end - start for start, end in waveform.pauses) >= 0.6
    assert window.media.path is not None
    evidence = {s.evidence for s in window.session.document.suggestions if s.source is Source.MODEL}
    assert "audio" in evidence


def test_caption_checks_flag_fast_cues(qtbot, window: MainWindow, sample: Path) -> None:
    window.open_captions(sample / "sample.srt", None, None)
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
    window.open_captions(broken)
    assert "cannot be opened" in wait_for_error(qtbot, window)
    assert window.pages.currentIndex() == 0  # still on the welcome screen, usable
    assert not window.open_paths([tmp_path / "notes.docx"])


def test_missing_media_is_reported_and_review_goes_on(qtbot, window: MainWindow, sample: Path) -> None:
    window.open_captions(sample / "sample.srt", sample / "gone.mp4", sample / "reference.txt")
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
    window.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    first = window.current_id
    press(qtbot, window, Qt.Key.Key_A)  # no longer accept
    assert window.session.document.suggestion(first).status is Status.PENDING
    press(qtbot, window, Qt.Key.Key_Y)
    assert window.session.document.suggestion(first).status is Status.ACCEPTED
    press(qtbot, window, Qt.Key.Key_F1)
    assert window.help.isVisible() and "Y" in window.help.text() and "Accept" in window.help.text()
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
    window.open_captions(sample / "sample.srt", None, None)
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


def test_cancel_stops_the_analysis_and_it_can_be_run_again(qtbot, window: MainWindow, sample: Path) -> None:
    (sample / "sample.mp4").unlink()  # text only, so the model is the slow part
    window.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_open(qtbot, window)
    assert window.cancel_button.isVisible()  # the analysis has started
    qtbot.mouseClick(window.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.worker.busy, timeout=10_000)
    assert window.session is not None and not window.session.analysed
    assert not window.cancel_button.isVisible()
    window.actions_by_name["suggest"].trigger()
    wait_for_suggestions(qtbot, window)
    assert window.session.document.suggestions


def test_a_reference_waits_for_the_analysis_and_failures_after_it_get_a_dialog(
    qtbot, window: MainWindow, sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.services.review import ReviewSession

    # Storing the result can fail after the work itself went well (a full disk, say).
    def full_disk(*_: object, **__: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ReviewSession, "store_analysis", full_disk)
    (sample / "sample.mp4").unlink()  # text only, so the model is the slow part
    window.open_captions(sample / "sample.srt", None, None)
    wait_for_open(qtbot, window)
    assert window.worker.busy
    # The analysis replaces the suggestions when it ends: a reference opened now would have its
    # decisions point at the model's suggestions instead.
    window.add_reference(sample / "reference.txt")
    assert "Not while suggestions are being made" in wait_for_error(qtbot, window)
    window.last_error = None
    qtbot.waitUntil(lambda: not window.worker.busy, timeout=ANALYSIS_TIMEOUT)
    assert "No space left on device" in wait_for_error(qtbot, window)  # a dialog, not a silent stop
    # The background process had stored the suggestions: the window shows them without a reopen.
    assert window.session is not None and window.session.document.suggestions
    assert window.suggestion_model is not None and window.suggestion_model.rowCount() > 0

    # A project saved under a name without a suffix gets one, so it can be opened again.
    window.save_project_as(tmp_path / "my project")
    assert (tmp_path / "my project.punctum").is_file()


def test_lowest_confidence_first_starts_with_the_least_sure(qtbot, window: MainWindow, sample: Path) -> None:
    window.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    wait_for_suggestions(qtbot, window)
    session = window.session
    press(qtbot, window, Qt.Key.Key_L)
    least = min(s.confidence for s in session.document.suggestions if s.status is Status.PENDING)
    assert session.document.suggestion(window.current_id).confidence == least
    press(qtbot, window, Qt.Key.Key_J)
    assert session.document.suggestion(window.current_id).confidence >= least


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
