"""Tiny random models for fast tests of the model code (the real encoder's tokenizer, 2 small layers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.ml.base_encoder import resolve_encoder

#: A short lowercase run of speech-like words for tiny-model tests.
WORDS = [
    "so",
    "what",
    "is",
    "this",
    "it",
    "is",
    "a",
    "test",
    "of",
    "the",
    "model",
    "and",
    "it",
    "works",
    "well",
    "do",
    "you",
    "agree",
]


def tiny_encoder(directory: Path) -> Path:
    """Two small layers over the real encoder's tokenizer, whose files are copied as they are, so
    that a process loads that tokenizer once for the real encoder and every tiny one."""
    import shutil

    from transformers import BertConfig, BertModel

    from app.ml.packaging import load_tokenizer

    if (directory / "config.json").exists():
        return directory
    base = resolve_encoder(None)
    tokenizer = load_tokenizer(base)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
    )
    import torch

    torch.manual_seed(0)
    BertModel(config, add_pooling_layer=False).save_pretrained(directory, safe_serialization=True)
    for name in (
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "sentencepiece.bpe.model",
    ):
        if (Path(base) / name).is_file():
            shutil.copy2(Path(base) / name, directory / name)
    return directory


def tiny_model(folder: Path) -> Path:
    """A saved tiny model that puts a period after every word and proposes no capitals of its own."""
    import torch

    from app.ml.packaging import build_model, save_model

    torch.manual_seed(4)
    model, _, config = build_model(str(tiny_encoder(folder / "encoder")), lora_rank=2, lora_alpha=4)
    with torch.no_grad():
        model.mark_head.bias.copy_(torch.tensor([0.0, 0.0, 3.0, 0.0, -5.0, -5.0]))
        model.casing_head.bias.copy_(torch.tensor([5.0, 0.0, 0.0]))
    save_model(model, config, folder / "model")
    return folder / "model"


def predict(
    network: Any, tokenizer: Any, words: list[str], gaps: Any = None, **options: Any
) -> tuple[Any, Any]:
    """``predict_probabilities`` for a torch model, as torch tensors (what the model tests compare)."""
    import torch

    from app.ml.inference import predict_probabilities
    from app.ml.model_settings import InferenceOptions
    from app.ml.packaging import TorchModel

    marks, casing = predict_probabilities(
        TorchModel(network, tokenizer), words, InferenceOptions(**options), gaps
    )
    return torch.from_numpy(marks), torch.from_numpy(casing)
