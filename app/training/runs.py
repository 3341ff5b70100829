"""Training, calibrating and combining models, as the command line starts them. The editor and
``punctuate`` never import this module (nor the training code it calls)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def train_run(
    config_path: Path,
    data: Path | None = None,
    output: Path | None = None,
    resume: bool = False,
    restart: bool = False,
    stop_after: int | None = None,
) -> None:
    """Run (or continue, with ``resume``) the training a TOML file describes."""
    from app.training.config import TrainConfig, TrainConfigError
    from app.training.train import has_checkpoint, train

    config = TrainConfig.load(config_path)
    if data:
        config.data_root = data.resolve()
    if output:
        config.output = output.resolve()
    if resume and restart:
        raise TrainConfigError("give --resume or --restart, not both")
    if resume and not has_checkpoint(config.output):
        raise TrainConfigError(f"no checkpoint to resume in {config.output}")
    if has_checkpoint(config.output) and not (resume or restart):
        raise TrainConfigError(
            f"{config.output} holds a checkpoint of this run: --resume continues it, --restart starts over"
        )
    train(config, resume=resume, stop_after_steps=stop_after)


def calibrate(
    config_path: Path, model: Path, dev_words: int | None = None, data: Path | None = None
) -> dict[str, Any]:
    """Fit a trained model's mark biases and temperature on its run's dev data."""
    from app.training.config import TrainConfig
    from app.training.model_folder import calibrate_model

    overrides = {"dev_words_per_source": dev_words} if dev_words else None
    config = TrainConfig.load(config_path, overrides)
    if data:
        config.data_root = data.resolve()
    return calibrate_model(config, model)


def graft(text: Path, timing_from: Path, output: Path) -> None:
    """A text model with another model's timing branch put in (see ``graft_timing_branch``)."""
    from app.ml.packaging import graft_timing_branch

    graft_timing_branch(text, timing_from, output)
