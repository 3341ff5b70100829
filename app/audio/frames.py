"""Frame-level features for the model's acoustic branch: what each 10 ms of the audio sounds like.

Per frame: the log-mel spectrum (normalised per recording, since microphones and levels differ),
pitch in octaves from the speaker's median (intonation: a rise at a question's end), whether the
frame is voiced, loudness relative to the recording's loud parts, and speech probability. The
branch reads these around the end of each word, so only word end times are needed to use them.
"""

from __future__ import annotations

import numpy as np

from app.audio.analysis import HOP, MEL_BANDS, AudioTrack
from app.audio.decode import SAMPLE_RATE
from app.audio.vad import VAD_FRAME

FRAME_SECONDS = HOP / SAMPLE_RATE
SIZE = MEL_BANDS + 4  # mel bands, pitch, voiced, loudness, speech
_SLICE = 60_000  # frames (10 minutes)


def frame_features(track: AudioTrack) -> np.ndarray:
    """(frames, SIZE) float16 features at 10 ms; frame ``k`` starts at ``k * 10`` ms."""
    if track.mel is None:
        raise ValueError("this audio track was analysed without its spectrum")
    count = min(len(track.mel), len(track.f0), len(track.energy_db))
    if count == 0:
        return np.zeros((0, SIZE), dtype=np.float16)
    mean, std = _band_statistics(track.mel[:count])
    f0 = track.f0[:count]
    voiced = np.isfinite(f0)
    median = float(np.median(f0[voiced])) if voiced.any() else 150.0
    # In octaves (twelve semitones) from the median, so a typical rise is below 1.
    octaves = np.zeros(count, dtype=np.float32)
    octaves[voiced] = np.log2(f0[voiced] / median)
    energy = track.energy_db[:count]
    loudness = (energy - np.percentile(energy, 95)) / 20
    vad_index = np.minimum(np.arange(count) * HOP // VAD_FRAME, max(0, track.speech.size - 1))
    speech = track.speech[vad_index] if track.speech.size else np.zeros(count, dtype=np.float32)
    features = np.empty((count, SIZE), dtype=np.float16)
    # In slices, so an hour of audio never needs its spectrum in float32 at once.
    for first in range(0, count, _SLICE):
        stop = min(count, first + _SLICE)
        features[first:stop, :MEL_BANDS] = (track.mel[first:stop].astype(np.float32) - mean) / std
    features[:, MEL_BANDS] = np.clip(octaves, -2, 2)
    features[:, MEL_BANDS + 1] = voiced
    features[:, MEL_BANDS + 2] = np.clip(loudness, -3, 1)
    features[:, MEL_BANDS + 3] = speech
    return features


def _band_statistics(mel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation (floored) of each mel band, summed slice by slice."""
    total = np.zeros(mel.shape[1])
    squares = np.zeros(mel.shape[1])
    for first in range(0, len(mel), _SLICE):
        part = mel[first : first + _SLICE].astype(np.float64)
        total += part.sum(axis=0)
        squares += (part**2).sum(axis=0)
    mean = total / len(mel)
    variance = np.maximum(0.0, squares / len(mel) - mean**2)
    return mean.astype(np.float32), (np.sqrt(variance) + 1e-3).astype(np.float32)
