"""``--resegment``: the captions cut again at sentence ends by punctuate, batch and export, timed
by the words as heard in the media (estimated from the cues without it), and nothing but the cuts
changed: the same words, marks and capitals as without it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from app.core.cut_checks import cut_checks
from app.formats import parse_document, read_document
from app.services.model import DEFAULT_MODEL
from tests.conftest import SAMPLE, run_punctum_here

SHIPPED = (DEFAULT_MODEL / "weights.safetensors").exists()


def _words(path: Path) -> list[str]:
    """The words of a caption file as written, marks and capitals included, in reading order."""
    return [word.rendered() for word in read_document(path).words()]


@pytest.mark.skipif(not SHIPPED, reason="the shipped model is not in models/")
def test_punctuate_with_the_media_cuts_at_sentence_ends_by_the_words_as_heard(tmp_path: Path) -> None:
    from app.core.audio_use import AudioUse
    from app.services.analysis import AnalysisRequest
    from app.services.captions_export import recut_captions
    from app.services.documents import render
    from app.services.model import Punctuator
    from app.services.punctuate import ApplyPolicy, punctuate_file

    request = AnalysisRequest.from_file(
        SAMPLE / "sample.srt", media=SAMPLE / "sample.mp4", language="en", audio=AudioUse.LISTEN
    )
    outcome = punctuate_file(request, Punctuator(), ApplyPolicy("all"))
    assert outcome.measures is not None and outcome.report.evidence == "heard"
    recut, told = recut_captions(outcome.document, outcome.measures, "en")
    # Nothing but the cuts changed: every word with its mark and capital, in order.
    plain = parse_document(render(outcome.document).encode(), "srt")
    again = parse_document(render(recut).encode(), "srt")
    assert [w.rendered() for w in again.words()] == [w.rendered() for w in plain.words()]
    before, after = cut_checks(plain), cut_checks(again)
    assert (told.before, told.after) == (before, after) and not told.estimated
    # The clock's cuts left most sentences running across cues; the new ones end where they end.
    assert before.share_at_sentence_end < 0.5 <= after.share_at_sentence_end
    assert after.dangling_starts <= 0.1 * after.cues
    assert after.over_lines == after.over_duration == after.short_gaps == 0
    # Each cue starts where its first word is heard (the speaker's own onsets: the words the
    # recogniser placed, 0.5 s of lead-in before the first).
    heard_starts = [m.start_ms for m in outcome.measures]
    first = 0
    for cue in again.cues:
        assert cue.start == heard_starts[first], (cue.index, cue.start, heard_starts[first])
        first += len(cue.words)
    assert 480 <= again.cues[0].start <= 580


def test_punctuate_resegment_without_media_says_the_times_are_estimated(
    tiny_model: Path, tmp_path: Path
) -> None:
    plain, recut = tmp_path / "plain.srt", tmp_path / "recut.srt"
    common = ("punctuate", str(SAMPLE / "sample.srt"), "--model", str(tiny_model), "--apply", "all")
    assert run_punctum_here(*common, "-o", str(plain)).returncode == 0
    report = tmp_path / "suggestions.json"
    result = run_punctum_here(*common, "-o", str(recut), "--resegment", "--suggestions", str(report))
    assert result.returncode == 0, result.stderr
    # The suggestions number the cues as the captions written beside them do.
    cue_of = [number for number, cue in enumerate(read_document(recut).cues, 1) for _ in cue.words]
    suggestions = json.loads(report.read_text(encoding="utf-8"))["suggestions"]
    assert suggestions and all(s["cue"] == cue_of[s["word_index"]] for s in suggestions)
    told = re.search(r"cues re-cut (\d+) -> (\d+); ending at a sentence end", result.stdout)
    assert told is not None and int(told.group(1)) == 24, result.stdout
    assert "times estimated from the cues" in result.stdout
    assert _words(recut) == _words(plain)
    # Every word's estimated time stays inside its own cue: a new cue starts and ends within the
    # span of the old cues its words came from.
    old = read_document(plain)
    owner = [cue for cue in old.cues for _ in cue.words]
    first = 0
    for cue in read_document(recut).cues:
        words = owner[first : first + len(cue.words)]
        assert words[0].start <= cue.start and cue.start < words[-1].end
        first += len(cue.words)
    # To stdout when the captions go there, the summary goes to stderr.
    streamed = run_punctum_here(*common, "--resegment")
    assert streamed.returncode == 0 and "punctum: cues re-cut" in streamed.stderr
    assert [w.rendered() for w in parse_document(streamed.stdout.encode(), "srt").words()] == _words(plain)


def test_resegment_of_plain_text_is_refused_in_one_line(tiny_model: Path, tmp_path: Path) -> None:
    text = tmp_path / "talk.txt"
    text.write_text("hello there how are you\n", encoding="utf-8")
    result = run_punctum_here("punctuate", str(text), "--model", str(tiny_model), "--resegment")
    assert result.returncode == 2
    assert (
        result.stderr.count("\n") == 1 and "plain text" in result.stderr and "Traceback" not in result.stderr
    )


@pytest.mark.skipif(not SHIPPED, reason="the shipped model is not in models/")
def test_a_project_keeps_the_words_heard_times_for_export_to_cut_by(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("sample.srt", "sample.mp4"):  # no timing file: the words' times are heard
        shutil.copy(SAMPLE / name, folder / name)
    project = tmp_path / "p.punctum"
    batch = run_punctum_here("batch", str(folder), "--project", str(project), "--apply", "all", "--resegment")
    assert batch.returncode == 0, batch.stderr
    exported = run_punctum_here("export", str(project), "--out", str(tmp_path / "out"))
    assert exported.returncode == 0, exported.stderr
    assert "cues re-cut 24 ->" in exported.stdout and "estimated" not in exported.stdout
    first = read_document(tmp_path / "out" / "sample.srt").cues[0]
    assert 480 <= first.start <= 580  # where "Hello" is heard, after half a second of lead-in


@pytest.mark.skipif(not SHIPPED, reason="the shipped model is not in models/")
def test_a_batch_cuts_by_the_word_times_file_it_paired(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("sample.srt", "sample.words.json"):  # no media: the timing file gives the times
        shutil.copy(SAMPLE / name, folder / name)
    project = tmp_path / "p.punctum"
    batch = run_punctum_here("batch", str(folder), "--project", str(project), "--apply", "all")
    assert batch.returncode == 0, batch.stderr
    exported = run_punctum_here("export", str(project), "--out", str(tmp_path / "out"), "--resegment")
    assert exported.returncode == 0, exported.stderr
    # It said "times estimated from the cues (no media heard the words)" and cut by the cues.
    assert "cues re-cut 24 ->" in exported.stdout and "estimated" not in exported.stdout
    given = json.loads((SAMPLE / "sample.words.json").read_text(encoding="utf-8"))
    first = read_document(tmp_path / "out" / "sample.srt").cues[0]
    assert (first.start, first.words[0].text) == (given[0]["start"], "Hello")  # the file's ms
