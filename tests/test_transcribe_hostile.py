"""``punctum transcribe``, ``punctuate --media`` and ``batch --transcribe`` tried as a hostile user
would: damaged and oddly named media, outputs that clash with the user's files, a full disk,
Ctrl+C at any moment, two runs at once, odd language codes and model folders. Each case is what
a user sees: the exit status, one line on stderr, and what is (not) left on disk."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("faster_whisper", reason="transcribing needs the transcribe extra")

from app.core.errors import PunctumError
from tests.conftest import ROOT, SAMPLE, cut_media, decoded_audio, run_punctum_here, write_audio

#: The command run in this process (each start of a process would cost its imports again); what
#: needs a process of its own (signals, a second process holding the project) starts one. Runs
#: that are not about the language name it: detecting it costs the recogniser a second pass over
#: the audio, and test_transcribe tries detection.
punctum = run_punctum_here
#: ASR captions of the clip's first seconds.
CAPTIONS = "1\n00:00:00,000 --> 00:00:04,000\nhello and welcome to the maple street repair cafe\n"


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample video's first 4 seconds: "Hello, and welcome to the Maple Street repair cafe"."""
    return cut_media(SAMPLE / "sample.mp4", tmp_path_factory.mktemp("clip") / "talk.mp4", 4)


@pytest.fixture(scope="module")
def transcriber():  # type: ignore[no-untyped-def]
    from app.ml.transcriber import Transcriber

    return Transcriber()


def test_a_cut_mp3_is_refused_as_damaged_by_transcribe_and_punctuate(tmp_path: Path) -> None:
    # An encoder's MP3 states its length (Xing/Info header): cut short, it decodes far shorter.
    whole = write_audio(tmp_path / "whole.mp3", decoded_audio(SAMPLE / "sample.mp4", 20), "libmp3lame")
    cut = tmp_path / "talk.mp3"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 4])
    whole.unlink()
    (tmp_path / "talk.srt").write_text(CAPTIONS, encoding="utf-8")
    before = set(tmp_path.iterdir())
    transcribed = punctum("transcribe", str(cut), "-o", str(tmp_path / "out.vtt"))
    assert transcribed.returncode == 3 and "truncated" in _one_line(transcribed), transcribed.stderr
    punctuated = punctum(
        "punctuate", str(tmp_path / "talk.srt"), "--media", str(cut), "-o", str(tmp_path / "out.srt")
    )
    assert punctuated.returncode == 3 and "truncated" in _one_line(punctuated), punctuated.stderr
    assert set(tmp_path.iterdir()) == before, "nothing written"


def test_media_named_like_an_option_is_read_as_the_file_it_is(clip: Path, tmp_path: Path) -> None:
    shutil.copy(clip, tmp_path / "-talk.mp4")
    shutil.copy(clip, tmp_path / "-o")
    (tmp_path / "talk.srt").write_text(CAPTIONS, encoding="utf-8")
    result = punctum("transcribe", "./-talk.mp4", "-o", "talk.vtt", "--language", "en", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "welcome" in (tmp_path / "talk.vtt").read_text(encoding="utf-8").lower()
    punctuated = punctum(
        "punctuate", "talk.srt", "--media", "./-o", "--no-listen", "-o", "out.srt", cwd=tmp_path
    )
    assert punctuated.returncode == 0, punctuated.stderr
    assert (tmp_path / "out.srt").is_file()


def test_word_times_never_replace_a_file_they_do_not_belong_to(clip: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mywords.words.json"
    mine.write_text('{"my": "notes"}\n', encoding="utf-8")
    refused = punctum("transcribe", str(clip), "-o", str(tmp_path / "mywords.srt"))
    assert refused.returncode == 3 and "mywords.words.json exists" in _one_line(refused)
    assert mine.read_text(encoding="utf-8") == '{"my": "notes"}\n'
    assert not (tmp_path / "mywords.srt").exists()
    # Captions named with -o are replaced as asked, and their own word times with them.
    for _ in range(2):
        again = punctum("transcribe", str(clip), "-o", str(tmp_path / "talk.srt"), "--language", "en")
        assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "talk.words.json").read_text(encoding="utf-8"))


def test_a_full_disk_leaves_neither_the_captions_nor_their_word_times(
    clip: Path, tmp_path: Path, transcriber, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from app.services.transcribe import TranscriptOptions, transcribe_media

    done = transcribe_media(clip, tmp_path / "first.srt", transcriber, TranscriptOptions("en"))
    assert done.words_file is not None
    room = done.output.stat().st_size + done.words_file.stat().st_size - 1  # one byte short
    synced = 0
    real_fsync = os.fsync

    def fsync(fd: int) -> None:  # the disk fills as files reach it
        nonlocal synced
        synced += os.fstat(fd).st_size
        if synced > room:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(PunctumError, match="No space left"):
        transcribe_media(clip, tmp_path / "second.srt", transcriber, TranscriptOptions("en"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.srt", "first.words.json"]


@pytest.mark.parametrize(("background", "after"), [(False, 0.1), (True, 0.5), (True, 1.5)])
def test_sigint_stops_transcribe_at_any_moment_with_one_line(
    background: bool, after: float, clip: Path, tmp_path: Path
) -> None:
    """Ctrl+C during the start-up imports, and SIGINT to a run a shell put in the background
    (which starts with SIGINT ignored) before the model has loaded."""

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    process = subprocess.Popen(
        [sys.executable, "-m", "app", "transcribe", str(clip), "-o", str(tmp_path / "out.vtt")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ignore_sigint if background else None,
    )
    if not background:
        # A Ctrl+C before Punctum's own code runs is the interpreter's: before it has taken the
        # signal it is killed as any program, and during its site import (the installed
        # packages' path files) it ends with "Fatal Python error" or a traceback of its own. On
        # a loaded machine that can take longer than ``after``: wait for Punctum's imports.
        _wait_for_sigint_handler(process.pid)
        _wait_for_a_library(process.pid, "numpy")
    time.sleep(after)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, (process.returncode, out, err)
    assert err.strip() == "punctum: interrupted", err
    assert not (tmp_path / "out.vtt").exists()


def _wait_for_sigint_handler(pid: int) -> None:
    """Until the process catches SIGINT (its ``SigCgt`` mask in /proc), for at most 30 s."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        caught = next((line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), "0")
        if int(caught, 16) & (1 << (signal.SIGINT - 1)):
            return
        time.sleep(0.01)


def _wait_for_a_library(pid: int, name: str) -> None:
    """Until the process has mapped a compiled module of ``name`` (its ``maps`` in /proc), for at
    most 30 s: its own start-up imports are then under way."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if f"/{name}/" in Path(f"/proc/{pid}/maps").read_text():
                return
        except OSError:
            return
        time.sleep(0.01)


def test_ctrl_c_that_a_library_reports_as_its_own_error_is_still_an_interruption(
    clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CTranslate2 interrupted while it initialises raises "ImportError: initialization failed",
    which read as "transcribing needs faster-whisper" (exit 3), and the import machinery can
    raise a TypeError: whatever a library makes of Ctrl+C, the run says it was interrupted."""
    import types

    def interrupted_import(name: str) -> None:
        try:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl+C, handled as the command handles it
            time.sleep(5)
        except KeyboardInterrupt as error:
            raise ImportError("initialization failed") from error

    library = types.ModuleType("faster_whisper")
    library.__getattr__ = interrupted_import  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "faster_whisper", library)
    result = run_punctum_here("transcribe", str(clip), "-o", str(tmp_path / "out.vtt"))
    assert (result.returncode, result.stderr) == (130, "punctum: interrupted\n")
    assert not (tmp_path / "out.vtt").exists()


def test_batch_counts_and_lists_media_it_cannot_transcribe_as_failed(clip: Path, tmp_path: Path) -> None:
    folder = tmp_path / "talks"
    folder.mkdir()
    shutil.copy(clip, folder / "talk.mp4")
    (folder / "empty.mp4").write_bytes(b"")
    (folder / "noise.mp3").write_bytes(bytes(range(256)) * 64)
    (folder / "text.mp4").write_text("not a video\n", encoding="utf-8")
    project = tmp_path / "talks.punctum"
    # Counting failures is the point; listening along the words is test_listener's.
    command = ("batch", str(folder), "--project", str(project), "--transcribe", "--no-listen")
    # A language with its region is read as the language, as everywhere else.
    first = punctum(*command, "--language", "en-GB")
    assert first.returncode == 3, first.stderr  # files failed
    assert "1 processed, 3 failed" in first.stdout, first.stdout
    assert "unpaired" not in first.stderr, first.stderr
    status = punctum("status", str(project), "--json")
    rows = {row["file"]: row for row in json.loads(status.stdout)}
    assert rows["talk"]["state"] == "done"
    for stem in ("empty", "noise", "text"):
        assert rows[stem]["state"] == "failed" and "not transcribed" in rows[stem]["reason"], rows
    # Mended, a medium is transcribed and processed on the next run, with its media.
    shutil.copy(clip, folder / "empty.mp4")
    again = punctum(*command, "--language", "en")
    assert again.returncode == 3, again.stderr
    assert "1 processed, 2 failed" in again.stdout, again.stdout
    rows = {row["file"]: row for row in json.loads(punctum("status", str(project), "--json").stdout)}
    assert rows["empty"]["state"] == "done", rows


def test_a_second_batch_on_the_same_project_stops_before_any_work(clip: Path, tmp_path: Path) -> None:
    folder = tmp_path / "talks"
    folder.mkdir()
    shutil.copy(clip, folder / "t1.mp4")
    project = tmp_path / "talks.punctum"
    told = tmp_path / "first.err"
    batch = (
        "batch",
        str(folder),
        "--project",
        str(project),
        "--transcribe",
        "--no-listen",
        "--language",
        "en",
    )
    with told.open("w") as errors:
        first = subprocess.Popen(
            [sys.executable, "-m", "app", *batch],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
        try:
            deadline = time.monotonic() + 60
            while "transcribing" not in told.read_text() and time.monotonic() < deadline:
                time.sleep(0.1)
            began = time.monotonic()
            second = punctum(*batch)
            seconds = time.monotonic() - began
        finally:
            assert first.wait(timeout=180) == 0, told.read_text()
    assert second.returncode == 3 and "in use by" in _one_line(second), second.stderr
    assert "transcribing" not in second.stderr and seconds < 20


def test_a_language_with_a_region_is_read_as_the_language(clip: Path, tmp_path: Path) -> None:
    result = punctum("transcribe", str(clip), "-o", str(tmp_path / "out.vtt"), "--language", "en-US")
    assert result.returncode == 0, result.stderr
    assert "(en)" in result.stdout


@pytest.mark.parametrize(
    ("option", "status", "said"),
    [("--language", 3, "not a language code"), ("--model", 2, "name a model")],
)
def test_an_empty_language_or_model_is_refused_not_taken_for_the_default(
    option: str, status: int, said: str, clip: Path, tmp_path: Path
) -> None:
    result = punctum("transcribe", str(clip), "-o", str(tmp_path / "out.vtt"), option, "")
    assert result.returncode == status and said in _one_line(result), result.stderr
    assert not (tmp_path / "out.vtt").exists()


def test_a_folder_or_a_pipe_is_told_as_such(tmp_path: Path) -> None:
    from app.audio.decode import probe
    from app.audio.errors import AudioError

    folder = tmp_path / "talk.mp4"
    folder.mkdir()
    result = punctum("transcribe", str(folder), "-o", str(tmp_path / "out.vtt"))
    assert result.returncode == 3 and "is a folder" in _one_line(result)
    fifo = tmp_path / "fifo.mp4"
    os.mkfifo(fifo)
    result = punctum("transcribe", str(fifo), "-o", str(tmp_path / "out.vtt"))
    assert result.returncode == 3 and "not a regular file" in _one_line(result)
    with pytest.raises(AudioError, match="not a regular file"):  # punctuate --media reads it so
        probe(fifo)
    with pytest.raises(AudioError, match="is a folder"):
        probe(folder)


def test_a_model_folder_with_a_garbage_model_bin_is_not_a_whisper_model(tmp_path: Path) -> None:
    model = tmp_path / "whisper"
    model.mkdir()
    (model / "model.bin").write_bytes(os.urandom(4096))
    (model / "config.json").write_text("{}")
    result = punctum(
        "transcribe", str(SAMPLE / "sample.mp4"), "-o", str(tmp_path / "o.vtt"), "--model", str(model)
    )
    assert result.returncode == 3 and "not a CTranslate2 Whisper model" in _one_line(result), result.stderr


def test_damaged_halves_of_the_installed_model_are_refused_when_joined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.ml import whisper_model

    parts = []
    for number in (1, 2):
        part = tmp_path / f"part{number}" / "data"
        part.mkdir(parents=True)
        (part / f"model.bin.part{number}").write_bytes(os.urandom(1024))
        for name in whisper_model.FILES:
            (part / name).write_text("{}")
        parts.append(part)
    monkeypatch.setattr(whisper_model, "_part_dirs", lambda: parts)
    target = tmp_path / "whisper-base"
    with pytest.raises(whisper_model.WhisperModelError, match="damaged"):
        whisper_model.assemble_default(target)
    assert not target.exists() and not target.with_name(target.name + ".partial").exists()


def test_a_cancel_stops_after_the_window_being_decoded(transcriber, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The whole sample is two windows and more: a cancel during the first decodes no other."""
    from app.services.transcribe import TranscriptOptions, transcribe_media

    decoded = 0
    real = transcriber.model.transcribe

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        segments, info = real(*args, **kwargs)

        def each():  # type: ignore[no-untyped-def]
            nonlocal decoded
            for segment in segments:
                decoded += 1
                yield segment

        return each(), info

    asked = []
    transcriber.model.transcribe = counting
    try:
        with pytest.raises(InterruptedError):
            transcribe_media(
                SAMPLE / "sample.mp4",
                tmp_path / "x.vtt",
                transcriber,
                TranscriptOptions("en"),
                cancelled=lambda: bool(asked),
                progress=asked.append,
            )
    finally:
        del transcriber.model.transcribe
    assert decoded == 2 and len(asked) == 1  # the segment that was being read, then the cancel
    assert list(tmp_path.iterdir()) == []
