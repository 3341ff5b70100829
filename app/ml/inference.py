"""Running the model over whole documents: overlapping windows, batched, and each word's
predictions merged over the windows that hold it (their mean, or the most central one's)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from app.ml.model import PunctuationModel
from app.ml.windows import (
    WINDOW_MERGES,
    AudioEvidence,
    central_windows,
    encode_words,
    make_batch,
    plan_windows,
)


def predict_probabilities(
    model: PunctuationModel,
    tokenizer: Any,
    words: Sequence[str],
    window_tokens: int = 192,
    batch_size: int = 8,
    temperature: float = 1.0,
    stride: float = 0.5,
    mark_bias: Sequence[float] | None = None,
    gaps: Sequence[list[float] | None] | None = None,
    audio: AudioEvidence | None = None,
    merge: str = "central",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per word: probabilities of each mark after it (words x marks) and of its casing.

    The mark probabilities are ``softmax((log_softmax(logits) + mark_bias) / temperature)``.
    ``gaps`` holds each word's gap evidence (see ``app.ml.gaps``) for models with a gap branch,
    ``audio`` the frame features and word end times for models with an acoustic branch.
    ``merge`` is ``central`` (each word keeps the window where it sits most centrally) or ``mean``
    (the mean of its log-probabilities over every window that holds it: each window sees a
    different stretch of context, so their mean is a small ensemble at no extra training cost).
    """
    if merge not in WINDOW_MERGES:
        raise ValueError(f"unknown window merge {merge!r}: use one of {', '.join(WINDOW_MERGES)}")
    if not words:
        return torch.zeros((0, model.mark_head.out_features)), torch.zeros(
            (0, model.casing_head.out_features)
        )
    encoded = encode_words(tokenizer, words)
    windows = plan_windows(encoded, window_tokens - 2, stride)
    if merge == "central":
        owner = central_windows(windows, len(words))
        held: dict[int, list[int]] = {}
        for word, window in enumerate(owner):
            held.setdefault(window, []).append(word)
    else:
        held = {number: list(range(first, stop)) for number, (first, stop) in enumerate(windows)}
    mark_log_sums = torch.zeros((len(words), model.mark_head.out_features))
    casing = torch.zeros((len(words), model.casing_head.out_features))
    counts = torch.zeros((len(words), 1))
    # Windows whose words are all taken from other windows need not run at all.
    useful = [number for number in range(len(windows)) if number in held]
    bias = torch.tensor(list(mark_bias)) if mark_bias else torch.zeros(mark_log_sums.size(-1))
    with torch.inference_mode():
        for offset in range(0, len(useful), batch_size):
            numbers = useful[offset : offset + batch_size]
            batch = make_batch(
                [(encoded, *windows[n]) for n in numbers],
                tokenizer.cls_token_id,
                tokenizer.sep_token_id,
                tokenizer.pad_token_id,
            )
            if gaps is not None and model.gap_branch is not None:
                batch.add_gaps([(gaps, *windows[n]) for n in numbers], model.gap_branch.features)
            if audio is not None and model.acoustic_branch is not None:
                batch.add_audio([(audio, *windows[n]) for n in numbers], model.acoustic_branch.features)
            mark_logits, casing_logits = model(**batch.model_inputs())
            # Under bfloat16 autocast the logits come out in bfloat16; probabilities need float32.
            mark_log_probs = torch.log_softmax(mark_logits.float(), dim=-1)
            casing_probs = torch.softmax(casing_logits.float(), dim=-1)
            for row, number in enumerate(numbers):
                first = windows[number][0]
                chosen = torch.tensor(held[number])
                mark_log_sums[chosen] += mark_log_probs[row, chosen - first]
                casing[chosen] += casing_probs[row, chosen - first]
                counts[chosen] += 1
    marks = torch.softmax((torch.log_softmax(mark_log_sums / counts, dim=-1) + bias) / temperature, dim=-1)
    casing /= counts
    return marks, casing


def inference_options(settings: dict[str, Any], language: str | None = None) -> dict[str, Any]:
    """The keyword arguments of ``predict_probabilities`` a model's settings call for (the mark
    biases calibrated for ``language`` where there are some)."""
    biases = settings.get("mark_bias_by_language") or {}
    return {
        "window_tokens": int(settings.get("window_tokens", 192)),
        "stride": float(settings.get("stride", 0.5)),
        "merge": str(settings.get("window_merge", "central")),
        "temperature": float(settings.get("temperature", 1.0)),
        "mark_bias": biases.get(language, settings.get("mark_bias")),
    }
