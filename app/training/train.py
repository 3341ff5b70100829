"""``punctum train --config FILE.toml``: fine-tune the punctuation model.

Samples are windows over running text that start at a random word and span several sentences.
The encoder stays frozen and learns through LoRA adapters (peft), with learning rates that shrink
towards the lower layers; the layer mix and heads learn at a higher rate. Dev slot error rate is
measured on a schedule; the best state is kept and training stops early when it stops improving
or when the time budget runs out. Checkpoints (safetensors and JSON, no pickle) allow resuming.

This module runs the loop and keeps its checkpoints; the run's settings are read in ``config``,
its data drawn in ``sampling``, its model built and stepped in ``optimisation``, judged in
``dev_evaluation`` and written out in ``model_folder``.
"""

from __future__ import annotations

import json
import random
import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch import nn
from tqdm import tqdm

from app.ml.packaging import adapted_matrices, trainable_state
from app.training.config import TrainConfig, TrainConfigError
from app.training.dev_evaluation import RunParts, evaluate_and_keep_best
from app.training.model_folder import model_saver
from app.training.optimisation import Stepper, parameter_groups, run_model
from app.training.sampling import Sampler, run_data

CHECKPOINT_FILE = "checkpoint.safetensors"


def _checkpoint(
    path: Path, model: nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any]
) -> None:
    """Everything a resumed run needs, in one safetensors file replaced atomically: trainable
    weights, optimizer moments and torch's random state as tensors, the step, the sampler's
    random state and the run's history as JSON in its metadata (so the two never disagree).
    ``checkpoint.json`` beside it is the same state for people to read."""
    path.mkdir(parents=True, exist_ok=True)
    tensors = {f"model.{k}": v.contiguous() for k, v in run_weights(model).items()}
    for index, moments in optimizer.state_dict()["state"].items():
        for key, value in moments.items():
            tensors[f"optim.{index}.{key}"] = torch.as_tensor(value).contiguous()
    tensors["rng.torch"] = torch.get_rng_state()
    temporary = path / "checkpoint.tmp.safetensors"
    save_file(tensors, str(temporary), metadata={"state": json.dumps(state)})
    temporary.replace(path / CHECKPOINT_FILE)
    readable = path / "checkpoint.tmp.json"
    readable.write_text(json.dumps(state, indent=2))
    readable.replace(path / "checkpoint.json")


def run_weights(model: nn.Module) -> dict[str, torch.Tensor]:
    """What a checkpoint keeps of the model: its adapters and heads, and, once the encoder's own
    matrices learn (``full_layers``), every adapted matrix, trained or not."""
    state = trainable_state(model)
    encoder: Any = model.encoder
    if not hasattr(encoder, "peft_config"):
        state.update(
            {
                f"encoder.{name}.weight": m.weight.detach().clone()
                for name, m in adapted_matrices(encoder).items()
            }
        )
    return state


def checkpoint_folder(output: Path) -> Path:
    return output / "checkpoint"


def has_checkpoint(output: Path) -> bool:
    return (checkpoint_folder(output) / CHECKPOINT_FILE).exists()


def _resume(path: Path, model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any] | None:
    if not (path / CHECKPOINT_FILE).exists():
        return None
    with safe_open(str(path / CHECKPOINT_FILE), framework="pt") as file:
        metadata = file.metadata() or {}
        if "state" not in metadata:
            raise TrainConfigError(
                f"{path / CHECKPOINT_FILE} holds no training state; start over with --restart"
            )
        tensors = {key: file.get_tensor(key) for key in file.keys()}  # noqa: SIM118 (a file handle, not a dict)
    model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")}, strict=False)
    optimizer_state = optimizer.state_dict()
    moments: dict[int, dict[str, torch.Tensor]] = {}
    for key, value in tensors.items():
        if key.startswith("optim."):
            _, index, name = key.split(".", 2)
            moments.setdefault(int(index), {})[name] = value
    optimizer_state["state"] = moments
    optimizer.load_state_dict(optimizer_state)
    if "rng.torch" in tensors:
        torch.set_rng_state(tensors["rng.torch"])
    state: dict[str, Any] = json.loads(metadata["state"])
    return state


class _StopRequest:
    """SIGINT/SIGTERM while training: finish the step, write a checkpoint, then stop, so that
    Ctrl+C or a machine shutting down loses nothing ``--resume`` cannot pick up."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopRequest:
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                self._previous[number] = signal.signal(number, self._request)
        return self

    def _request(self, number: int, frame: Any) -> None:
        self.requested = True

    def __exit__(self, *exc: object) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)


def train(
    config: TrainConfig,
    resume: bool = True,
    log: Callable[[str], None] = print,
    stop_after_steps: int | None = None,
) -> dict[str, Any]:
    """Train as the config says, continuing from the run's checkpoint when ``resume`` and one
    exists. ``stop_after_steps`` pauses the run there (checkpoint written) as a signal would."""
    with _StopRequest() as stop_request:
        return _train(config, resume, log, stop_after_steps, stop_request)


def _train(
    config: TrainConfig,
    resume: bool,
    log: Callable[[str], None],
    stop_after_steps: int | None,
    stop_request: _StopRequest,
) -> dict[str, Any]:
    preparing = time.monotonic()
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    # A resumed run's checkpoint holds every weight it trains or keeps, so the models it started
    # from need not be at hand (it may continue on another machine).
    model, tokenizer, packaging_config = run_model(config, resume and has_checkpoint(config.output), log)
    gap_inputs = packaging_config.get("gap_inputs")
    train_sources, dev_documents, inventory = run_data(config, tokenizer, gap_inputs, log)
    sampler = Sampler(train_sources, config.window_tokens - 2, config.seed)

    encoder: Any = model.encoder
    layers = int(encoder.config.num_hidden_layers)
    optimizer = torch.optim.AdamW(parameter_groups(model, config, layers), weight_decay=config.weight_decay)
    state = _fresh_state()
    checkpoints = checkpoint_folder(config.output)
    # The time budget is for training alone: synthesising speech into an empty cache the first
    # time must not shorten the run, or a fresh reproduction would train less than the original.
    started = time.monotonic()
    preparation_minutes = round((started - preparing) / 60, 1)
    log(f"data ready in {preparation_minutes} minutes")
    restored = _resume(checkpoints, model, optimizer) if resume else None
    if restored is not None:
        state, started = restored, started - float(restored.get("elapsed_seconds", 0.0))
        sampler.rng.setstate(_tuple_state(state["sampler_rng"]))
        log(f"resumed at step {state['step']}")
    _begin_segment(state)
    segment_started = time.monotonic()
    config.output.mkdir(parents=True, exist_ok=True)
    step_once = Stepper(model, tokenizer, optimizer, sampler, config)
    save = model_saver(config, model, packaging_config, log)
    progress = tqdm(
        total=config.steps, initial=state["step"], desc="training", unit="step", dynamic_ncols=True
    )
    model.train()
    stop_reason = "steps done"
    while state["step"] < config.steps:
        if stop_request.requested or (stop_after_steps is not None and state["step"] >= stop_after_steps):
            stop_reason = f"paused at step {state['step']}; continue with --resume"
            _save_checkpoint(checkpoints, model, optimizer, state, sampler, started, segment_started)
            break
        loss = step_once(state["step"], time.monotonic() - started)
        state["step"] += 1
        progress.update(1)
        progress.set_postfix(loss=f"{loss:.3f}", best_ser=state["best_ser"])

        out_of_time = time.monotonic() - started > config.time_budget_seconds
        if state["step"] % config.eval_every == 0 or state["step"] == config.steps or out_of_time:
            run = RunParts(model, tokenizer, packaging_config, dev_documents, gap_inputs, save)
            evaluate_and_keep_best(run, config, state, time.monotonic() - started, log)
            # Out of patience; at the last step (or out of time) the run ends for that reason instead.
            if state["bad_evals"] >= config.patience and state["step"] < config.steps and not out_of_time:
                stop_reason = f"early stop: dev SER did not improve in {config.patience} evaluations"
        if out_of_time:
            stop_reason = f"time budget of {config.time_budget_minutes} minutes reached"
        if (
            state["step"] % config.checkpoint_every == 0
            or stop_reason != "steps done"
            or state["step"] == config.steps
        ):
            _save_checkpoint(checkpoints, model, optimizer, state, sampler, started, segment_started)
        if stop_reason != "steps done":
            break
    progress.close()
    # The final state too: the early-stopping pick is not always the one to keep or build on.
    save(config.output / "last")
    summary = _summary(state, stop_reason, (time.monotonic() - started) / 60, preparation_minutes, inventory)
    (config.output / "training.json").write_text(json.dumps(summary, indent=2))
    log(f"done: {stop_reason}; best dev SER {state['best_ser']} at step {state['best_step']}")
    return summary


def _summary(
    state: dict[str, Any], stop_reason: str, minutes: float, preparation_minutes: float, inventory: Any
) -> dict[str, Any]:
    """What ``training.json`` says of a run."""
    return {
        "stop_reason": stop_reason,
        "steps": state["step"],
        "best_step": state["best_step"],
        "best_dev_ser": state["best_ser"],
        "minutes": round(minutes, 1),
        "data_preparation_minutes": preparation_minutes,
        "evaluations": state["evaluations"],
        "segments": state["segments"],
        "data": inventory,
    }


def _begin_segment(state: dict[str, Any]) -> None:
    """Each start or resumption is a segment of the run, recorded with where it began and ended."""
    state.setdefault("segments", []).append(
        {
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "from_step": state["step"],
            "to_step": state["step"],
            "minutes": 0.0,
        }
    )


def _fresh_state() -> dict[str, Any]:
    """A run's state before its first step (a checkpoint holds it, in its metadata)."""
    return {
        "step": 0,
        "best_ser": None,
        "best_step": None,
        "evaluations": [],
        "bad_evals": 0,
        "elapsed_seconds": 0.0,
        "segments": [],
    }


def _save_checkpoint(
    checkpoints: Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    state: dict[str, Any],
    sampler: Sampler,
    started: float,
    segment_started: float,
) -> None:
    now = time.monotonic()
    state["sampler_rng"] = _list_state(sampler.rng.getstate())
    state["elapsed_seconds"] = now - started
    state["segments"][-1].update(to_step=state["step"], minutes=round((now - segment_started) / 60, 1))
    _checkpoint(checkpoints, model, optimizer, state)


def _list_state(state: Any) -> Any:
    return [list(state[1]), state[0], state[2]]


def _tuple_state(state: Any) -> Any:
    return (state[1], tuple(state[0]), state[2])
