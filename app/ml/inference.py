"""Running the model over whole documents: overlapping windows, batched, most-central prediction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from app.ml.model import PunctuationModel
from app.ml.windows import AudioEvidence, central_windows, encode_words, make_batch, plan_windows


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
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per word: probabilities of each mark after it (words x marks) and of its casing.

    The mark probabilities are ``softmax((log_softmax(logits) + mark_bias) / temperature)``.
    ``gaps`` holds each word's gap evidence (see ``app.ml.gaps``) for models with a gap branch,
    ``audio`` the frame features and word end times for models with an acoustic branch.
    """
    if not words:
        return torch.zeros((0, model.mark_head.out_features)), torch.zeros(
            (0, model.casing_head.out_features)
        )
    encoded = encode_words(tokenizer, words)
    windows = plan_windows(encoded, window_tokens - 2, stride)
    owner = central_windows(windows, len(words))
    wanted: dict[int, list[int]] = {}
    for word, window in enumerate(owner):
        wanted.setdefault(window, []).append(word)
    marks = torch.zeros((len(words), model.mark_head.out_features))
    casing = torch.zeros((len(words), model.casing_head.out_features))
    # Windows whose words are all owned elsewhere need not run at all.
    useful = [number for number in range(len(windows)) if number in wanted]
    bias = torch.tensor(list(mark_bias)) if mark_bias else torch.zeros(marks.size(-1))
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
            mark_logits, casing_logits = mark_logits.float(), casing_logits.float()
            mark_probs = torch.softmax((torch.log_softmax(mark_logits, dim=-1) + bias) / temperature, dim=-1)
            casing_probs = torch.softmax(casing_logits, dim=-1)
            for row, number in enumerate(numbers):
                first = windows[number][0]
                for word in wanted[number]:
                    marks[word] = mark_probs[row, word - first]
                    casing[word] = casing_probs[row, word - first]
    return marks, casing


def inference_options(settings: dict[str, Any], language: str | None = None) -> dict[str, Any]:
    """The keyword arguments of ``predict_probabilities`` a model's settings call for (the mark
    biases calibrated for ``language`` where there are some)."""
    biases = settings.get("mark_bias_by_language") or {}
    return {
        "window_tokens": int(settings.get("window_tokens", 192)),
        "stride": float(settings.get("stride", 0.5)),
        "temperature": float(settings.get("temperature", 1.0)),
        "mark_bias": biases.get(language, settings.get("mark_bias")),
    }
