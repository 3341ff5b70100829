"""Speech activity from the Silero VAD model that ships inside the ``silero-vad`` package (ONNX).

The model file is run on ONNX Runtime here, the way the package's own ONNX wrapper runs it (64
samples of context before each 512-sample frame, a recurrent state carried from frame to frame),
without importing the package, which imports torch: that import alone cost about 2 s of the
editor's first analysis. A wheel or a bundle carries the model file itself (``app/_bundled/vad``),
so that it needs neither the package nor torch."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from app.core.audio_format import SAMPLE_RATE
from app.core.bundled import packaged_speech_model

#: Silero scores 512-sample frames at 16 kHz: 32 ms each.
VAD_FRAME = 512
#: The samples of the previous frame it reads before each one, and its recurrent state's shape.
_CONTEXT = 64
_STATE_SIZE = 128


@cache
def _session() -> Any:
    import importlib.util

    import onnxruntime

    path = packaged_speech_model()
    if path is None:
        spec = importlib.util.find_spec("silero_vad")  # found, not imported: it would import torch
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("the silero-vad package is not installed")
        path = Path(next(iter(spec.submodule_search_locations))) / "data" / "silero_vad.onnx"
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


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
        session = _session()
        lanes = len(self._group)
        frames = [-(-chunk.size // VAD_FRAME) for chunk in self._group]
        # Each lane starts with a frame of silence as its context, as the package's wrapper does.
        audio = np.zeros((lanes, _CONTEXT + max(frames) * VAD_FRAME), dtype=np.float32)
        for lane, chunk in enumerate(self._group):
            audio[lane, _CONTEXT : _CONTEXT + chunk.size] = chunk
        state = np.zeros((2, lanes, _STATE_SIZE), dtype=np.float32)
        rate = np.array(SAMPLE_RATE, dtype=np.int64)
        scores = np.empty((lanes, max(frames)), dtype=np.float32)
        for index in range(max(frames)):
            window = audio[:, index * VAD_FRAME : (index + 1) * VAD_FRAME + _CONTEXT]
            out, state = session.run(None, {"input": window, "state": state, "sr": rate})
            scores[:, index] = out.reshape(-1)
        self._results.extend(scores[lane, :count] for lane, count in enumerate(frames))
        self._group = []
