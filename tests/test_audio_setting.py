"""What the suggestions are read from, said once (``--audio text|timings|listen``, its older
spellings, the editor's listening pass): as the user asks it, and the text read once."""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from app.services.analysis import Analysis, AnalysisRequest, AudioUse, analyse
from app.services.model import DEFAULT_MODEL, Punctuator
from app.store.project import Project
from tests.conftest import SAMPLE, requires_ffmpeg, sample_opening
from tests.test_cli import punctum

SHIPPED = (DEFAULT_MODEL / "weights.safetensors").exists()


def test_what_contradicts_the_audio_asked_for_is_a_one_line_usage_error(tmp_path: Path) -> None:
    captions, media = str(SAMPLE / "sample.srt"), str(SAMPLE / "sample.mp4")
    timings = str(SAMPLE / "sample.words.json")
    cases = [
        (("--audio", "text", "--media", media), "--media and --audio text contradict each other"),
        (("--no-audio", "--media", media), "--media and --no-audio contradict each other"),
        (("--timings", timings, "--audio", "text"), "--timings and --audio text contradict each other"),
        (("--audio", "listen"), "--audio listen needs --media: there is nothing to listen to"),
        (("--listen",), "--listen needs --media: there is nothing to listen to"),
        (("--no-audio", "--listen"), "argument --listen: not allowed with argument --no-audio"),
        (("--audio", "timings", "--no-listen"), "argument --no-listen: not allowed with argument --audio"),
        (("--audio", "heard"), "invalid choice: 'heard'"),
    ]
    for options, message in cases:
        result = punctum("punctuate", captions, *options, "-o", str(tmp_path / "out.srt"))
        assert result.returncode == 2, (options, result.stderr)
        assert message in result.stderr and result.stderr.count("\n") == 1, (options, result.stderr)
    assert not (tmp_path / "out.srt").exists()
    batch = punctum(
        "batch", str(tmp_path), "--project", str(tmp_path / "p.punctum"), "--no-audio", "--listen"
    )
    assert batch.returncode == 2 and "not allowed with argument --no-audio" in batch.stderr
    assert not (tmp_path / "p.punctum").exists()


@requires_ffmpeg
def test_no_listen_still_works_and_reads_as_audio_timings(tiny_model: Path, tmp_path: Path) -> None:
    captions, media = sample_opening(tmp_path)
    runs = []
    for options in (["--no-listen"], ["--audio", "timings"]):
        suggestions = tmp_path / f"{options[-1]}.json"
        result = punctum(
            "punctuate", str(captions), "--media", str(media), "--model", str(tiny_model), "--apply", "all",
            "--suggestions", str(suggestions), *options,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        runs.append((result.stdout, result.stderr, json.loads(suggestions.read_text())))
    assert runs[0] == runs[1]
    # The media was measured, not listened to; this model reads the text alone, and says so.
    _, stderr, found = runs[0]
    assert found["evidence"] == "text" and "reads text only" in stderr


@requires_ffmpeg
def test_batch_audio_text_ignores_media_and_timings_and_timings_uses_them(
    tiny_model: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("sample.srt", "sample.mp4", "sample.words.json"):
        shutil.copy(SAMPLE / name, folder / name)
    stored = {}
    for audio in ("text", "timings"):
        project = tmp_path / f"{audio}.punctum"
        result = punctum(
            "batch", str(folder), "--project", str(project), "--model", str(tiny_model), "--workers", "1",
            "--audio", audio,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        with sqlite3.connect(project) as connection:
            report = json.loads(connection.execute("SELECT report FROM files").fetchone()[0])
        with Project(project) as opened:
            measures = opened.gap_measures(opened.files()[0].id)
        stored[audio] = report, measures
    text_report, text_measures = stored["text"]
    assert text_report["evidence"] == "text" and "timings" not in text_report and text_measures is None
    timed_report, timed_measures = stored["timings"]
    assert timed_report["timings"]["aligned"] > 0 and timed_measures is not None


class CountingPunctuator(Punctuator):
    """The shipped model, counting the times it reads a text."""

    def __init__(self) -> None:
        super().__init__()
        self.readings = 0

    def probabilities(self, *args: Any, **kwargs: Any) -> Any:
        self.readings += 1
        return super().probabilities(*args, **kwargs)


def _rows(analysis: Analysis) -> list[tuple[Any, ...]]:
    return [(s.gap, s.mark, s.casing, s.confidence, s.evidence, s.readings) for s in analysis.suggestions]


@requires_ffmpeg
@pytest.mark.skipif(not SHIPPED, reason="the shipped model is not in models/")
def test_listening_after_the_text_model_reuses_its_reading(tmp_path: Path) -> None:
    # As the editor does: the text model's suggestions first, then the recogniser's along the words.
    captions, media = sample_opening(tmp_path)
    punctuator = CountingPunctuator()
    request = AnalysisRequest.from_file(captions, media=media, language="en", audio=AudioUse.TIMINGS)
    shown = analyse(request, punctuator)
    assert punctuator.readings == 1 and shown.report.evidence != "heard"
    listening = replace(request, audio=AudioUse.LISTEN)
    heard = analyse(listening, punctuator, reading=shown.reading)
    assert punctuator.readings == 1 and heard.report.evidence == "heard"
    # The same suggestions as listening from the start, which reads the text itself.
    assert _rows(heard) == _rows(analyse(listening, punctuator))
    assert punctuator.readings == 2
    # A reading of other captions is not taken for these.
    other = AnalysisRequest.from_file(SAMPLE / "sample.srt", language="en", audio=AudioUse.TEXT)
    assert _rows(analyse(other, punctuator, reading=shown.reading)) == _rows(analyse(other, punctuator))
    assert punctuator.readings == 4


def test_listening_is_two_passes_decided_by_the_request_not_the_editor() -> None:
    """With media and the recogniser asked for, a person first gets the text model's reading with
    the timings, then the listening one; without media, or not asked to listen, one pass."""
    captions = (SAMPLE / "sample.srt").read_bytes()
    listening = AnalysisRequest(captions, "srt", SAMPLE / "sample.srt", media=SAMPLE / "sample.mp4")
    first, second = listening.passes()
    assert (first.audio, first.listens, second) == (AudioUse.TIMINGS, False, listening)
    for alone in (replace(listening, media=None), replace(listening, audio=AudioUse.TIMINGS)):
        assert alone.passes() == (alone,) and not alone.listens


@requires_ffmpeg
@pytest.mark.skipif(not SHIPPED, reason="the shipped model is not in models/")
def test_captions_past_the_end_of_the_media_are_told_once_though_both_readers_notice(tmp_path: Path) -> None:
    from tests.conftest import cut_media

    short = cut_media(SAMPLE / "sample.mp4", tmp_path / "short.wav", 20)
    request = AnalysisRequest.from_file(SAMPLE / "sample.srt", media=short, language="en")
    warnings = analyse(request, Punctuator()).report.warnings
    assert [w for w in warnings if "past the end of the media" in w] == [
        next(w for w in warnings if w.startswith("the captions run to"))
    ]
