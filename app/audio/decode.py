"""Audio tracks of video and audio files as 16 kHz mono float32, streamed in chunks.

WAV, FLAC and OGG are read with soundfile and resampled by soxr as they stream; everything else
(video containers, MP3, AAC, Opus...) is demuxed and decoded by FFmpeg's libraries through PyAV,
which every installation has (the recogniser's faster-whisper needs it), so no ffmpeg program has
to be on the system. Nothing holds the whole track unless asked: a 2-hour film streams through in
fixed-size chunks.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.audio.errors import AudioError
from app.core.audio_format import SAMPLE_RATE

CHUNK_SECONDS = 30.0
SOUNDFILE_SUFFIXES = {".wav", ".flac", ".ogg", ".oga"}
#: FFmpeg's note when a stream has no length of its own (a raw MP3 without a Xing/Info header, an
#: ADTS AAC stream) and it guesses one from the first frames' bitrate.
_ESTIMATED = "Estimating duration from bitrate"
# libsndfile's note on a WAV whose data chunk is shorter than its header says.
_SHORT_DATA = re.compile(r"^data\s*:\s*(\d+)\s*\(should be (\d+)\)", re.MULTILINE)
#: The share of damaged packets past which a track counts as undecodable (FFmpeg's own default for
#: its command line, ``-max_error_rate``): below it, damaged stretches are skipped, as a player does.
MAX_ERROR_RATE = 2 / 3


@dataclass(frozen=True)
class MediaInfo:
    path: Path
    duration: float | None  # seconds, as the container states it
    codec: str
    sample_rate: int
    channels: int
    has_video: bool
    reader: str = "ffmpeg"  # or "soundfile", for the formats libsndfile reads itself
    # Raw MP3 and AAC streams without a length header: FFmpeg guesses their length from the
    # first frames' bitrate, so a shorter decode is no sign of truncation. An MP3 with a Xing/Info
    # header (what encoders write) states its length, and a file cut short then decodes shorter.
    duration_estimated: bool = False
    # Which of the file's audio tracks is heard (its place among them): the one the file marks as
    # the default, as players take it (a silent first track, the speech on the second), else the first.
    audio_track: int = 0


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
    return _probe_container(path)


def _open(path: Path) -> Any:
    """The file opened by FFmpeg's demuxer, or an AudioError. The path goes absolute with the
    ``file:`` protocol, so that no name (``-talk.mp4``, ``a:b.mp4``) is read as anything else."""
    import av

    try:
        return av.open("file:" + str(path.absolute()), metadata_errors="ignore")
    except (av.FFmpegError, UnicodeError, ValueError) as error:
        raise AudioError(path, f"not a media file ffmpeg can read ({_reason(error)})") from None


def _reason(error: BaseException) -> str:
    import av

    if isinstance(error, av.FFmpegError) and error.strerror:
        return str(error.strerror)
    return str(error) or type(error).__name__


def _probe_container(path: Path) -> MediaInfo:
    import av.logging

    # FFmpeg says that a length was guessed only in its log, which PyAV leaves off by default
    # (its callback takes the interpreter's lock): on only while the file is opened.
    level = av.logging.get_level()
    av.logging.set_level(av.logging.WARNING)
    try:
        with av.logging.Capture(True) as notes:
            container = _open(path)
    finally:
        av.logging.set_level(level)
    with container:
        streams = list(container.streams)
        if not streams:
            raise AudioError(path, "not a media file ffmpeg can read (no streams found)")
        audio = [s for s in streams if s.type == "audio"]
        if not audio:
            raise AudioError(path, "the file has no audio stream")
        track = _default_track(audio)
        stream = audio[track]
        context = stream.codec_context
        if context is None or context.codec is None:
            raise AudioError(path, "the audio stream's codec is not supported by this ffmpeg")
        duration: float | None = None
        if stream.duration is not None and stream.time_base is not None:
            duration = float(stream.duration * stream.time_base)
        elif container.duration is not None:
            duration = container.duration / 1_000_000
        return MediaInfo(
            path=path,
            duration=duration,
            codec=str(context.codec.name),
            sample_rate=int(context.sample_rate or 0),
            channels=int(context.channels or 0),
            has_video=any(s.type == "video" for s in streams),
            duration_estimated=any(_ESTIMATED in str(note[2]) for note in notes),
            audio_track=track,
        )


def _default_track(audio: list[Any]) -> int:
    """The place among ``audio`` streams of the one marked as the default, else 0."""
    from av.stream import Disposition

    return next((n for n, stream in enumerate(audio) if stream.disposition & Disposition.default), 0)


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
            mono = np.ascontiguousarray(_uncancelled(frames.mean(axis=1), frames.T), dtype=np.float32)
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


#: Below this share of the loudest channel's level, a mix of the channels has cancelled them (one
#: channel phase-inverted: the mean of speech and its negative is silence) and that channel is taken
#: instead. Channels that do not cancel mix to at least half the louder one's level (one silent: a
#: half; unrelated: 0.71; the same: 1).
CANCELLED = 0.25


def _uncancelled(mixed: np.ndarray, channels: np.ndarray) -> np.ndarray:
    """``mixed`` (the mean of ``channels``, one row each), or the loudest channel where they cancel."""
    levels = np.sqrt(np.mean(np.square(channels, dtype=np.float64), axis=1))
    loudest = int(np.argmax(levels))
    level = float(np.sqrt(np.mean(np.square(mixed, dtype=np.float64)))) if mixed.size else 0.0
    if levels[loudest] > 0 and level < CANCELLED * levels[loudest]:
        loudest_channel: np.ndarray = channels[loudest].astype(mixed.dtype)
        return loudest_channel
    return mixed


class _Downmix:
    """Frames of any layout as 16 kHz mono int16: FFmpeg's own mix (``-ac 1``), but where the
    channels cancel each other, the loudest of them (``_uncancelled``)."""

    def __init__(self) -> None:
        import av

        self._mono = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
        self._apart: Any = None  # the channels apart, at the same rate, once a frame has several
        self._layout = ""

    def resample(self, frame: Any) -> list[np.ndarray]:
        import av

        mixed = [out.to_ndarray().reshape(-1) for out in self._mono.resample(frame)]
        if frame is not None and len(frame.layout.channels) > 1 and self._apart is None:
            self._layout = frame.layout.name
            self._apart = av.AudioResampler(format="s16p", layout=self._layout, rate=SAMPLE_RATE)
        if self._apart is None or not mixed or (frame is not None and frame.layout.name != self._layout):
            return mixed
        apart = [out.to_ndarray() for out in self._apart.resample(frame)]
        whole = np.concatenate(mixed)
        if not apart or sum(a.shape[1] for a in apart) != whole.size:
            return mixed  # out of step (a layout change): FFmpeg's mix, as before
        return [_uncancelled(whole, np.concatenate(apart, axis=1))]


@dataclasses.dataclass
class _Damage:
    """Packets of the track that could not be decoded, and where the first was (s): audio
    missing there is damage inside the file, not a truncated end."""

    packets: int = 0
    at_seconds: float | None = None


def _decoded_samples(info: MediaInfo, damage: _Damage | None = None) -> Iterator[np.ndarray]:
    """The audio track's samples (``info.audio_track``) as FFmpeg decodes and resamples them (16 kHz mono int16,
    as its command line's ``-ac 1 -ar 16000`` gives), damaged packets skipped and counted."""
    import av

    container = _open(info.path)
    try:
        stream = container.streams.audio[info.audio_track]
        resampler = _Downmix()
        packets = damaged = 0
        last_error: BaseException | None = None
        demuxed = container.demux(stream)
        while True:
            try:
                packet = next(demuxed)
            except StopIteration:
                break
            except av.FFmpegError as error:  # the container breaks off: what came so far counts
                last_error = error
                break
            if packet.size == 0:
                continue
            packets += 1
            try:
                frames = packet.decode()
                for frame in frames:
                    yield from resampler.resample(frame)
            except (av.FFmpegError, ValueError) as error:
                damaged += 1
                last_error = error
                if damage is not None:
                    damage.packets += 1
                    if damage.at_seconds is None and packet.pts is not None and packet.time_base:
                        damage.at_seconds = float(packet.pts * packet.time_base)
        try:
            yield from resampler.resample(None)
        except (av.FFmpegError, ValueError) as error:
            last_error = error
    finally:
        container.close()
    if packets and damaged > MAX_ERROR_RATE * packets:
        reason = _reason(last_error) if last_error is not None else "damaged packets"
        if isinstance(last_error, av.error.DecoderNotFoundError):
            raise AudioError(info.path, f"unsupported audio codec {info.codec!r} ({reason})")
        raise AudioError(
            info.path, f"the audio could not be decoded ({damaged} of {packets} packets: {reason})"
        )


def _stream_ffmpeg(info: MediaInfo, chunk_seconds: float) -> Iterator[np.ndarray]:
    chunk = int(chunk_seconds * SAMPLE_RATE)
    pending: list[np.ndarray] = []
    held = decoded = 0
    damage = _Damage()
    for samples in _decoded_samples(info, damage):
        pending.append(samples)
        held += samples.size
        decoded += samples.size
        if held >= chunk:
            joined = np.concatenate(pending)
            for start in range(0, joined.size - chunk + 1, chunk):
                yield joined[start : start + chunk].astype(np.float32) / 32768.0
            rest = joined[joined.size - joined.size % chunk :]
            pending, held = ([rest] if rest.size else []), rest.size
    if held:
        yield np.concatenate(pending).astype(np.float32) / 32768.0
    if decoded == 0:
        raise AudioError(info.path, "the audio stream holds no samples (damaged or truncated file)")
    seconds = decoded / SAMPLE_RATE
    if (
        info.duration
        and not info.duration_estimated
        and seconds < info.duration - max(1.0, 0.02 * info.duration)
    ):
        if damage.packets:
            place = f" from {damage.at_seconds:.1f} s" if damage.at_seconds is not None else ""
            raise AudioError(
                info.path,
                f"the audio is damaged inside: {damage.packets} packets could not be decoded{place},"
                f" {seconds:.1f} s of {info.duration:.1f} s decoded",
            )
        raise AudioError(
            info.path,
            f"the file is truncated: {seconds:.1f} s of audio decoded, {info.duration:.1f} s announced",
        )
