"""Speech activity from the Silero VAD model that ships inside the ``silero-vad`` package (ONNX)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any

import numpy as np

from app.audio.decode import SAMPLE_RATE

#: Silero scores 512-sample frames at 16 kHz: 32 ms each.
VAD_FRAME = 512


@cache
def _model() -> Any:
    from silero_vad import load_silero_vad

    return load_silero_vad(onnx=True)


class SpeechDetector:
    """Per 32 ms frame, the probability that someone speaks, fed chunk by chunk.

    Consecutive chunks run side by side as a batch (one lane each), several times faster than one
    frame at a time; each chunk starts from a fresh model state, which costs about 0.1 s of
    warm-up per chunk.
    """

    def __init__(self, lanes: int = 8) -> None:
        self.lanes = lanes
        self._group: list[np.ndarray] = []
        self._results: list[np.ndarray] = []

    def feed(self, chunk: np.ndarray) -> None:
        self._group.append(chunk)
        if len(self._group) == self.lanes:
            self._flush()

    def finish(self) -> np.ndarray:
        self._flush()
        return np.concatenate(self._results) if self._results else np.zeros(0, dtype=np.float32)

    def _flush(self) -> None:
        if not self._group:
            return
        import torch

        model = _model()
        frames = [-(-chunk.size // VAD_FRAME) for chunk in self._group]
        batch = np.zeros((len(self._group), max(frames) * VAD_FRAME), dtype=np.float32)
        for lane, chunk in enumerate(self._group):
            batch[lane, : chunk.size] = chunk
        audio = torch.from_numpy(batch)
        model.reset_states(len(self._group))
        scores = np.empty((len(self._group), max(frames)), dtype=np.float32)
        with torch.inference_mode():
            for index in range(max(frames)):
                window = audio[:, index * VAD_FRAME : (index + 1) * VAD_FRAME]
                scores[:, index] = model(window, SAMPLE_RATE).reshape(-1).numpy()
        self._results.extend(scores[lane, :count] for lane, count in enumerate(frames))
        self._group = []


def speech_probabilities(chunks: Iterable[np.ndarray]) -> np.ndarray:
    detector = SpeechDetector()
    for chunk in chunks:
        detector.feed(chunk)
    return detector.finish()
