"""Decoding real media, speech activity, word timings and pauses against known silences."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile

from app.audio.analysis import analyse_media
from app.audio.decode import CHUNK_SECONDS, decode_audio, probe, stream_audio
from app.audio.errors import AudioError
from app.audio.prosody import gap_prosody
from app.audio.timing import TimingSource, word_timings
from app.core.audio_format import SAMPLE_RATE
from app.formats import parse_document, read_document
from tests.conftest import SAMPLE, requires_ffmpeg, shared_data

VIDEO = SAMPLE / "sample.mp4"


@pytest.fixture(scope="module")
def sample_audio() -> np.ndarray:
    return decode_audio(VIDEO)


@pytest.fixture(scope="module")
def sample_track():  # type: ignore[no-untyped-def]
    return analyse_media(VIDEO)


@requires_ffmpeg
def test_bundled_video_decodes_to_16k_mono(sample_audio: np.ndarray) -> None:
    assert sample_audio.dtype == np.float32
    assert abs(sample_audio.size / SAMPLE_RATE - 62.0) < 0.3
    assert np.abs(sample_audio).max() <= 1.0
    info = probe(VIDEO)
    assert info.has_video and info.codec == "aac"
    chunks = list(stream_audio(VIDEO))
    assert max(c.size for c in chunks) <= CHUNK_SECONDS * SAMPLE_RATE  # memory stays per chunk
    assert np.array_equal(np.concatenate(chunks), sample_audio)


@requires_ffmpeg
def test_shared_clips_decode() -> None:
    flac = decode_audio(shared_data("audio", "faster_whisper", "jfk.flac"))
    assert abs(flac.size / SAMPLE_RATE - 11.0) < 0.1
    mp3 = decode_audio(shared_data("audio", "faster_whisper", "multilingual.mp3"))
    assert abs(mp3.size / SAMPLE_RATE - 60.0) < 0.5
    wavs = sorted(shared_data("audio", "ljspeech").glob("*.wav"))
    assert wavs and abs(decode_audio(wavs[0]).size / SAMPLE_RATE - soundfile.info(wavs[0]).duration) < 0.01


@requires_ffmpeg
def test_bad_media_gets_a_clear_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(AudioError, match="empty"):
        decode_audio(empty)
    with pytest.raises(AudioError, match="no audio stream"):
        decode_audio(SAMPLE / "sample.srt")
    truncated = tmp_path / "truncated.mp4"
    truncated.write_bytes(VIDEO.read_bytes()[: VIDEO.stat().st_size // 3])
    with pytest.raises(AudioError):
        decode_audio(truncated)
    noise = tmp_path / "noise.mp3"
    noise.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(AudioError):
        decode_audio(noise)
    silent_video = tmp_path / "silent.mp4"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=c=black:s=64x64:d=1", "-an", str(silent_video)],
        check=True,
    )
    with pytest.raises(AudioError, match="no audio stream"):
        decode_audio(silent_video)
    # FFmpeg's libraries come with Punctum (in PyAV): no ffmpeg program is needed on the system.
    monkeypatch.setenv("PATH", str(tmp_path))
    assert shutil.which("ffmpeg") is None and shutil.which("ffprobe") is None
    assert abs(decode_audio(VIDEO).size / SAMPLE_RATE - 62.0) < 0.1


def test_cut_and_empty_wav_files_are_refused(tmp_path: Path) -> None:
    tone = (0.3 * np.sin(np.arange(10 * 22_050) * 0.05)).astype(np.float32)
    whole = tmp_path / "whole.wav"
    soundfile.write(whole, tone, 22_050, subtype="PCM_16")
    assert abs(decode_audio(whole).size / SAMPLE_RATE - 10.0) < 0.01
    cut = tmp_path / "cut.wav"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(AudioError, match="truncated"):
        decode_audio(cut)
    header_only = tmp_path / "header.wav"
    soundfile.write(header_only, np.zeros(0, dtype=np.float32), 16_000)
    with pytest.raises(AudioError, match="no samples"):
        decode_audio(header_only)


@requires_ffmpeg
def test_an_mp3_damaged_in_the_middle_is_called_damaged_not_truncated(tmp_path: Path) -> None:
    """20 kB of garbage a third of the way in were reported as "the file is truncated"."""
    clean = tmp_path / "clean.mp3"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(VIDEO), "-vn", "-c:a", "libmp3lame", "-b:a", "64k", str(clean)],
        check=True,
    )  # fmt: skip
    data = bytearray(clean.read_bytes())
    middle = len(data) // 3
    data[middle : middle + 20_000] = (
        np.random.default_rng(1).integers(0, 256, 20_000, dtype=np.uint8).tobytes()
    )
    damaged = tmp_path / "damaged.mp3"
    damaged.write_bytes(bytes(data))
    with pytest.raises(AudioError, match=r"damaged inside: \d+ packets could not be decoded from 2\d\.\d s"):
        decode_audio(damaged)
    cut = tmp_path / "cut.mp3"
    cut.write_bytes(clean.read_bytes()[: len(data) // 2])
    with pytest.raises(AudioError, match="truncated"):
        decode_audio(cut)


@requires_ffmpeg
def test_mp3_without_a_length_index_is_not_called_truncated(tmp_path: Path) -> None:
    # Without a Xing header ffprobe guesses the length from the first frame's bitrate: a silent
    # first second and loud noise after it make the guess more than twice too long.
    mp3 = tmp_path / "vbr.mp3"
    source = "aevalsrc='if(lt(t,1),0,0.5*(random(0)-0.5))':d=120:s=44100"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", source, "-c:a", "libmp3lame", "-q:a", "0",
         "-write_xing", "0", str(mp3)],
        check=True,
    )  # fmt: skip
    assert abs(decode_audio(mp3).size / SAMPLE_RATE - 120.0) < 0.5


@requires_ffmpeg
def test_a_badly_damaged_file_ends_with_an_answer_not_a_hang(tmp_path: Path) -> None:
    clean = tmp_path / "clean.m4a"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=f=300:d=240", "-c:a", "aac", "-b:a", "64k", str(clean)],
        check=True,
    )  # fmt: skip
    data = bytearray(clean.read_bytes())
    rng = np.random.default_rng(3)
    # One byte in a hundred of the audio data (the index at the end left whole): about 1 MB of
    # decoder complaints, far more than a pipe holds.
    for position in rng.integers(4096, len(data) - 100_000, size=len(data) // 100):
        data[position] ^= 0x5A
    damaged = tmp_path / "damaged.m4a"
    damaged.write_bytes(bytes(data))
    # Either outcome is an answer; before, ffmpeg's unread complaints filled a pipe and it waited for ever.
    try:
        decode_audio(damaged)
    except AudioError as error:
        assert "damaged.m4a" in str(error)


@requires_ffmpeg
def test_estimated_timings_put_an_inserted_silence_at_the_right_gap(
    sample_audio: np.ndarray, tmp_path: Path
) -> None:
    # The sample's first seconds: "hello and welcome to the maple street repair cafe. every saturday"
    # with Whisper word times; "cafe" ends at 3.24 s and "every" starts at 3.70 s. One more second
    # of digital silence goes into that gap.
    cut = int(3.47 * SAMPLE_RATE)
    clip = np.concatenate(
        [sample_audio[:cut], np.zeros(SAMPLE_RATE, np.float32), sample_audio[cut : int(4.6 * SAMPLE_RATE)]]
    )
    media = tmp_path / "clip.wav"
    soundfile.write(media, clip, SAMPLE_RATE)
    captions = parse_document(
        b"1\n00:00:00,000 --> 00:00:05,600\nhello and welcome to the maple street repair cafe every saturday\n",
        "srt",
    )
    track = analyse_media(media)
    timings = word_timings(captions, track)
    words = [w.text for w in captions.cues[0].words]
    pauses = [t.pause_after or 0.0 for t in timings]
    assert all(t.source is TimingSource.ESTIMATED for t in timings)
    assert words[int(np.argmax(pauses))] == "cafe"
    assert 1.2 <= pauses[words.index("cafe")] <= 1.7  # the inserted second plus the natural pause
    assert pauses[words.index("maple")] < 0.1  # no pause inside "maple street"


@requires_ffmpeg
def test_given_timings_and_audio_show_sentence_pauses(sample_track) -> None:  # type: ignore[no-untyped-def]
    captions = read_document(SAMPLE / "sample.vtt")
    words = [w.text for c in captions.cues for w in c.words]
    timings = word_timings(captions, sample_track)
    assert all(t.source is TimingSource.GIVEN for t in timings)
    pauses = {i: t.pause_after for i, t in enumerate(timings) if t.pause_after is not None}
    # The reference text puts sentence ends after these words; Piper pauses there.
    ends = [words.index(w) for w in ("cafe", "together", "warm")]
    ends.append(words.index("bring", words.index("bring") + 1))  # "So what do people bring?"
    assert all(pauses[i] >= 0.25 for i in ends)
    assert float(np.median(list(pauses.values()))) < 0.1
    assert pauses[words.index("maple")] < 0.1


@requires_ffmpeg
def test_pitch_and_prosody_on_real_speech(sample_track) -> None:  # type: ignore[no-untyped-def]
    voiced = sample_track.f0[~np.isnan(sample_track.f0)]
    assert voiced.size > 1000
    assert 70 <= float(np.median(voiced)) <= 200  # a man's speaking voice
    assert 0.5 < float((sample_track.speech >= 0.5).mean()) < 0.95
    captions = read_document(SAMPLE / "sample.vtt")
    words = [w.text for c in captions.cues for w in c.words]
    gaps = gap_prosody(words, word_timings(captions, sample_track), sample_track)
    assert len(gaps) == len(words)
    assert sum(g.pitch_slope is not None for g in gaps) > len(words) / 2
    assert sum(g.rate_change is not None for g in gaps) > len(words) / 2


def test_pitch_of_a_known_voice() -> None:
    from app.audio.analysis import HOP, PITCH_WINDOW, pitch_track

    # A buzz at 150 Hz rising to 180 Hz over a second, with harmonics, as a voice has.
    seconds = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    hertz = 150 + 30 * seconds
    phase = 2 * np.pi * np.cumsum(hertz) / SAMPLE_RATE
    buzz = sum(np.sin(k * phase) / k for k in range(1, 6)).astype(np.float32) * 0.3
    count = (buzz.size - PITCH_WINDOW) // HOP + 1
    f0 = pitch_track(buzz, count)
    centres = (np.arange(count) * HOP + PITCH_WINDOW / 2) / SAMPLE_RATE
    found = np.isfinite(f0)
    assert found.mean() > 0.9
    assert np.abs(f0[found] - (150 + 30 * centres[found])).max() < 3  # Hz
    assert np.isnan(pitch_track(np.zeros(SAMPLE_RATE, dtype=np.float32), count)).all()  # silence


def test_timings_without_audio_come_from_the_cues() -> None:
    captions = parse_document(
        b"1\n00:00:01,000 --> 00:00:02,000\nso it goes\n\n2\n00:00:02,800 --> 00:00:03,500\nand then\n",
        "srt",
    )
    timings = word_timings(captions)
    assert [t.source for t in timings][:2] == [TimingSource.NONE] * 2
    assert timings[2].pause_after == pytest.approx(0.8)  # between the cues
    assert timings[0].pause_after is None


def test_touching_cues_are_not_read_as_a_missing_pause() -> None:
    # ASR captions often end one cue where the next begins; that is layout, not continuous speech.
    captions = parse_document(
        b"1\n00:00:01,000 --> 00:00:02,000\nwe should go home\n\n"
        b"2\n00:00:02,000 --> 00:00:03,000\nthe end\n\n"
        b"3\n00:00:03,100 --> 00:00:04,000\nof it\n",
        "srt",
    )
    timings = word_timings(captions)
    assert timings[3].pause_after is None and timings[5].pause_after is None


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="permissions do not bind root")
def test_media_the_user_may_not_read_is_reported_as_unreadable(tmp_path: Path) -> None:
    locked = tmp_path / "locked.mp4"
    locked.write_bytes(VIDEO.read_bytes())
    locked.chmod(0)
    with pytest.raises(AudioError, match="cannot be read"):
        probe(locked)


@requires_ffmpeg
def test_speech_activity_is_silero_s_own_and_reading_audio_leaves_torch_unloaded(
    sample_audio: np.ndarray,
) -> None:
    import sys

    import torch
    from silero_vad import load_silero_vad

    from app.audio.vad import VAD_FRAME, SpeechDetector

    audio = sample_audio[: SAMPLE_RATE * 8]
    chunks = [audio[: SAMPLE_RATE * 5], audio[SAMPLE_RATE * 5 :]]
    detector = SpeechDetector()
    for chunk in chunks:
        detector.feed(chunk)
    ours = detector.finish()
    model = load_silero_vad(onnx=True)  # the package's own wrapper, on torch tensors
    theirs = []
    for chunk in chunks:
        padded = np.zeros(-(-chunk.size // VAD_FRAME) * VAD_FRAME, dtype=np.float32)
        padded[: chunk.size] = chunk
        model.reset_states(1)
        for start in range(0, padded.size, VAD_FRAME):
            frame = torch.from_numpy(padded[start : start + VAD_FRAME]).unsqueeze(0)
            theirs.append(float(model(frame, SAMPLE_RATE)))
    assert ours.shape == (len(theirs),) and np.abs(ours - np.array(theirs)).max() < 1e-5
    assert 0.5 < ours.mean() < 1.0  # the sample is speech
    probe = (
        "import sys; from pathlib import Path; from app.audio.analysis import analyse_media;"
        "analyse_media(Path(sys.argv[1])); print('torch' in sys.modules or 'numba' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(SAMPLE / "sample.mp4")], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and result.stdout.strip() == "False", result.stderr


def _audio_tracks(target: Path, tracks: list[np.ndarray], default: int, layout: str = "mono") -> Path:
    """A file of several 16 kHz audio tracks (each ``(channels, samples)`` float), made with PyAV,
    track ``default`` marked as the one players take."""
    import av
    from av.stream import Disposition

    with av.open(str(target), "w") as outside:
        streams = [outside.add_stream("aac", rate=SAMPLE_RATE, layout=layout) for _ in tracks]
        for number, stream in enumerate(streams):  # before the first packet writes the header
            stream.disposition = Disposition.default if number == default else Disposition(0)
        for stream, samples in zip(streams, tracks, strict=True):
            frame = av.AudioFrame.from_ndarray(np.asarray(samples, np.float32), format="fltp", layout=layout)
            frame.sample_rate = SAMPLE_RATE
            outside.mux(stream.encode(frame))
            outside.mux(stream.encode(None))
    return target


def test_the_default_audio_track_is_the_one_heard(tmp_path: Path) -> None:
    # A silent first track (another language's, a commentary not yet recorded) and the speech on
    # the second, which the file marks as the default: players take the second, and so must we.
    from tests.conftest import decoded_audio

    speech = decoded_audio(SAMPLE / "sample.mp4", 10).reshape(1, -1)
    media = _audio_tracks(tmp_path / "two.mp4", [np.zeros_like(speech), speech], default=1)
    heard = decode_audio(media)
    assert float(np.sqrt(np.mean(heard**2))) > 0.5 * float(np.sqrt(np.mean(speech**2)))
    assert analyse_media(media).speech_share([(0.0, 10.0)]) > 0.5


@pytest.mark.parametrize("suffix", [".mp4", ".wav"])
def test_stereo_with_one_channel_phase_inverted_is_heard_not_cancelled(tmp_path: Path, suffix: str) -> None:
    # A miswired microphone or a fake-stereo effect: the right channel is the left turned upside
    # down. Averaged, the two cancel to silence; the speech must still be heard.
    from tests.conftest import decoded_audio

    speech = decoded_audio(SAMPLE / "sample.mp4", 10)
    inverted = np.stack([speech, -speech])
    if suffix == ".wav":
        media = tmp_path / "inverted.wav"
        soundfile.write(media, inverted.T, SAMPLE_RATE, subtype="PCM_16")
    else:
        media = _audio_tracks(tmp_path / "inverted.mp4", [inverted], default=0, layout="stereo")
    heard = decode_audio(media)
    assert float(np.sqrt(np.mean(heard**2))) > 0.5 * float(np.sqrt(np.mean(speech**2)))
    # Ordinary stereo is still the two channels' mean, as FFmpeg mixes it.
    both = tmp_path / f"both{suffix}"
    if suffix == ".wav":
        soundfile.write(both, np.stack([speech, 0.5 * speech]).T, SAMPLE_RATE, subtype="PCM_16")
    else:
        _audio_tracks(both, [np.stack([speech, 0.5 * speech])], default=0, layout="stereo")
    mixed = decode_audio(both)
    assert abs(float(np.sqrt(np.mean(mixed**2))) / float(np.sqrt(np.mean(speech**2))) - 0.75) < 0.05


@requires_ffmpeg
def test_media_far_longer_than_its_captions_is_heard_only_as_far_as_they_go(tmp_path: Path) -> None:
    """3 h of media behind 61 s of captions ran 195 s at 1.66 GB without a word: the media is
    decoded as far as the captions go (and a little more), and the person is told."""
    from tests.conftest import run_punctum_here

    long = tmp_path / "long.m4a"  # the sample's speech, then 20 minutes of silence
    subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(VIDEO), "-f", "lavfi", "-t", "1200", "-i",
         "anullsrc=r=16000:cl=mono", "-filter_complex",
         "[0:a]aresample=16000,aformat=channel_layouts=mono[a];[a][1:a]concat=n=2:v=0:a=1",
         "-c:a", "aac", "-b:a", "24k", str(long)],
        check=True,
    )  # fmt: skip
    assert probe(long).duration > 1200
    assert analyse_media(long, until=90.0).duration == pytest.approx(90.0)
    result = run_punctum_here(
        "punctuate", str(SAMPLE / "sample.srt"), "--media", str(long), "-o", str(tmp_path / "out.srt")
    )
    assert result.returncode == 0, result.stderr
    assert (
        "long.m4a runs 21:02 and the captions end at 1:01: only its first 1:31 is listened to"
        in result.stderr
    )
