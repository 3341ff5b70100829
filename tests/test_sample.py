"""The bundled sample that `make run`, the editor and later tests use."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from app.formats import read_document
from tests.conftest import SAMPLE


def test_sample_is_small() -> None:
    assert sum(p.stat().st_size for p in SAMPLE.iterdir()) < 2 * 1024 * 1024


def test_srt_and_vtt_captions_hold_the_same_lowercase_unpunctuated_words() -> None:
    srt = read_document(SAMPLE / "sample.srt")
    vtt = read_document(SAMPLE / "sample.vtt")
    srt_words = [w.rendered() for w in srt.words()]
    assert srt_words == [w.rendered() for w in vtt.words()]
    assert all(w == w.lower() for w in srt_words)
    assert all(w.mark == "" for w in srt.words())
    assert [(c.start, c.end) for c in srt.cues] == [(c.start, c.end) for c in vtt.cues]


def test_vtt_word_timings_match_the_recorded_asr_words() -> None:
    recorded = json.loads((SAMPLE / "sample.words.json").read_text(encoding="utf-8"))
    words = list(read_document(SAMPLE / "sample.vtt").words())
    assert [w.text for w in words] == [r["word"] for r in recorded]
    assert [w.start for w in words] == [r["start"] for r in recorded]


def test_reference_is_punctuated() -> None:
    reference = read_document(SAMPLE / "reference.txt")
    marks = [w.mark for w in reference.words()]
    assert marks.count("?") >= 3
    assert marks.count(",") >= 5


@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="ffprobe not installed")
def test_video_has_audio_and_video_streams() -> None:
    probe = subprocess.run(
        [
            "ffprobe",
            "-v",
            "error",
            "-show_entries",
            "stream=codec_type",
            "-of",
            "csv=p=0",
            str(SAMPLE / "sample.mp4"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert sorted(probe.stdout.split()) == ["audio", "video"]
