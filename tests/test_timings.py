"""Word timing files (CTM, JSON word lists) attached to caption words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.audio.timing import TimingSource, word_timings
from app.formats import FormatError, read_document
from app.formats.timings import read_timings
from app.services.documents import attach_timing_file
from tests.conftest import SAMPLE
from tests.test_cli import punctum


def sample_ctm(path: Path, drop: set[int] = frozenset(), rename: dict[int, str] | None = None) -> Path:
    """The sample's word list written as CTM, with some words left out or misrecognised."""
    text = SAMPLE.joinpath("sample.words.json").read_text()
    items = json.loads(text) if text.lstrip().startswith("[") else [json.loads(x) for x in text.splitlines()]
    lines = [";; made from sample.words.json"]
    for index, item in enumerate(items):
        if index in drop:
            continue
        word = (rename or {}).get(index, item["word"])
        start, duration = item["start"] / 1000, (item["end"] - item["start"]) / 1000
        lines.append(f"talk 1 {start:.2f} {duration:.2f} {word} 0.9")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_json_word_list_times_every_word() -> None:
    document = read_document(SAMPLE / "sample.srt")
    report = attach_timing_file(document, SAMPLE / "sample.words.json")
    assert report["aligned"] == document.word_count == 178
    timings = word_timings(document)
    assert all(t.source is TimingSource.GIVEN for t in timings)
    # "hello" ends at 0.72 s and "and" starts at 1.10 s: a pause of 0.38 s after the first word.
    assert timings[0].pause_after == pytest.approx(0.38, abs=0.01)


def test_ctm_with_missing_and_misrecognised_words(tmp_path: Path) -> None:
    ctm = sample_ctm(tmp_path / "talk.ctm", drop={3}, rename={5: "mapel"})
    document = read_document(SAMPLE / "sample.srt")
    report = attach_timing_file(document, ctm)
    assert report["timed_words"] == 177
    assert report["interpolated"] >= 1  # "the" (word 4) was missing: placed between its neighbours
    words = list(document.words())
    assert words[3].start is not None and words[2].end <= words[3].start <= words[4].start
    assert all(w.start is not None for w in words)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("talk 1 0.5\n", "needs"),
        ("talk 1 zero 0.3 hello\n", "not a number"),
        (";; only a comment\n", "no timed words"),
    ],
)
def test_bad_ctm_is_one_clear_error(tmp_path: Path, content: str, reason: str) -> None:
    path = tmp_path / "bad.ctm"
    path.write_text(content)
    with pytest.raises(FormatError, match=reason):
        read_timings(path)


def test_punctuate_with_timings_uses_them(tmp_path: Path) -> None:
    out = tmp_path / "suggestions.json"
    result = punctum(
        "punctuate",
        str(SAMPLE / "sample.srt"),
        "--timings",
        str(SAMPLE / "sample.words.json"),
        "--suggestions",
        str(out),
        "--language",
        "en",
        "-o",
        str(tmp_path / "out.srt"),
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["evidence"] == "timing"
    bad = punctum("punctuate", str(SAMPLE / "sample.srt"), "--timings", str(tmp_path / "none.ctm"))
    assert bad.returncode == 3 and "none.ctm" in bad.stderr and "Traceback" not in bad.stderr
