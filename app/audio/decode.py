"""Audio tracks of video and audio files as 16 kHz mono float32, streamed in chunks.

WAV, FLAC and OGG are read with soundfile and resampled by soxr as they stream; everything else
(video containers, MP3, AAC, Opus...) goes through ffmpeg (located by ``pydub``) and ffprobe.
Nothing holds the whole track unless asked: a 2-hour film streams through in fixed-size chunks.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.audio.errors import AudioError

SAMPLE_RATE = 16_000
CHUNK_SECONDS = 30.0
SOUNDFILE_SUFFIXES = {".wav", ".flac", ".ogg", ".oga"}
#: ffprobe's note when a stream has no length of its own (a raw MP3 without a Xing/Info header, an
#: ADTS AAC stream) and it guesses one from the first frames' bitrate.
_ESTIMATED = "Estimating duration from bitrate"
# libsndfile's note on a WAV whose data chunk is shorter than its header says.
_SHORT_DATA = re.compile(r"^data\s*:\s*(\d+)\s*\(should be (\d+)\)", re.MULTILINE)
FFMPEG_HINT = "ffmpeg is not installed (Debian/Ubuntu: sudo apt install ffmpeg; macOS: brew install ffmpeg)"


@dataclass(frozen=True)
class MediaInfo:
    path: Path
    duration: float | None  # seconds, as the container states it
    codec: str
    sample_rate: int
    channels: int
    has_video: bool
    reader: str = "ffmpeg"  # or "soundfile", for the formats libsndfile reads itself
    # Raw MP3 and AAC streams without a length header: ffprobe guesses their length from the
    # first frames' bitrate, so a shorter decode is no sign of truncation. An MP3 with a Xing/Info
    # header (what encoders write) states its length, and a file cut short then decodes shorter.
    duration_estimated: bool = False


def ffmpeg_path() -> str:
    from pydub.utils import which

    found = which("ffmpeg")
    if not found:
        raise AudioError(None, FFMPEG_HINT)
    return str(found)


def probe(path: Path) -> MediaInfo:
    """What the file holds, or an AudioError saying why it cannot be used."""
    path = Path(path)
    if path.is_dir():
        raise AudioError(path, "is a folder, not a media file")
    if not path.exists():
        raise AudioError(path, "no such file")
    if not path.is_file():
        raise AudioError(path, "not a regular file (a pipe, device or socket)")
    if path.stat().st_size == 0:
        raise AudioError(path, "the file is empty")
    # Opened here so that a file the user may not read is reported as such, not as one ffprobe
    # finds no streams in.
    try:
        with path.open("rb") as media:
            media.read(1)
    except OSError as error:
        raise AudioError(path, f"cannot be read ({error.strerror or error})") from None
    if path.suffix.lower() in SOUNDFILE_SUFFIXES:
        info = _soundfile_info(path)
        if info is not None:
            return info
    ffprobe = shutil.which("ffprobe")
    if not ffprobe:
        raise AudioError(None, FFMPEG_HINT.replace("ffmpeg is", "ffprobe (part of ffmpeg) is"))
    described, notes = _ffprobe(ffprobe, path)
    streams = described.get("streams", [])
    if not streams:
        raise AudioError(path, "not a media file ffmpeg can read (no streams found)")
    audio = [s for s in streams if s.get("codec_type") == "audio"]
    if not audio:
        raise AudioError(path, "the file has no audio stream")
    stream = audio[0]
    codec = str(stream.get("codec_name") or "unknown")
    if codec in ("unknown", "none"):
        raise AudioError(path, "the audio stream's codec is not supported by this ffmpeg")
    duration = stream.get("duration") or described.get("format", {}).get("duration")
    return MediaInfo(
        path=path,
        duration=float(duration) if duration not in (None, "N/A") else None,
        codec=codec,
        sample_rate=int(stream.get("sample_rate") or 0),
        channels=int(stream.get("channels") or 0),
        has_video=any(s.get("codec_type") == "video" for s in streams),
        duration_estimated=_ESTIMATED in notes,
    )


def _ffprobe(ffprobe: str, path: Path) -> tuple[dict[str, Any], str]:
    """ffprobe's description of the file and its notes (stderr). The path goes absolute, so that
    no name (``-talk.mp4``, ``-o``, ``a:b.mp4``) is read as an option or a protocol."""
    command = [ffprobe, "-v", "info", "-of", "json", "-show_format", "-show_streams", str(path.absolute())]
    try:
        done = subprocess.run(command, capture_output=True, timeout=120, check=False)
        described = json.loads(done.stdout.decode("utf-8", "replace") or "{}")
    except (OSError, subprocess.TimeoutExpired, ValueError) as error:
        raise AudioError(path, f"not a media file ffmpeg can read ({error})") from None
    if not isinstance(described, dict):
        raise AudioError(path, "not a media file ffmpeg can read (no description)")
    return described, done.stderr.decode("utf-8", "replace")


def stream_audio(path: Path, chunk_seconds: float = CHUNK_SECONDS) -> Iterator[np.ndarray]:
    """Consecutive chunks of the track, 16 kHz mono float32 in [-1, 1]."""
    info = probe(path)
    if info.reader == "soundfile":
        yield from _stream_soundfile(info, chunk_seconds)
    else:
        yield from _stream_ffmpeg(info, chunk_seconds)


def decode_audio(path: Path) -> np.ndarray:
    """The whole track at once (for clips; long media should use ``stream_audio``)."""
    chunks = list(stream_audio(path))
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)


def _soundfile_info(path: Path) -> MediaInfo | None:
    import soundfile

    try:
        info = soundfile.info(str(path))
    except (RuntimeError, soundfile.LibsndfileError):
        return None  # not something libsndfile reads: let ffmpeg try
    if info.frames == 0:
        raise AudioError(path, "the audio stream holds no samples")
    short = _SHORT_DATA.search(info.extra_info or "")
    # A header still saying 0 or 4 GB is a recorder's stream that was never finalised, not a cut.
    if short and 0 < int(short.group(2)) < int(short.group(1)) < 0xFFFFFF00:
        raise AudioError(
            path,
            f"the file is truncated: {info.duration:.1f} s of audio present, its header announces more",
        )
    return MediaInfo(
        path, float(info.duration), info.format.lower(), info.samplerate, info.channels, False, "soundfile"
    )


def _stream_soundfile(info: MediaInfo, chunk_seconds: float) -> Iterator[np.ndarray]:
    import soundfile
    import soxr

    block = max(1, int(chunk_seconds * info.sample_rate))
    resampler = None
    if info.sample_rate != SAMPLE_RATE:
        resampler = soxr.ResampleStream(info.sample_rate, SAMPLE_RATE, 1, dtype="float32")
    try:
        for frames in soundfile.blocks(str(info.path), blocksize=block, dtype="float32", always_2d=True):
            mono = np.ascontiguousarray(frames.mean(axis=1), dtype=np.float32)
            if resampler is not None:
                mono = resampler.resample_chunk(mono)
            if mono.size:
                yield mono
    except (RuntimeError, soundfile.LibsndfileError) as error:
        raise AudioError(info.path, f"the audio is damaged or truncated ({error})") from None
    if resampler is not None:
        tail = resampler.resample_chunk(np.zeros(0, dtype=np.float32), last=True)
        if tail.size:
            yield tail


def _stream_ffmpeg(info: MediaInfo, chunk_seconds: float) -> Iterator[np.ndarray]:
    command = [
        ffmpeg_path(), "-nostdin", "-hide_banner", "-loglevel", "error", "-i", str(info.path.absolute()),
        "-map", "0:a:0", "-vn", "-ac", "1", "-ar", str(SAMPLE_RATE), "-f", "s16le", "-",
    ]  # fmt: skip
    chunk_bytes = 2 * int(chunk_seconds * SAMPLE_RATE)
    # ffmpeg's complaints go to a file: a damaged file can fill a pipe with errors that nobody
    # reads until the end, and ffmpeg then waits on it for ever.
    with tempfile.TemporaryFile() as complaints:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=complaints)
        assert process.stdout is not None
        decoded = 0
        try:
            while True:
                data = process.stdout.read(chunk_bytes)
                if not data:
                    break
                samples = np.frombuffer(data[: len(data) // 2 * 2], dtype="<i2")
                decoded += samples.size
                yield (samples.astype(np.float32) / 32768.0)
        finally:
            if process.poll() is None:
                process.kill()  # the consumer stopped early (cancel): do not leave ffmpeg running
            process.stdout.close()
            status = process.wait()
        complaints.seek(0)
        errors = complaints.read().decode("utf-8", "replace").strip().splitlines()
    if status != 0 and status != -9:
        reason = errors[-1] if errors else f"ffmpeg exited with status {status}"
        if "decoder" in reason.lower() and "not found" in reason.lower():
            raise AudioError(info.path, f"unsupported audio codec {info.codec!r} ({reason})")
        raise AudioError(info.path, f"the audio could not be decoded ({reason})")
    if decoded == 0:
        raise AudioError(info.path, "the audio stream holds no samples (damaged or truncated file)")
    seconds = decoded / SAMPLE_RATE
    if (
        info.duration
        and not info.duration_estimated
        and seconds < info.duration - max(1.0, 0.02 * info.duration)
    ):
        raise AudioError(
            info.path,
            f"the file is truncated: {seconds:.1f} s of audio decoded, {info.duration:.1f} s announced",
        )
