"""One pass over a media file: loudness, pitch and speech activity as compact frame tracks.

The tracks are all later steps need (word timing estimates, pauses, prosody per word gap, the
editor's waveform), so the samples themselves are never kept: an hour of media ends up as a few
megabytes of frames.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.audio.decode import probe, stream_audio
from app.audio.vad import VAD_FRAME, SpeechDetector
from app.core.audio_format import SAMPLE_RATE

HOP = 160  # 10 ms frames for loudness and pitch
PITCH_WINDOW = 800  # 50 ms: two periods of the lowest pitch looked for
F0_MIN, F0_MAX = 70.0, 400.0
SPEECH_THRESHOLD = 0.5


@dataclass
class AudioTrack:
    """Frame tracks of one media file; frame ``k`` of a 10 ms track starts at ``k * 10`` ms."""

    duration: float  # seconds decoded
    energy_db: np.ndarray  # RMS level per 10 ms frame, dBFS
    f0: np.ndarray  # pitch per 10 ms frame in Hz, NaN where nobody speaks
    speech: np.ndarray  # speech probability per 32 ms frame
    # the decoded samples, 16 kHz mono float16 (115 MB an hour), kept once for the listener
    samples: np.ndarray | None = None

    def speaking(self, start: float, end: float) -> np.ndarray:
        """Speech flags of the 32 ms frames between two times (seconds)."""
        step = VAD_FRAME / SAMPLE_RATE
        first, stop = int(start / step), int(np.ceil(end / step))
        return self.speech[max(0, first) : max(0, stop)] >= SPEECH_THRESHOLD

    def speech_share(self, spans: list[tuple[float, float]]) -> float:
        """The share of the 32 ms frames inside ``spans`` (seconds) where someone speaks; 1.0 when
        the spans hold no frame."""
        flags = [self.speaking(start, end) for start, end in spans if end > start]
        frames = sum(f.size for f in flags)
        return float(sum(int(f.sum()) for f in flags) / frames) if frames else 1.0

    def silence_between(self, start: float, end: float) -> float:
        """Seconds of non-speech between two times."""
        if end <= start:
            return 0.0
        flags = self.speaking(start, end)
        if flags.size == 0:
            return end - start
        return float((~flags).mean() * (end - start))

    def frames(self, track: np.ndarray, start: float, end: float) -> np.ndarray:
        first, stop = int(start * SAMPLE_RATE / HOP), int(np.ceil(end * SAMPLE_RATE / HOP))
        return track[max(0, first) : max(0, stop)]


def silent_runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """Runs of non-speech frames in speech ``flags``, as (first, stop) frame indexes."""
    silent = np.concatenate(([0], ~flags.astype(bool), [0])).astype(np.int8)
    steps = np.diff(silent)  # 1 where a run of silence starts, -1 where it stops
    return list(zip(np.flatnonzero(steps == 1).tolist(), np.flatnonzero(steps == -1).tolist(), strict=True))


def pitch_track(samples: np.ndarray, count: int) -> np.ndarray:
    """Pitch in Hz at the centres of the ``count`` 10 ms frames of ``samples``, NaN where Praat's
    autocorrelation tracker (Boersma 1993) finds no voice."""
    import parselmouth

    sound = parselmouth.Sound(samples.astype(np.float64), sampling_frequency=SAMPLE_RATE)
    pitch = sound.to_pitch_ac(time_step=HOP / SAMPLE_RATE, pitch_floor=F0_MIN, pitch_ceiling=F0_MAX)
    found = pitch.selected_array["frequency"]
    centres = (np.arange(count) * HOP + PITCH_WINDOW / 2) / SAMPLE_RATE
    nearest = np.rint((centres - pitch.x1) / pitch.dx).astype(int)
    inside = (nearest >= 0) & (nearest < found.size)
    f0 = np.full(count, np.nan, dtype=np.float32)
    f0[inside] = found[nearest[inside]]
    f0[f0 <= 0] = np.nan  # Praat's 0 is "unvoiced"
    return f0


def analyse_media(
    path: Path,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    until: float | None = None,
) -> AudioTrack:
    """Decode ``path`` once and measure it (its first ``until`` seconds, where given: the part
    captions cover); ``progress`` gets the fraction done, when the length is known."""

    info = probe(path)
    length = min(info.duration, until) if info.duration and until is not None else info.duration
    detector = SpeechDetector()
    energies: list[np.ndarray] = []
    pitches: list[np.ndarray] = []
    tail = np.zeros(0, dtype=np.float32)
    decoded = 0
    kept: list[np.ndarray] = []
    for whole in stream_audio(path):
        if cancelled is not None and cancelled():
            raise InterruptedError("audio analysis cancelled")
        chunk = whole if until is None else whole[: max(0, round(until * SAMPLE_RATE) - decoded)]
        if not chunk.size:
            break
        detector.feed(chunk)
        decoded += chunk.size
        kept.append(chunk.astype(np.float16))
        samples = np.concatenate([tail, chunk]) if tail.size else chunk
        count = (samples.size - PITCH_WINDOW) // HOP + 1
        if count <= 0:
            tail = samples
            continue
        frames = np.lib.stride_tricks.sliding_window_view(samples, PITCH_WINDOW)[::HOP][:count]
        rms = np.sqrt(np.mean(frames.astype(np.float64) ** 2, axis=1))
        energies.append((20 * np.log10(np.maximum(rms, 1e-5))).astype(np.float32))
        pitches.append(pitch_track(samples[: (count - 1) * HOP + PITCH_WINDOW], count))
        tail = samples[count * HOP :]
        if progress is not None and length:
            progress(min(1.0, decoded / SAMPLE_RATE / length))
    speech = detector.finish()
    energy = np.concatenate(energies) if energies else np.zeros(0, dtype=np.float32)
    f0 = np.concatenate(pitches) if pitches else np.zeros(0, dtype=np.float32)
    # Pitch is only meaningful where someone speaks and the frame is not near silence.
    frame_times = (np.arange(f0.size) * HOP + PITCH_WINDOW / 2) / SAMPLE_RATE
    vad_index = np.minimum((frame_times * SAMPLE_RATE / VAD_FRAME).astype(int), max(0, speech.size - 1))
    voiced = (speech[vad_index] >= SPEECH_THRESHOLD) if speech.size else np.zeros(f0.size, bool)
    voiced &= energy > (np.percentile(energy, 95) - 35 if energy.size else 0)
    f0 = np.where(voiced, f0, np.nan).astype(np.float32)
    samples = np.concatenate(kept) if kept else np.zeros(0, dtype=np.float16)
    return AudioTrack(decoded / SAMPLE_RATE, energy, f0, speech, samples)
