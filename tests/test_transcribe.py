"""``punctum transcribe``: a video without captions becomes captions with word times, through the
real recogniser (Whisper base) on a 9-second clip of the bundled sample, then reviewed as usual."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("faster_whisper", reason="transcribing needs the transcribe extra")

from app.formats import parse_document
from app.formats.cuetext import split_token
from app.formats.timings import read_timings
from app.services.files import FileKind, companions_of
from tests.conftest import SAMPLE, cut_media, run_punctum_here, write_audio

CLIP_SECONDS = 9


punctum = run_punctum_here


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first seconds of the sample's video: "Hello, and welcome to the Maple Street repair cafe…"."""
    return cut_media(SAMPLE / "sample.mp4", tmp_path_factory.mktemp("clip") / "talk.mp4", CLIP_SECONDS)


@pytest.fixture(scope="module")
def transcriber():  # type: ignore[no-untyped-def]
    from app.ml.transcriber import Transcriber

    return Transcriber()


def test_a_video_becomes_vtt_captions_with_word_times_that_punctuate_then_reviews(
    clip: Path, tmp_path: Path
) -> None:
    media = tmp_path / "talk.mp4"
    shutil.copy(clip, media)
    result = punctum("transcribe", str(media), "-o", str(tmp_path / "talk.vtt"))
    assert result.returncode == 0, result.stderr
    assert "cues" in result.stdout and "(en)" in result.stdout
    captions = tmp_path / "talk.vtt"
    text = captions.read_text(encoding="utf-8")
    assert text.startswith("WEBVTT")
    assert "<00:00:0" in text  # word times inline
    document = parse_document(captions.read_bytes(), "vtt", captions)
    words = [w for cue in document.cues for w in cue.words]
    heard = " ".join(w.text.lower() for w in words)
    assert "welcome" in heard and "maple" in heard and "street" in heard
    assert all(w.start is not None for w in words), "every word keeps its time"
    assert [w.start for w in words] == sorted(w.start for w in words if w.start is not None)
    for cue in document.cues:
        lines = cue.text().split("\n")
        assert len(lines) <= 2
        plain = [_without_times(line) for line in lines]
        assert all(len(line) <= 42 for line in plain), plain
        assert cue.end - cue.start <= 7000
    assert document.cues[-1].end <= CLIP_SECONDS * 1000 + 500
    punctuated = punctum("punctuate", str(captions), "-o", str(tmp_path / "talk.punctuated.vtt"))
    assert punctuated.returncode == 0, punctuated.stderr
    assert (tmp_path / "talk.punctuated.vtt").is_file()


def test_srt_keeps_the_word_times_beside_it_where_the_editor_and_batch_find_them(
    clip: Path, tmp_path: Path
) -> None:
    media = tmp_path / "talk.mp4"
    shutil.copy(clip, media)
    result = punctum("transcribe", str(media), "-o", str(tmp_path / "talk.srt"), "--language", "en")
    assert result.returncode == 0, result.stderr
    captions, words_file = tmp_path / "talk.srt", tmp_path / "talk.words.json"
    document = parse_document(captions.read_bytes(), "srt", captions)
    timed = read_timings(words_file)
    # The same words in the same order, each with its time (the file keeps the recogniser's marks).
    assert [split_token(w.text)[1] for w in timed] == [w.text for cue in document.cues for w in cue.words]
    assert all(w.start is not None and w.end is not None for w in timed)
    beside = companions_of(captions)
    assert beside[FileKind.MEDIA] == [media] and beside[FileKind.TIMINGS] == [words_file]


def test_strip_punctuation_gives_the_plain_lowercase_words_of_an_asr_file(
    clip: Path, tmp_path: Path, transcriber
) -> None:  # type: ignore[no-untyped-def]
    from app.services.transcribe import TranscriptOptions, transcribe_media

    done = transcribe_media(
        clip, tmp_path / "plain.vtt", transcriber, TranscriptOptions("en", strip_punctuation=True)
    )
    document = parse_document(done.output.read_bytes(), "vtt", done.output)
    words = [w for cue in document.cues for w in cue.words]
    assert words and all(not w.mark and w.text == w.text.lower() for w in words)


def test_a_cancel_leaves_no_captions_behind(clip: Path, tmp_path: Path, transcriber) -> None:  # type: ignore[no-untyped-def]
    from app.services.transcribe import TranscriptOptions, transcribe_media

    with pytest.raises(InterruptedError):
        transcribe_media(
            clip, tmp_path / "x.srt", transcriber, TranscriptOptions("en"), cancelled=lambda: True
        )
    assert list(tmp_path.iterdir()) == []


def test_the_media_these_tests_cut_and_write_are_what_they_say(clip: Path, tmp_path: Path) -> None:
    """conftest's cut_media and write_audio, which make the tests' media without an ffmpeg program."""
    import av

    from app.audio.decode import decode_audio, probe
    from app.audio.errors import AudioError

    # The clip: the sample's audio and video, copied to the packet that passes 9 s (AAC packets
    # of 1024 samples at 44.1 kHz, video at 1 frame a second), every frame of it decodable.
    assert CLIP_SECONDS <= len(decode_audio(clip)) / 16_000 < CLIP_SECONDS + 1024 / 44_100 + 0.01
    with av.open(str(clip)) as container:
        assert [s.type for s in container.streams] == ["video", "audio"]
        assert CLIP_SECONDS <= sum(1 for _ in container.decode(video=0)) <= CLIP_SECONDS + 2
    # Without its audio: the video alone, which Punctum says has no audio stream.
    silent_video = cut_media(clip, tmp_path / "video.mp4", audio=False)
    with pytest.raises(AudioError, match="no audio stream"):
        probe(silent_video)
    with av.open(str(silent_video)) as container:
        assert [s.type for s in container.streams] == ["video"]
    # A WAV is the audio as Punctum hears it: 16 kHz mono, to the sample.
    wav = cut_media(SAMPLE / "sample.mp4", tmp_path / "opening.wav", 2.5)
    assert (probe(wav).sample_rate, probe(wav).channels) == (16_000, 1)
    opening = decode_audio(wav)
    assert opening.size == 40_000 and np.abs(opening - decode_audio(clip)[:40_000]).max() < 1e-4
    silence = write_audio(tmp_path / "silence.wav", np.zeros(4 * 16_000, np.float32))
    assert decode_audio(silence).tolist() == [0.0] * 64_000
    # Encoded by PyAV: an MP3 that states its own length (Xing/Info header), as encoders write.
    mp3 = write_audio(tmp_path / "opening.mp3", opening, "libmp3lame")
    info = probe(mp3)
    assert (info.codec, info.duration, info.duration_estimated) == ("mp3float", 2.5, False)
    assert abs(len(decode_audio(mp3)) - 40_000) <= 1152


@pytest.mark.parametrize("kind", ["empty", "truncated", "no audio", "silence", "language"])
def test_bad_media_gets_one_line_exit_3_and_nothing_written(kind: str, clip: Path, tmp_path: Path) -> None:
    media = tmp_path / "in.mp4"
    language = []
    if kind == "empty":
        media.write_bytes(b"")
    elif kind == "truncated":
        media.write_bytes(clip.read_bytes()[:20_000])
    elif kind == "no audio":
        cut_media(clip, media, audio=False)
    elif kind == "silence":
        media = write_audio(tmp_path / "in.wav", np.zeros(4 * 16_000, np.float32))
    else:
        shutil.copy(clip, media)
        language = ["--language", "xx"]
    before = set(tmp_path.iterdir())
    result = punctum("transcribe", str(media), "-o", str(tmp_path / "out.srt"), *language)
    assert result.returncode == 3, (kind, result.stdout, result.stderr)
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr, result.stderr
    assert set(tmp_path.iterdir()) == before, "nothing written"


def test_the_default_output_never_replaces_existing_captions(clip: Path, tmp_path: Path) -> None:
    media = tmp_path / "talk.mp4"
    shutil.copy(clip, media)
    (tmp_path / "talk.vtt").write_text("WEBVTT\n\nmine\n", encoding="utf-8")
    result = punctum("transcribe", str(media))
    assert result.returncode == 3 and "exists" in result.stderr
    assert (tmp_path / "talk.vtt").read_text(encoding="utf-8") == "WEBVTT\n\nmine\n"


def _without_times(line: str) -> str:
    import re

    return re.sub(r"<[\d:.]+>", "", line)


def test_batch_transcribes_media_without_captions_first_and_a_rerun_does_not_again(
    clip: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "talks"
    folder.mkdir()
    shutil.copy(clip, folder / "talk.mp4")
    (folder / "broken.mp4").write_bytes(b"")
    project = tmp_path / "talks.punctum"
    # Transcribing and pairing are the point; listening along the words is test_listener's.
    command = ("batch", str(folder), "--project", str(project), "--transcribe", "--no-listen")
    first = punctum(*command, "--language", "en")
    assert first.returncode == 3, first.stderr  # a file failed: batch says so by its exit status too
    assert (folder / "talk.vtt").is_file() and not (folder / "broken.vtt").exists()
    assert "not transcribed" in first.stderr and "broken.mp4" in first.stderr
    status = punctum("status", str(project), "--json")
    assert status.returncode == 0, status.stderr
    assert "talk" in status.stdout and "done" in status.stdout
    made = (folder / "talk.vtt").stat().st_mtime_ns
    again = punctum(*command)
    assert again.returncode == 3, again.stderr  # the broken file is still broken
    # The transcribed talk is paired now; only the broken file is tried again.
    assert "transcribing" not in "".join(line for line in again.stderr.splitlines() if "talk.mp4" in line)
    assert (folder / "talk.vtt").stat().st_mtime_ns == made
