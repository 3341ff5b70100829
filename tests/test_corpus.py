"""The 360 real-world SRT/VTT files of the shared data: each loads or raises FormatError."""

from __future__ import annotations

from tests.conftest import shared_data
from tests.corpus import caption_files, survey


def test_every_real_world_file_loads_or_is_rejected_cleanly() -> None:
    root = shared_data("subtitles")
    report = survey(root)  # any exception other than FormatError fails here
    assert sum(e["loaded"] + e["rejected"] for e in report.values()) == len(caption_files(root)) == 360
    loaded = sum(e["loaded"] for e in report.values())
    assert loaded >= 330
    for source, entry in report.items():
        for item in entry["normalised"]:
            # The one documented normalisation: mixed line endings are written as the commonest one.
            assert any("mixed line endings" in w for w in item["warnings"]), (source, item)


def test_whisper_word_level_vtt_gives_word_timings() -> None:
    from app.formats import read_document

    root = shared_data("subtitles", "whisper-timestamped")
    files = sorted(root.rglob("*.words.vtt"))
    timed = 0
    for path in files:
        document = read_document(path)
        words = list(document.words())
        if words and all(w.start is not None for w in words):
            timed += 1
            assert all(w.start <= w.end for w in words if w.end is not None)  # type: ignore[operator]
    assert timed >= 1
