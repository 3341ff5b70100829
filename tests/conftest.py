from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# Editor tests run without a display; set before Qt is first imported.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLE = ROOT / "resources" / "sample"
#: The shared data folder beside the repository; PUNCTUM_DATA points elsewhere.
SHARED_DATA = Path(os.environ.get("PUNCTUM_DATA", ROOT.parent / "shared" / "data"))


def shared_data(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not present: {path}")
    return path


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


#: Decoding video needs ffmpeg on the system (set-up installs it where apt allows).
requires_ffmpeg = pytest.mark.skipif(
    shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None, reason="ffmpeg is not installed"
)


@pytest.fixture
def sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bundled sample copied to a scratch folder, with autosaves kept there too."""
    monkeypatch.setenv("PUNCTUM_DATA_DIR", str(tmp_path / "data"))
    folder = tmp_path / "sample"
    shutil.copytree(SAMPLE, folder)
    return folder
