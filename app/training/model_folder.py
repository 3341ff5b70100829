"""The model folders a training run writes: how it saves ``best`` and ``last`` (as trained, or with
``full_layers`` its matrices' change cut to low rank), and the calibration a finished model's folder
gets from the run's dev documents."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.ml.model import PunctuationModel
from app.ml.packaging import TorchModel, base_matrices, low_rank_state, save_model
from app.training.config import TrainConfig
from app.training.sampling import dev_documents


def model_saver(
    config: TrainConfig, model: PunctuationModel, settings: dict[str, Any], log: Callable[[str], None]
) -> Callable[[Path], None]:
    """How the run writes a model folder: as it is, or, with ``full_layers``, its matrices' change
    from the base cut to ``saved_rank`` (``low_rank_state``; the share of the change kept is logged)."""
    if not config.full_layers:
        return lambda directory: save_model(model, settings, directory)
    base = base_matrices(config.encoder)

    def save(directory: Path) -> None:
        weights, kept = low_rank_state(model, base, config.saved_rank)
        save_model(model, settings, directory, weights)
        log(f"{directory.name}: rank {config.saved_rank} keeps {kept:.4f} of the matrices' change")

    return save


def calibrate_model(
    config: TrainConfig, model_dir: Path, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Fit the mark biases and temperature of a trained model on the dev data; write them into its settings."""
    from app.ml.packaging import load_model
    from app.ml.validation import CONFIG_NAME
    from app.training.calibrate import calibrate
    from app.training.scores import predict_documents

    model, tokenizer, read = load_model(model_dir)
    documents = dev_documents(config)
    # Raw probabilities: the model's windows, none of a previous calibration.
    uncalibrated = dataclasses.replace(read, temperature=1.0, mark_bias=None, mark_bias_by_language={})
    settings = read.as_json()
    probabilities = predict_documents(TorchModel(model, tokenizer), documents, uncalibrated)
    result = calibrate(probabilities, [d.labels for d in documents], [d.language for d in documents])
    settings.update({key: result[key] for key in ("temperature", "mark_bias", "mark_bias_by_language")})
    settings["calibration"] = result
    path = model_dir / CONFIG_NAME
    path.with_suffix(".tmp").write_text(json.dumps(settings, indent=2, ensure_ascii=False) + "\n")
    path.with_suffix(".tmp").replace(path)
    log(
        f"bias {result['mark_bias']}: dev F1 {result['f1_before']} -> {result['f1_after']}; "
        f"temperature {result['temperature']}: ECE {result['ece_before']} -> {result['ece_after']}"
    )
    return result
