"""A model folder checked before anything runs it: ``punctum-model.json``'s settings (the type and
range of every key the loaders read), the base encoder it names and the weights (finite, and
shaped as the settings say).

NumPy and safetensors only, so the ONNX runtime path checks a folder without importing torch, and
a malformed folder is refused in a fraction of a second instead of after an export, or not at all
(a zero temperature or NaN weights run and give nothing, or nonsense). Nothing is ever unpickled.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from app.core.errors import PunctumError
from app.core.gap_features import FEATURES
from app.core.json_files import read_json_object
from app.core.marks import MODEL_MARKS
from app.ml.base_encoder import BASE_ENCODER, base_encoder_dir
from app.ml.model_settings import DEFAULT_STRIDE, DEFAULT_WINDOW_MERGE, DEFAULT_WINDOW_TOKENS, ModelSettings
from app.ml.windows import WINDOW_MERGES

CONFIG_NAME = "punctum-model.json"
WEIGHTS_NAME = "weights.safetensors"
FORMAT = 1
CASINGS = ("lower", "capitalised", "upper")
PICKLE_SUFFIXES = {".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt"}
#: The longest window the encoders' position embeddings allow (XLM-R and BERT: 512 tokens).
MAX_WINDOW_TOKENS = 512
#: A window holds its start and end tokens and at least one word's.
MIN_WINDOW_TOKENS = 3
Weight = TypeVar("Weight")


class ModelError(PunctumError):
    """A model that cannot be found or loaded."""


def check_model(directory: Path) -> ModelSettings:
    """``directory``'s settings, once they, its encoder and its weights are found sound; else a
    ``ModelError`` naming the folder (or its file) and the problem."""
    settings = check_settings(directory)
    encoder = check_encoder(directory, settings)
    check_weights(directory, settings, encoder)
    check_vocabulary(directory, encoder)
    return settings


def check_vocabulary(directory: Path, encoder: dict[str, Any]) -> None:
    """A compact vocabulary list (``app.ml.vocabulary``), when the model has one, is readable and
    names pieces the encoder has."""
    from app.ml.vocabulary import VOCABULARY_NAME, VocabularyError, read_vocabulary

    path = directory / VOCABULARY_NAME
    if not path.is_file():
        return
    try:
        kept = read_vocabulary(path)
    except (OSError, UnicodeDecodeError, VocabularyError) as error:
        raise ModelError(f"{path}: {error}") from None
    size = encoder.get("vocab_size")
    if isinstance(size, int) and kept[-1] >= size:
        raise ModelError(f"{path}: piece id {kept[-1]} is past the encoder's {size} pieces")


def check_settings(directory: Path) -> ModelSettings:
    """``punctum-model.json`` read and checked (the weights and the encoder are not looked at)."""
    path = directory / CONFIG_NAME
    if not path.is_file():
        refuse_pickle_only(directory)
        raise ModelError(f"{directory}: not a Punctum model (no {CONFIG_NAME})")
    settings = read_json_object(path, ModelError, "the model settings")
    problem = _settings_problem(settings)
    if problem:
        raise ModelError(f"{path}: {problem}")
    return ModelSettings.from_json(settings)


def _settings_problem(settings: dict[str, Any]) -> str | None:
    """What is wrong with the settings, or None."""
    if not _is_int(settings.get("format")) or settings["format"] != FORMAT:
        return f"model format {settings.get('format')!r}, this Punctum reads {FORMAT}"
    encoder = settings.get("encoder")
    if not isinstance(encoder, str) or not encoder.strip():
        found = "is missing" if encoder is None else f"is {encoder!r}"
        return f"encoder {found}: name the base encoder ({BASE_ENCODER}, a folder or a Hugging Face id)"
    if settings.get("marks") != list(MODEL_MARKS):
        return f"marks {settings.get('marks')!r}: this Punctum's models predict {list(MODEL_MARKS)!r}"
    if settings.get("casings", list(CASINGS)) != list(CASINGS):
        return f"casings {settings['casings']!r}: this Punctum's models predict {list(CASINGS)!r}"
    lora = settings.get("lora", {})
    if not isinstance(lora, dict):
        return f"lora is {lora!r}: must be an object with rank and alpha"
    problem = (
        _whole(lora, "rank", 0, 0, "lora.")
        or _whole(lora, "alpha", 1, 1, "lora.")
        or _whole(settings, "window_tokens", DEFAULT_WINDOW_TOKENS, MIN_WINDOW_TOKENS, high=MAX_WINDOW_TOKENS)
        or _whole(settings, "gap_features", 0, 0, high=len(FEATURES))
        or _whole(settings, "gap_context", 0, 0)
        or _whole(settings, "timing_context", 0, 0)
        or _positive(settings, "temperature", 1.0)
        or _positive(settings, "stride", DEFAULT_STRIDE, high=1.0)
        or _biases(settings.get("mark_bias"), "mark_bias")
    )
    if problem:
        return problem
    targets = lora.get("targets", [])
    if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
        return f"lora.targets is {targets!r}: must be a list of layer names"
    merge = settings.get("window_merge", DEFAULT_WINDOW_MERGE)
    if merge not in WINDOW_MERGES:
        return f"window_merge {merge!r} is not one of {', '.join(WINDOW_MERGES)}"
    if settings.get("acoustic_features"):
        # Models made before the listener could read mel frames; the recogniser listens instead now.
        return "acoustic_features: this model reads audio frames, which this Punctum no longer does"
    if settings.get("timing_context") and not settings.get("gap_features"):
        return "timing_context needs gap_features"
    names = settings.get("gap_inputs")
    if names is not None and (not isinstance(names, list) or not set(names) <= set(FEATURES)):
        return f"gap_inputs {names!r}: must be a list of {', '.join(FEATURES)}"
    trained = settings.get("languages")
    if trained is not None and (
        not isinstance(trained, list) or not all(isinstance(c, str) and len(c) == 2 for c in trained)
    ):
        return f"languages {trained!r}: must be a list of two-letter language codes"
    by_language = settings.get("mark_bias_by_language")
    if by_language is not None:
        if not isinstance(by_language, dict):
            return "mark_bias_by_language must be an object of language codes and mark biases"
        for language, biases in by_language.items():
            problem = _biases(biases, f"mark_bias_by_language.{language}")
            if problem:
                return problem
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _whole(
    settings: dict[str, Any], key: str, default: int, low: int, prefix: str = "", high: int | None = None
) -> str | None:
    value = settings.get(key, default)
    if not _is_int(value) or value < low or (high is not None and value > high):
        limits = f"from {low} to {high}" if high is not None else f"of at least {low}"
        return f"{prefix}{key} is {value!r}: must be a whole number {limits}"
    return None


def _positive(settings: dict[str, Any], key: str, default: float, high: float | None = None) -> str | None:
    value = settings.get(key, default)
    if not _is_number(value) or value <= 0 or (high is not None and value > high):
        limits = f"above 0 and at most {high:g}" if high is not None else "above 0"
        return f"{key} is {value!r}: must be a number {limits}"
    return None


def _biases(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != len(MODEL_MARKS) or not all(map(_is_number, value)):
        return f"{name} is {value!r}: must be {len(MODEL_MARKS)} numbers, one per mark"
    return None


# ----------------------------------------------------------------------------- the base encoder


def _looks_like_folder(name: str) -> bool:
    """Whether an encoder setting names a folder rather than a Hugging Face id ("owner/name")."""
    return (
        name.startswith(("/", ".", "~"))
        or "\\" in name
        or name.count("/") > 1
        or Path(name).expanduser().exists()
    )


def check_encoder(directory: Path, settings: ModelSettings) -> dict[str, Any]:
    """The encoder's ``config.json`` where it can be read without the network (the converted base
    encoder, a local folder); {} for a Hugging Face id. A folder must exist and hold safetensors
    weights (a pickle is never loaded)."""
    name = settings.encoder
    if name == BASE_ENCODER:
        folder = base_encoder_dir()  # converted at set-up; built on first use otherwise
        return _encoder_config(folder) if folder.is_dir() else {}
    if not _looks_like_folder(name):
        return {}
    folder = Path(name).expanduser()
    where = f"{directory / CONFIG_NAME}: encoder {name}"
    if not folder.is_dir():
        raise ModelError(f"{where}: no such folder")
    files = [f for f in folder.iterdir() if f.is_file()]
    if not any(f.suffix == ".safetensors" for f in files):
        pickles = [f.name for f in files if f.suffix in PICKLE_SUFFIXES]
        if pickles:
            raise ModelError(f"{where}: only pickle weights ({pickles[0]}); Punctum loads safetensors only")
        raise ModelError(f"{where}: no safetensors weights in the folder")
    if not (folder / "config.json").is_file():
        raise ModelError(f"{where}: no config.json in the folder")
    try:
        return _encoder_config(folder)
    except ModelError as error:
        raise ModelError(f"{where}: {error}") from None


def _encoder_config(folder: Path) -> dict[str, Any]:
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ModelError(f"unreadable config.json ({error})") from None
    return config if isinstance(config, dict) else {}


# ----------------------------------------------------------------------------- the weights


def check_weights(directory: Path, settings: ModelSettings, encoder: dict[str, Any]) -> None:
    """The weights hold finite numbers, every part the settings call for and none they do not,
    each of the shape the settings (and the encoder's ``config.json``, where known) say."""
    from safetensors.numpy import load_file

    path, weights = read_weights(directory, load_file)
    problem = _weights_problem(weights, settings, encoder)
    if problem:
        raise ModelError(f"{path}: {problem}")


def read_weights(directory: Path, load: Callable[[str], dict[str, Weight]]) -> tuple[Path, dict[str, Weight]]:
    """``directory``'s weights file and its weights as ``load`` (a safetensors ``load_file``) reads
    them; a ``ModelError`` where the file is missing or damaged."""
    path = directory / WEIGHTS_NAME
    if not path.is_file():
        refuse_pickle_only(directory)
        raise ModelError(f"{directory}: no {WEIGHTS_NAME}")
    try:
        return path, load(str(path))
    except Exception as error:  # safetensors raises its own error types for damaged files
        raise ModelError(f"{path}: damaged weights ({error})") from None


def _weights_problem(
    weights: dict[str, np.ndarray], settings: ModelSettings, encoder: dict[str, Any]
) -> str | None:
    for name, value in weights.items():
        if not np.issubdtype(value.dtype, np.floating):
            return f"{name} holds {value.dtype} values, not floating-point ones"
        if not np.isfinite(value).all():
            return f"{name} holds values that are not finite (NaN or infinity)"
    marks, width = len(MODEL_MARKS), None
    # The encoder's size from its config.json, else (a Hugging Face id) as the mark head has it.
    mark_head = weights.get("mark_head.weight")
    text: int | None = None
    if _is_int(encoder.get("hidden_size")):
        text = 2 * int(encoder["hidden_size"])
    elif mark_head is not None and mark_head.ndim == 2:
        text = int(mark_head.shape[1])
    layers: int | None = (
        int(encoder["num_hidden_layers"]) + 1 if _is_int(encoder.get("num_hidden_layers")) else None
    )
    expected: dict[str, tuple[int | None, ...]] = {
        "scale": (),
        "layer_logits": (layers,),
        "mark_head.weight": (marks, text),
        "mark_head.bias": (marks,),
        "casing_head.weight": (len(CASINGS), text),
        "casing_head.bias": (len(CASINGS),),
    }
    gaps, context = settings.gap_features, settings.gap_context
    timing = settings.timing_context
    for branch, present in (("gap_branch", gaps), ("timing_branch", timing)):
        absent = weights.get(f"{branch}.absent")
        width = int(absent.shape[0]) if absent is not None and absent.ndim == 1 else None
        parts = [name for name in weights if name.startswith(f"{branch}.")]
        if not present:
            if parts:
                return f"{parts[0]} is there but the settings have no {branch.replace('_', ' ')}"
            continue
        expected.update(
            {
                f"{branch}.absent": (width,),
                f"{branch}.text.weight": (width, text),
                f"{branch}.out.weight": (marks, width),
                f"{branch}.out.bias": (marks,),
            }
        )
        if branch == "gap_branch":
            expected["gap_branch.evidence.0.weight"] = (width, gaps)
            if context:
                expected["gap_branch.context.weight"] = (width, gaps + 1, 2 * context + 1)
            elif "gap_branch.context.weight" in weights:
                return "gap_branch.context.weight is there but gap_context is 0"
        else:
            expected["timing_branch.timing.0.weight"] = (width, gaps + 1, 2 * timing + 1)
    for name, shape in expected.items():
        found = weights.get(name)
        if found is None:
            return f"{name} is missing"
        if len(found.shape) != len(shape) or any(
            want is not None and have != want for have, want in zip(found.shape, shape, strict=True)
        ):
            wanted = tuple("any" if want is None else want for want in shape)
            return f"{name} is {_shape(found.shape)}, the settings call for {_shape(wanted)}"
    return _lora_problem(weights, settings)


def _lora_problem(weights: dict[str, np.ndarray], settings: ModelSettings) -> str | None:
    rank = settings.lora.rank
    adapters = {name: value for name, value in weights.items() if ".lora_" in name}
    if rank and not adapters:
        return f"no LoRA adapters, though lora.rank is {rank}"
    for name, value in adapters.items():
        side = 0 if ".lora_A." in name else 1
        if value.ndim != 2 or value.shape[side] != rank:
            return f"{name} is {_shape(value.shape)}: its rank is not lora.rank, {rank}"
    return None


def _shape(shape: tuple[Any, ...]) -> str:
    return f"({', '.join(map(str, shape))})" if len(shape) != 1 else f"({shape[0]},)"


def refuse_pickle_only(directory: Path) -> None:
    """A ``ModelError`` for a folder whose only weights are pickle files (never loaded)."""
    if not directory.is_dir():
        return
    files = list(directory.iterdir())
    has_safetensors = any(f.suffix == ".safetensors" for f in files)
    pickles = [f.name for f in files if f.suffix in PICKLE_SUFFIXES]
    if pickles and not has_safetensors:
        raise ModelError(f"{directory}: only pickle weights ({pickles[0]}); Punctum loads safetensors only")
