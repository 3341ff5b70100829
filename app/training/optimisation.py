"""What a training run optimises and how: the model built (from the models it continues) with the
parts that learn chosen, their learning rates by layer and over the run, and one optimisation step
on a batch of sampled windows."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from app.core.marks import MODEL_MARKS
from app.ml.model import GapBranch, PunctuationModel, batch_tensors
from app.ml.packaging import LORA_TARGETS, adapted_matrices, build_model, load_part, load_weights
from app.ml.windows import SpecialTokens, make_batch
from app.training import data as corpora
from app.training import gaps
from app.training.config import TrainConfig
from app.training.sampling import Sampler


def run_model(
    config: TrainConfig, resuming: bool, log: Callable[[str], None]
) -> tuple[PunctuationModel, Any, dict[str, Any]]:
    """The run's model (weights from ``init_from`` and ``timing_branch_from`` unless it resumes),
    its tokenizer and its settings, with the parts it trains chosen."""
    model, tokenizer, packaging_config = build_model(
        config.encoder,
        lora_rank=config.lora_rank,
        lora_alpha=config.lora_alpha,
        layer_dropout=config.layer_dropout,
        gap_features=gaps.SIZE if config.gap_branch else 0,
        gap_context=config.gap_context if config.gap_branch else 0,
        timing_context=config.timing_context if config.gap_branch else 0,
    )
    packaging_config["window_tokens"] = config.window_tokens
    if config.gap_branch:
        heard = any(spec["kind"] == "speech" for spec in config.sources) and not config.frozen_gap_branch
        packaging_config["gap_inputs"] = list(gaps.FEATURES if heard else gaps.TIMING_FEATURES)
    if config.init_from is not None and not resuming:
        load_weights(model, config.init_from, new_parts=("gap_branch.", "timing_branch."))
        log(f"starting from {config.init_from}")
    if config.timing_branch_from is not None and not resuming:
        load_part(model, config.timing_branch_from, "timing_branch.")
        log(f"timing branch from {config.timing_branch_from}")
    if config.full_layers:
        # The adapters' work goes into the matrices, which learn from here on (a resumed run's
        # checkpoint then puts every matrix back).
        encoder: Any = model.encoder
        model.encoder = encoder.merge_and_unload()
        packaging_config["lora"] = {
            "rank": config.saved_rank,
            "alpha": config.saved_rank,
            "targets": list(LORA_TARGETS),
        }
    choose_trainable(model, config)
    return model, tokenizer, packaging_config


def choose_trainable(model: nn.Module, config: TrainConfig) -> None:
    """Freeze what the config keeps as it is (built models start with adapters and heads trainable)."""
    evidence_parts = tuple(f"gap_branch.{part}" for part in GapBranch.EVIDENCE_PARTS)
    encoder: Any = model.encoder
    learning_matrices = {f"encoder.{name}.weight" for name in adapted_matrices(encoder)}
    for name, parameter in model.named_parameters():
        layer = _layer_number(name)
        if config.full_layers and name.startswith("encoder."):
            parameter.requires_grad = name in learning_matrices
        if name.startswith("encoder.") and layer is not None and layer < config.frozen_layers:
            parameter.requires_grad = False
        if config.only_branches and not name.startswith(("gap_branch.", "timing_branch.")):
            parameter.requires_grad = False
        if config.only_casing_head and not name.startswith("casing_head."):
            parameter.requires_grad = False
        if config.frozen_gap_branch and name.startswith("gap_branch."):
            parameter.requires_grad = config.gap_evidence_learns and name.startswith(evidence_parts)


def _layer_number(name: str) -> int | None:
    parts = name.split(".")
    if "layer" in parts:
        index = parts.index("layer") + 1
        if index < len(parts) and parts[index].isdigit():
            return int(parts[index])
    return None


def parameter_groups(model: nn.Module, config: TrainConfig, layers: int) -> list[dict[str, Any]]:
    """Heads at ``lr_head``; adapters of layer i at ``lr_adapters * decay^(layers - 1 - i)``."""
    groups: dict[float, list[nn.Parameter]] = {}
    for name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            continue
        if name.startswith("encoder."):
            layer = _layer_number(name)
            depth = layers - 1 - (layer if layer is not None else 0)
            top = config.lr_encoder if config.full_layers and config.lr_encoder else config.lr_adapters
            rate = top * config.layer_decay**depth
        else:
            rate = config.lr_head
        groups.setdefault(rate, []).append(parameter)
    return [{"params": params, "lr": rate, "initial_lr": rate} for rate, params in sorted(groups.items())]


def _schedule(step: int, config: TrainConfig, elapsed_seconds: float = 0.0) -> float:
    """Warm-up, then cosine decay towards whichever ends first, the steps or the time budget, so
    a run on a busy machine still finishes its decay inside the budget."""
    if step < config.warmup_steps:
        return (step + 1) / config.warmup_steps
    by_steps = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
    by_time = elapsed_seconds / max(1.0, config.time_budget_seconds)
    progress = max(by_steps, by_time)
    return max(0.05, 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


class Stepper:
    """One optimisation step on a batch the sampler draws (the learning rate set for the step)."""

    def __init__(
        self,
        model: PunctuationModel,
        tokenizer: Any,
        optimizer: torch.optim.Optimizer,
        sampler: Sampler,
        config: TrainConfig,
    ) -> None:
        self.model, self.optimizer, self.sampler, self.config = model, optimizer, sampler, config
        self.special = SpecialTokens.of(tokenizer)
        class_weights = torch.ones(len(MODEL_MARKS))
        class_weights[0] = config.none_weight
        class_weights[MODEL_MARKS.index("?")] = config.question_weight
        self.mark_loss = nn.CrossEntropyLoss(weight=class_weights, ignore_index=corpora.UNKNOWN)
        self.casing_loss = nn.CrossEntropyLoss(ignore_index=corpora.UNKNOWN)

    def __call__(self, step: int, elapsed_seconds: float) -> float:
        config, model, sampler, special = self.config, self.model, self.sampler, self.special
        for group in self.optimizer.param_groups:
            group["lr"] = group["initial_lr"] * _schedule(step, config, elapsed_seconds)
        windows = [sampler.sample() for _ in range(config.batch_size)]
        batch = make_batch(
            [(d.encoded, a, b) for d, a, b in windows], special.start, special.end, special.pad
        )
        # The draws below keep their order: a resumed run must draw exactly what the run would have.
        if model.gap_branch is not None:
            batch.add_gaps(
                [
                    (d.gaps if sampler.rng.random() >= config.drop_timing else None, a, b)
                    for d, a, b in windows
                ],
                gaps.SIZE,
            )
        marks = torch.full((len(windows), batch.words), corpora.UNKNOWN, dtype=torch.long)
        casings = torch.full((len(windows), batch.words), corpora.UNKNOWN, dtype=torch.long)
        for row, (document, first, stop) in enumerate(windows):
            marks[row, : stop - first] = torch.tensor(document.text.labels[first:stop])
            casings[row, : stop - first] = torch.tensor(document.casing[first:stop])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.bf16):
            mark_logits, casing_logits = model(**batch_tensors(batch))
        mark_logits, casing_logits = mark_logits.float(), casing_logits.float()
        loss = self.mark_loss(mark_logits.reshape(-1, mark_logits.size(-1)), marks.reshape(-1))
        if (casings != corpora.UNKNOWN).any():
            loss = loss + config.casing_weight * self.casing_loss(
                casing_logits.reshape(-1, casing_logits.size(-1)), casings.reshape(-1)
            )
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for g in self.optimizer.param_groups for p in g["params"]], 1.0)
        self.optimizer.step()
        return float(loss.item())
