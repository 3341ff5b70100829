"""What the editor draws of a file's audio: its loudness and the pauses between speech.

Made in the background process from the audio track it reads (``app.audio``) and handed to the
editor's waveform view, which asks it for the loudness of whatever stretch it shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Waveform:
    """What the editor draws of the audio: loudness per 10 ms and the pauses between speech."""

    loudness: Any  # numpy array, 0 (silence) to 1 (full scale), per 10 ms frame
    pauses: list[tuple[float, float]]  # seconds, stretches without speech of at least MIN_PAUSE
    duration: float

    MIN_PAUSE = 0.25

    @classmethod
    def from_track(cls, track: Any) -> Waveform:
        import numpy as np

        from app.audio.analysis import SPEECH_THRESHOLD, silent_runs
        from app.audio.vad import VAD_FRAME
        from app.core.audio_format import SAMPLE_RATE

        loudness = np.clip((np.asarray(track.energy_db, dtype=np.float32) + 60.0) / 60.0, 0.0, 1.0)
        speaking = np.asarray(track.speech) >= SPEECH_THRESHOLD
        step = VAD_FRAME / SAMPLE_RATE
        pauses = [
            (start * step, stop * step)
            for start, stop in silent_runs(speaking)
            if (stop - start) * step >= cls.MIN_PAUSE
        ]
        return cls(loudness, pauses, float(track.duration))

    def levels(self, start_ms: float, end_ms: float, buckets: int) -> Any:
        """The loudest frame in each of ``buckets`` equal stretches between two times."""
        import numpy as np

        edges = np.linspace(start_ms / 10, end_ms / 10, buckets + 1).astype(int)
        size = self.loudness.size
        result = np.zeros(buckets, dtype=np.float32)
        inside = edges[:-1] < size
        if not inside.any():
            return result
        starts = np.clip(edges[:-1][inside], 0, size - 1)
        stops = np.clip(np.maximum(edges[1:][inside], starts + 1), 1, size)
        # Each bucket runs to the next one's start; equal starts (zoomed in) give the frame itself.
        maxima = np.maximum.reduceat(self.loudness[: int(stops[-1])], starts)
        result[: maxima.size] = maxima
        return result
