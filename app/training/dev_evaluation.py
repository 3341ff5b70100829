"""Judging a training run on its dev documents as it trains: each evaluation scored and recorded
in the run's state, the model saved as ``best`` when its slot error rate is the lowest yet, and the
evaluations without progress counted for early stopping."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from app.ml.model import PunctuationModel
from app.ml.packaging import TorchModel
from app.training import data as corpora
from app.training.config import TrainConfig
from app.training.scores import evaluate_documents


@dataclass
class RunParts:
    """What an evaluation during a run reads and keeps."""

    model: PunctuationModel
    tokenizer: Any
    settings: dict[str, Any]
    dev_documents: list[corpora.LabelledText]
    gap_inputs: Any
    save: Callable[[Path], None]


def evaluate_and_keep_best(
    run: RunParts,
    config: TrainConfig,
    state: dict[str, Any],
    elapsed_seconds: float,
    log: Callable[[str], None],
) -> None:
    """Score the model on dev, record it, and save it as ``best`` when its SER is the lowest yet."""
    run.model.eval()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.bf16):
        scores = evaluate_documents(
            TorchModel(run.model, run.tokenizer), run.dev_documents, config.window_tokens, run.gap_inputs
        )
    run.model.train()
    ser = float(scores["overall"]["SER"])
    state["evaluations"].append(
        {"step": state["step"], "minutes": round(elapsed_seconds / 60, 1), **scores["overall"]}
    )
    log(f"step {state['step']}: dev SER {ser:.1f}, F1 {scores['overall']['overall']['f1']}")
    if state["best_ser"] is None or ser < state["best_ser"]:
        state.update(best_ser=ser, best_step=state["step"], bad_evals=0)
        run.save(config.output / "best")
    else:
        state["bad_evals"] += 1
