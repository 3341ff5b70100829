"""What a person sees of the editor at common screen sizes: the key sheet, the review list's state
at a glance, and menus and dialogs reached by keyboard (offscreen Qt, the real model)."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("PySide6.QtWidgets")

from PySide6.QtCore import QPoint, QRect, QSettings, Qt
from PySide6.QtWidgets import QAbstractButton, QDialog, QLabel, QMenu, QTableView, QWidget

from app.core.model import Status
from app.ui.dialogs import (
    LimitsDialog,
    RecutPreviewDialog,
    ShortcutDialog,
    TriagePolicyDialog,
    dialog_buttons,
)
from app.ui.models import GapModel
from app.ui.shortcuts import COMMANDS, MENUS, saved_keys, saved_limits, saved_policy
from app.ui.window import MainWindow

ANALYSIS_TIMEOUT = 240_000  # ms: the first analysis starts the model in a fresh process


@pytest.fixture
def window(qtbot, tmp_path: Path):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    # The recogniser listens only in test_editor's test about listening (a few seconds a file).
    settings.setValue("model/audio", "timings")
    window = MainWindow(settings=settings)
    qtbot.addWidget(window)
    window.resize(1280, 720)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    yield window
    window.close()


def analysed(qtbot, window: MainWindow, sample: Path) -> None:
    window.files.open_captions(sample / "sample.srt", None, sample / "reference.txt")
    qtbot.waitUntil(
        lambda: window.session is not None and window.session.analysed and not window.worker.busy,
        timeout=ANALYSIS_TIMEOUT,
    )
    assert window.last_error is None, window.last_error


def on_screen(widget: QWidget) -> QRect:
    return QRect(widget.mapToGlobal(QPoint(0, 0)), widget.size())


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
def test_f1_shows_every_key_inside_the_window_on_one_centred_panel(qtbot, window: MainWindow, size) -> None:
    window.resize(*size)
    qtbot.waitUntil(lambda: window.width() == size[0])
    qtbot.keyClick(window, Qt.Key.Key_F1)
    qtbot.waitUntil(window.help.isVisible)
    panel = window.help
    keyed = [c for c in COMMANDS if saved_keys(window.settings)[c.name]]
    listed = window.help.listed()
    assert len(listed) == len(keyed)
    assert ("J", "Next suggestion") in listed and ("K", "Previous suggestion") in listed
    for label in panel.findChildren(QLabel):
        assert label.isVisible()
        where = on_screen(label)
        assert on_screen(window).contains(where), (
            f"{label.text()!r} at {where} is outside {on_screen(window)}"
        )
        # Not cut: every line of its text has the room it asks for.
        assert label.height() >= label.sizeHint().height()
    title = panel.findChild(QLabel, "helpTitle")
    assert abs(on_screen(title).center().x() - on_screen(panel).center().x()) <= 2
    assert abs(on_screen(panel).center().x() - on_screen(window).center().x()) <= 2
    qtbot.keyClick(window.help, Qt.Key.Key_Space)
    assert not window.help.isVisible()


def test_every_menu_opens_with_its_alt_key(qtbot, window: MainWindow) -> None:
    letters = []
    for name, title in MENUS.items():
        letter = title[title.index("&") + 1]
        letters.append(letter.lower())
        menu = next(a.menu() for a in window.menuBar().actions() if a.text() == title)
        assert isinstance(menu, QMenu)
        qtbot.keyClick(window, getattr(Qt.Key, f"Key_{letter.upper()}"), Qt.KeyboardModifier.AltModifier)
        qtbot.waitUntil(menu.isVisible, timeout=3000)
        menu.close()
        qtbot.waitUntil(lambda menu=menu: not menu.isVisible())
        # Inside the menu, each item's Alt key leads to one item only.
        keys = [_mnemonic(a.text()) for a in menu.actions() if not a.isSeparator()]
        assert None not in keys, f"{name}: an item without an Alt key"
        assert len(set(keys)) == len(keys), f"{name}: two items share an Alt key: {keys}"
    assert len(set(letters)) == len(letters)


def test_every_dialog_button_and_field_has_an_alt_key(qtbot, window: MainWindow) -> None:
    dialogs: list[QDialog] = [
        ShortcutDialog(saved_keys(window.settings), window),
        LimitsDialog(saved_limits(window.settings), window),
        TriagePolicyDialog(saved_policy(window.settings), window),
        RecutPreviewDialog([], [], "cues re-cut 0 -> 0", parent=window),
    ]
    for dialog in dialogs:
        qtbot.addWidget(dialog)
        texts = [b.text() for b in dialog.findChildren(QAbstractButton) if b.text()]
        texts += [label.text() for label in dialog.findChildren(QLabel) if label.buddy() is not None]
        keys = [_mnemonic(text) for text in texts]
        assert None not in keys, f"{dialog.windowTitle()}: {texts}"
        assert len(set(keys)) == len(keys), f"{dialog.windowTitle()}: two share an Alt key: {texts}"
    welcome = [b.text() for b in window.pages.widget(0).findChildren(QAbstractButton)]
    assert welcome and all(_mnemonic(text) for text in welcome)
    menu_letters = {_mnemonic(title) for title in MENUS.values()}
    assert not menu_letters & {_mnemonic(text) for text in welcome}, "a button's Alt key opens a menu"


def test_a_dialog_button_row_names_each_button_with_its_alt_key(qtbot) -> None:
    from PySide6.QtWidgets import QDialogButtonBox, QWidget

    parent = QWidget()
    qtbot.addWidget(parent)
    box = dialog_buttons(parent, QDialogButtonBox.StandardButton.Ok, QDialogButtonBox.StandardButton.Cancel)
    assert sorted(b.text() for b in box.buttons()) == ["&Cancel", "&OK"]


def test_the_queue_shows_each_rows_state_and_done_rows_look_done(
    qtbot, window: MainWindow, sample: Path
) -> None:
    analysed(qtbot, window, sample)
    model = window.gap_model
    assert model is not None and window.session is not None
    view = window.gap_view
    # Every column in view at 1280 px, none past the list's right edge.
    header = view.horizontalHeader()
    for column in range(model.columnCount()):
        assert header.sectionViewportPosition(column) + header.sectionSize(column) <= view.viewport().width()
    assert view.horizontalScrollBar().maximum() == 0
    # And the transcript beside it, not squeezed out (it once opened at no width at all).
    transcript = window.findChild(QTableView, "transcript")
    assert transcript is not None and transcript.isVisible() and transcript.width() >= window.width() // 3
    titles = [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())]
    assert "Reference" in titles and "Model (its confidence)" in titles
    first = window.current_id
    assert first is not None
    row = model.row_of(first)
    assert row is not None
    pending_look = _look(model, row)
    qtbot.keyClick(window, Qt.Key.Key_A)  # accept: the row stays in the list
    assert window.session.document.suggestion(first).status is Status.ACCEPTED
    row = model.row_of(first)
    assert row is not None
    done_look = _look(model, row)
    assert done_look["state"] == "✓" and pending_look["state"] != "✓"
    assert done_look["foreground"] != pending_look["foreground"]
    assert model.data(model.index(row, GapModel.STATE), Qt.ItemDataRole.ToolTipRole) == "Accepted by you"
    # A row turned down no longer looks like one accepted, and shows what stands at its gap, not
    # the proposal turned down ("really? yes[,] you can" after "." had been put there).
    turned = window.current_id
    assert turned is not None and turned != first
    qtbot.keyClick(window, Qt.Key.Key_X)
    row = model.row_of(turned)
    assert row is not None and _look(model, row)["state"] == "✗"
    assert model.data(model.index(row, GapModel.STATE), Qt.ItemDataRole.ToolTipRole) == "Turned down by you"
    gap = model.gap(row)
    word = window.session.document.word(gap.index)
    if gap.marks:
        assert f"[{word.mark.strip() or 'no mark'}]" in model.data(model.index(row, GapModel.CONTEXT))
    row = model.row_of(first)
    assert row is not None
    # The model column shows the model's own confidence, not the surest source's.
    text = model.data(model.index(row, GapModel.MODEL))
    ours = [s for s in model.gap(row).suggestions if s.source.value == "model"]
    if ours:
        assert re.search(r"\d\.\d\d$", text)
        assert f"{max(s.confidence for s in ours):.2f}" in text


def _look(model: GapModel, row: int) -> dict[str, object]:
    word = model.index(row, GapModel.CONTEXT)
    foreground = model.data(word, Qt.ItemDataRole.ForegroundRole)
    return {
        "state": model.data(model.index(row, GapModel.STATE)),
        "foreground": foreground.name() if foreground is not None else None,
    }


def _mnemonic(text: str) -> str | None:
    """The letter after a single "&" (a "&&" is a literal ampersand)."""
    found = re.search(r"(?<!&)&([^&])", text)
    return found.group(1).lower() if found else None


requires_transcription = pytest.mark.skipif(
    importlib.util.find_spec("faster_whisper") is None, reason="needs the transcribe extra"
)


def _transcribe_when_offered(window: MainWindow, *paths: Path) -> str:
    """Drop ``paths`` (a video without captions) on the window and take its offer to transcribe;
    the offer's text."""
    from PySide6.QtWidgets import QApplication, QMessageBox

    window.files.open_paths(list(paths))
    offer = next(w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible())
    text = offer.text()
    next(b for b in offer.buttons() if b.text() == "&Transcribe").click()
    return text


@requires_transcription
def test_a_video_without_captions_is_offered_for_transcription_then_reviewed(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    from tests.conftest import SAMPLE, cut_media

    media = cut_media(SAMPLE / "sample.mp4", tmp_path / "talk.mp4", 8)
    reference = tmp_path / "talk.ref.txt"  # dropped with the video: carried over after transcription
    shutil.copy(SAMPLE / "reference.txt", reference)
    assert "no captions" in _transcribe_when_offered(window, media, reference)
    qtbot.waitUntil(lambda: window.session is not None and window.session.analysed, timeout=ANALYSIS_TIMEOUT)
    assert window.last_error is None, window.last_error
    assert window.session.entry.captions_path == tmp_path / "talk.vtt"
    assert window.session.entry.media_path == media
    assert window.session.has_reference
    words = list(window.session.document.words())
    assert len(words) > 10 and all(w.start is not None for w in words)
    assert window.gap_model is not None and window.gap_model.rowCount() > 0


@requires_transcription
def test_cancelling_a_transcription_stops_the_background_process_at_once_and_writes_nothing(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    import time

    from tests.conftest import SAMPLE

    media = tmp_path / "talk.mp4"
    shutil.copy(SAMPLE / "sample.mp4", media)
    _transcribe_when_offered(window, media)
    qtbot.waitUntil(lambda: window.progress_label.text().startswith("Transcribing"), timeout=ANALYSIS_TIMEOUT)
    asked = time.monotonic()
    window.worker.cancel_all()
    qtbot.waitUntil(lambda: not window.worker.busy, timeout=10_000)
    assert time.monotonic() - asked < 3  # not after the whole minute of speech is decoded
    assert "cancelled" in window.statusBar().currentMessage() and window.last_error is None
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("talk")) == ["talk.mp4"]
