"""Running a model over whole documents: overlapping windows, batched, and each word's
predictions merged over the windows that hold it (their mean, or the most central one's).

The model itself is anything that turns a batch of windows into logits (``LoadedModel``): the
torch model (``app.ml.packaging.TorchModel``, for training and for models not yet exported) or
its ONNX export (``app.ml.runtime.OnnxModel``, what the editor and the CLI run). This module
needs neither torch nor ONNX Runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from app.ml.model_settings import InferenceOptions, ModelSettings
from app.ml.windows import (
    WINDOW_MERGES,
    SpecialTokens,
    WindowBatch,
    central_windows,
    encode_words,
    make_batch,
    plan_windows,
)


class LoadedModel(Protocol):
    """A punctuation model ready to run, with its tokenizer and its settings (``punctum-model.json``)."""

    settings: ModelSettings
    tokenizer: Any
    special: SpecialTokens
    marks: int  # mark classes
    casings: int  # casing classes
    gap_features: int  # gap vector size; 0 without a gap branch

    def run(self, batch: WindowBatch) -> tuple[np.ndarray, np.ndarray]:
        """Mark logits (batch, words, marks) and casing logits (batch, words, casings), float32."""
        ...


def log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(axis=-1, keepdims=True)
    out: np.ndarray = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return out


def softmax(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.exp(log_softmax(x))
    return out


#: How a document is read when nothing says otherwise (a model's own: ``ModelSettings.inference_options``).
DEFAULT_OPTIONS = InferenceOptions()


def predict_probabilities(
    model: LoadedModel,
    words: Sequence[str],
    options: InferenceOptions = DEFAULT_OPTIONS,
    gaps: Sequence[list[float] | None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per word: probabilities of each mark after it (words x marks) and of its casing, read as
    ``options`` say (``ModelSettings.inference_options`` gives a model's own).

    The mark probabilities are ``softmax((log_softmax(logits) + mark_bias) / temperature)``.
    ``gaps`` holds each word's gap evidence (see ``app.core.gap_features``) for models with a gap branch.
    ``merge`` is ``central`` (each word keeps the window where it sits most centrally) or ``mean``
    (the mean of its log-probabilities over every window that holds it: each window sees a
    different stretch of context, so their mean is a small ensemble at no extra training cost).
    """
    merge, batch_size, mark_bias = options.merge, options.batch_size, options.mark_bias
    if merge not in WINDOW_MERGES:
        raise ValueError(f"unknown window merge {merge!r}: use one of {', '.join(WINDOW_MERGES)}")
    if not words:
        return np.zeros((0, model.marks), dtype=np.float32), np.zeros((0, model.casings), dtype=np.float32)
    special = model.special
    encoded = encode_words(model.tokenizer, words, special.unknown)
    windows = plan_windows(encoded, options.window_tokens - 2, options.stride)
    if merge == "central":
        owner = central_windows(windows, len(words))
        held: dict[int, list[int]] = {}
        for word, window in enumerate(owner):
            held.setdefault(window, []).append(word)
    else:
        held = {number: list(range(first, stop)) for number, (first, stop) in enumerate(windows)}
    mark_log_sums = np.zeros((len(words), model.marks), dtype=np.float32)
    casing = np.zeros((len(words), model.casings), dtype=np.float32)
    counts = np.zeros((len(words), 1), dtype=np.float32)
    # Windows whose words are all taken from other windows need not run at all.
    useful = [number for number in range(len(windows)) if number in held]
    bias = np.asarray(mark_bias, dtype=np.float32) if mark_bias else np.zeros(model.marks, dtype=np.float32)
    for offset in range(0, len(useful), batch_size):
        numbers = useful[offset : offset + batch_size]
        batch = make_batch([(encoded, *windows[n]) for n in numbers], special.start, special.end, special.pad)
        if gaps is not None and model.gap_features:
            batch.add_gaps([(gaps, *windows[n]) for n in numbers], model.gap_features)
        mark_logits, casing_logits = model.run(batch)
        mark_log_probs = log_softmax(mark_logits.astype(np.float32))
        casing_probs = softmax(casing_logits.astype(np.float32))
        for row, number in enumerate(numbers):
            first = windows[number][0]
            chosen = np.asarray(held[number])
            mark_log_sums[chosen] += mark_log_probs[row, chosen - first]
            casing[chosen] += casing_probs[row, chosen - first]
            counts[chosen] += 1
    marks = softmax((log_softmax(mark_log_sums / counts) + bias) / options.temperature)
    casing /= counts
    return marks, casing
