"""``punctum train --config FILE.toml``: fine-tune the punctuation model.

Samples are windows over running text that start at a random word and span several sentences.
The encoder stays frozen and learns through LoRA adapters (peft), with learning rates that shrink
towards the lower layers; the layer mix and heads learn at a higher rate. Dev slot error rate is
measured on a schedule; the best state is kept and training stops early when it stops improving
or when the time budget runs out. Checkpoints (safetensors and JSON, no pickle) allow resuming.
"""

from __future__ import annotations

import json
import math
import random
import signal
import threading
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch import nn
from tqdm import tqdm

from app.audio.frames import FRAME_SECONDS
from app.audio.frames import SIZE as FRAME_FEATURES
from app.core.errors import PunctumError
from app.core.marks import MODEL_MARKS
from app.ml import gaps
from app.ml.model import GapBranch, PunctuationModel, batch_tensors
from app.ml.packaging import (
    LORA_TARGETS,
    TorchModel,
    adapted_matrices,
    base_matrices,
    build_model,
    load_part,
    load_weights,
    low_rank_state,
    save_model,
    trainable_state,
)
from app.ml.windows import AudioEvidence, Encoded, SpecialTokens, encode_words, make_batch, window_end
from app.training import data as corpora
from app.training.scores import evaluate_documents


class TrainConfigError(PunctumError):
    """A training configuration that cannot be read or makes no sense."""


@dataclass
class Source:
    name: str
    language: str
    weight: float
    documents: list[corpora.LabelledText]


@dataclass
class TrainConfig:
    output: Path
    data_root: Path
    encoder: str | None = None
    seed: int = 13
    # The dev sample's own seed, so that runs with different seeds are judged on the same words.
    # Unset, the run's seed draws it too, interleaved with the training sample (as the shipped
    # model's runs did; kept so they reproduce).
    dev_seed: int | None = None
    steps: int = 2000
    batch_size: int = 8
    window_tokens: int = 192
    lr_head: float = 2e-3
    lr_adapters: float = 1e-3
    layer_decay: float = 0.9
    warmup_steps: int = 100
    weight_decay: float = 0.01
    none_weight: float = 0.5
    casing_weight: float = 0.3
    lora_rank: int = 16
    lora_alpha: int = 32
    layer_dropout: float = 0.1
    eval_every: int = 200
    patience: int = 4
    checkpoint_every: int = 100
    time_budget_minutes: float = 95.0
    max_words_per_source: int = 400_000
    dev_words_per_source: int = 12_000
    question_weight: float = 1.0
    # A second stage starts from a trained model; its lowest layers may stay as they are, which
    # spares their backward pass.
    init_from: Path | None = None
    # The acoustic branch starts from this model's (one trained beside an earlier text model's
    # frozen parts) instead of from zero; it adds to the mark logits, so it carries over.
    acoustic_branch_from: Path | None = None
    frozen_layers: int = 0
    # The encoder's matrices above ``frozen_layers`` learn themselves, at ``lr_encoder`` (the
    # adapters of ``init_from`` merged into them first), instead of through adapters; the model
    # is saved as their difference from the base, cut to ``saved_rank`` singular directions in
    # LoRA form, so it loads and runs as an adapter model does. Biases and norms stay as they are.
    full_layers: bool = False
    lr_encoder: float | None = None
    saved_rank: int = 64
    # The gap branch learns from word timings where a corpus has them (dropped at random so the
    # same model also learns to do without); with only_branches, only the branches that read
    # timings and audio learn and everything else stays as it is.
    gap_branch: bool = False
    # How many gaps on each side the gap branch reads besides the gap itself (0: that gap alone).
    gap_context: int = 0
    only_branches: bool = False
    drop_timing: float = 0.3
    # bfloat16 matrix products (autocast): about 1.3-1.6x faster steps on CPUs with bf16 units;
    # the weights and optimizer stay float32.
    bf16: bool = False
    # The acoustic branch hears the audio of synthesised-speech sources ("speech" kind), dropped
    # from a share of windows so its virtual embedding learns to stand in.
    acoustic_branch: bool = False
    drop_audio: float = 0.3
    # The acoustic branch adds nothing to words with neither timing nor audio; with the gap branch
    # frozen too, training leaves text without media exactly as the text model reads it.
    silent_without_evidence: bool = False
    # With > 0, the acoustic branch also reads the gap vectors this many gaps on each side of a
    # timed word, so an audio stage can still learn from timings while the gap branch is frozen.
    acoustic_timing_context: int = 0
    # The gap branch stays as the text model trained it (it is part of the text path: its stand-in
    # for missing timings shapes every prediction on text alone) and reads only timings, as there.
    frozen_gap_branch: bool = False
    # With the gap branch frozen, the parts of it that read the evidence itself still learn: they
    # touch only words with timings, so text alone still reads exactly as before.
    gap_evidence_learns: bool = False
    # The casing head learns only the capitals a sentence start does not explain (names, acronyms,
    # "I"): export capitalises sentence starts from the marks, and a head that also learned them
    # proposes a capital wherever it alone sees a sentence end ("Saturday, A few").
    casing_mid_sentence_only: bool = False
    # Only the casing head learns; marks stay exactly as the model being continued gives them.
    only_casing_head: bool = False
    sources: list[dict[str, Any]] = field(default_factory=list)

    @property
    def time_budget_seconds(self) -> float:
        return self.time_budget_minutes * 60

    @classmethod
    def load(cls, path: Path, overrides: dict[str, Any] | None = None) -> TrainConfig:
        raw = _read_toml(path)
        values = {**raw.get("train", {}), **(overrides or {})}
        base = path.parent
        # A run that continues another one names that run's file for its data instead of
        # repeating every source (and drifting from it when one of them changes).
        # Its [[source_change]] entries change named sources of that file (a weight, say), and
        # its own [[source]] entries are added to them.
        sources_from = values.pop("sources_from", None)
        values["sources"] = raw.get("source", [])
        changes = raw.get("source_change", [])
        if sources_from:
            inherited = _read_toml(base / sources_from).get("source", [])
            names = [source.get("name") for source in inherited + values["sources"]]
            repeated = sorted({str(name) for name in names if names.count(name) > 1})
            if repeated:
                raise TrainConfigError(f"{path}: sources named twice: {', '.join(repeated)}")
            values["sources"] = _changed_sources(inherited + values["sources"], changes, path)
        elif changes:
            raise TrainConfigError(f"{path}: source_change needs sources_from")
        unknown = sorted(set(values) - {f.name for f in fields(cls)})
        if unknown:
            raise TrainConfigError(f"{path}: unknown setting {', '.join(unknown)}")
        if values.get("acoustic_timing_context") and not (
            values.get("gap_branch") and values.get("acoustic_branch")
        ):
            raise TrainConfigError(f"{path}: acoustic_timing_context needs gap_branch and acoustic_branch")
        if values.get("gap_evidence_learns") and not values.get("frozen_gap_branch"):
            raise TrainConfigError(f"{path}: gap_evidence_learns is for a frozen_gap_branch")
        values["output"] = (base / values.get("output", "runs/model")).resolve()
        values["data_root"] = (base / values.get("data_root", "../shared/data")).resolve()
        for key in ("init_from", "acoustic_branch_from"):
            if values.get(key):
                values[key] = (base / values[key]).resolve()
        return cls(**values)


def _changed_sources(
    sources: list[dict[str, Any]], changes: list[dict[str, Any]], path: Path
) -> list[dict[str, Any]]:
    changed = [dict(source) for source in sources]
    for change in changes:
        named = [source for source in changed if source.get("name") == change.get("name")]
        if not named:
            raise TrainConfigError(
                f"{path}: source_change names no source of sources_from: {change.get('name')!r}"
            )
        for source in named:
            source.update(change)
    return changed


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise TrainConfigError(f"cannot read {path}: {error.strerror or error}") from error
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise TrainConfigError(f"{path} is not a valid TOML file: {error}") from error


# --- data -------------------------------------------------------------------------------------


def load_source(
    spec: dict[str, Any], root: Path, part: str, speech_cache: Path | None = None
) -> list[corpora.LabelledText]:
    """Documents of one configured source for ``part`` ("train" or "dev"). Speech sources are
    synthesised into ``speech_cache`` the first time."""
    kind, language = spec["kind"], spec.get("language", "en")
    path = root / spec["path"]
    if kind == "speech":
        if part != "train":
            return []
        if speech_cache is None:
            raise ValueError("speech sources need a cache folder")
        from app.training.speech_corpus import build_speech_corpus, read_speech_corpus

        texts = load_source({**spec, "kind": spec["from_kind"]}, root, "train")
        folder = speech_cache / spec["name"]
        build_speech_corpus(texts, spec["voice"], folder, int(spec["words"]), int(spec.get("seed", 1)))
        return read_speech_corpus(folder, language, spec["name"])
    if kind == "earnings22":
        return [corpora.read_rev(p) for p in corpora.earnings_split(path)[part]]
    if kind == "iwslt_tags":
        document = corpora.read_iwslt_tags(path)
        train, dev = corpora.split_words(document, 0.9)
        return [train] if part == "train" else [dev]
    if kind == "talks":
        talks = corpora.read_talks(path, language, spec["name"], cased=bool(spec.get("cased", True)))
        return corpora.held_out_talks(talks, int(spec.get("dev_every", corpora.TALKS_DEV_EVERY)))[part]
    if kind == "text":
        documents = [
            corpora.read_plain_text(p, language, spec["name"]) for p in corpora.iter_text_files(path)
        ]
        return documents if part == "train" else []
    if kind == "jsonl":
        exclude = root / spec["exclude"] if spec.get("exclude") else None
        return [corpora.read_json_lines(path, language, spec["name"], exclude)] if part == "train" else []
    if kind == "conllu":
        return [corpora.read_conllu(path, language, "dev")] if part == "dev" else []
    raise ValueError(f"unknown source kind {kind!r}")


def _audio_of(document: corpora.LabelledText) -> AudioEvidence | None:
    frames, ends = document.extras.get("frames"), document.extras.get("word_ends")
    if frames is None or not isinstance(ends, list):
        return None
    return AudioEvidence(frames, ends, FRAME_SECONDS)  # type: ignore[arg-type]


def _word_cap(spec: dict[str, Any], config: TrainConfig) -> int:
    """A source's own ``max_words``, else the run's ``max_words_per_source``."""
    return int(spec.get("max_words", config.max_words_per_source))


def _cap(documents: list[corpora.LabelledText], words: int, rng: random.Random) -> list[corpora.LabelledText]:
    """At most ``words`` words, taken as whole documents in random order (long ones cut)."""
    order = documents[:]
    rng.shuffle(order)
    kept, total = [], 0
    for document in order:
        if total >= words:
            break
        if total + len(document) > words:
            document, _ = corpora.split_words(document, (words - total) / len(document))
        kept.append(document)
        total += len(document)
    return kept


@dataclass
class EncodedDocument:
    text: corpora.LabelledText
    encoded: Encoded
    gaps: list[list[float] | None] | None = None
    audio: AudioEvidence | None = None
    # The casing the casing head learns (the text's own, or with sentence starts left out).
    casing: list[int] = field(default_factory=list)


class Sampler:
    """Random windows: a source by weight, a document by length, a random first word."""

    def __init__(self, sources: list[tuple[float, list[EncodedDocument]]], budget: int, seed: int) -> None:
        self.sources = [(w, docs) for w, docs in sources if docs]
        self.budget = budget
        self.rng = random.Random(seed)

    def sample(self) -> tuple[EncodedDocument, int, int]:
        weights = [w for w, _ in self.sources]
        _, documents = self.rng.choices(self.sources, weights)[0]
        document = self.rng.choices(documents, [len(d.text) for d in documents])[0]
        first = self.rng.randrange(max(1, len(document.text) - 8))
        return document, first, window_end(document.encoded, first, self.budget)


# --- training ---------------------------------------------------------------------------------


def _parameter_groups(model: nn.Module, config: TrainConfig, layers: int) -> list[dict[str, Any]]:
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
        if config.only_branches and not name.startswith(("gap_branch.", "acoustic_branch.")):
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


def _schedule(step: int, config: TrainConfig, elapsed_seconds: float = 0.0) -> float:
    """Warm-up, then cosine decay towards whichever ends first, the steps or the time budget, so
    a run on a busy machine still finishes its decay inside the budget."""
    if step < config.warmup_steps:
        return (step + 1) / config.warmup_steps
    by_steps = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
    by_time = elapsed_seconds / max(1.0, config.time_budget_seconds)
    progress = max(by_steps, by_time)
    return max(0.05, 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


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
    model, tokenizer, packaging_config = _run_model(config, resume and has_checkpoint(config.output), log)
    gap_inputs = packaging_config.get("gap_inputs")
    train_sources, dev_documents, inventory = _run_data(config, tokenizer, gap_inputs, log)
    sampler = Sampler(train_sources, config.window_tokens - 2, config.seed)

    encoder: Any = model.encoder
    layers = int(encoder.config.num_hidden_layers)
    optimizer = torch.optim.AdamW(_parameter_groups(model, config, layers), weight_decay=config.weight_decay)
    state = _fresh_state()
    checkpoints = checkpoint_folder(config.output)
    # The time budget is for training alone: synthesising speech into an empty cache the first
    # time must not shorten the run, or a fresh reproduction would train less than the original.
    started = time.monotonic()
    preparation_minutes = round((started - preparing) / 60, 1)
    log(f"data ready in {preparation_minutes} minutes")
    if resume:
        restored = _resume(checkpoints, model, optimizer)
        if restored is not None:
            state = restored
            started -= float(state.get("elapsed_seconds", 0.0))
            sampler.rng.setstate(_tuple_state(state["sampler_rng"]))
            log(f"resumed at step {state['step']}")
    # Each start or resumption is a segment of the run, recorded with where it began and ended.
    state.setdefault("segments", []).append(
        {
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "from_step": state["step"],
            "to_step": state["step"],
            "minutes": 0.0,
        }
    )
    segment_started = time.monotonic()
    config.output.mkdir(parents=True, exist_ok=True)
    step_once = _Stepper(model, tokenizer, optimizer, sampler, config)
    save = _model_saver(config, model, packaging_config, log)
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
            run = _RunParts(model, tokenizer, packaging_config, dev_documents, gap_inputs, save)
            _evaluate_and_keep_best(run, config, state, time.monotonic() - started, log)
            # Out of patience; at the last step (or out of time) the run ends for that reason instead.
            if state["bad_evals"] >= config.patience and state["step"] < config.steps and not out_of_time:
                stop_reason = f"early stop: dev SER did not improve in {config.patience} evaluations"
        if (
            state["step"] % config.checkpoint_every == 0
            or stop_reason != "steps done"
            or out_of_time
            or state["step"] == config.steps
        ):
            _save_checkpoint(checkpoints, model, optimizer, state, sampler, started, segment_started)
        if stop_reason != "steps done":
            break
        if out_of_time:
            stop_reason = f"time budget of {config.time_budget_minutes} minutes reached"
            break
    progress.close()
    # The final state too: the early-stopping pick is not always the one to keep or build on.
    save(config.output / "last")
    summary = {
        "stop_reason": stop_reason,
        "steps": state["step"],
        "best_step": state["best_step"],
        "best_dev_ser": state["best_ser"],
        "minutes": round((time.monotonic() - started) / 60, 1),
        "data_preparation_minutes": preparation_minutes,
        "evaluations": state["evaluations"],
        "segments": state["segments"],
        "data": inventory,
    }
    (config.output / "training.json").write_text(json.dumps(summary, indent=2))
    log(f"done: {stop_reason}; best dev SER {state['best_ser']} at step {state['best_step']}")
    return summary


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


def _run_model(
    config: TrainConfig, resuming: bool, log: Callable[[str], None]
) -> tuple[PunctuationModel, Any, dict[str, Any]]:
    """The run's model (weights from ``init_from`` and ``acoustic_branch_from`` unless it resumes),
    its tokenizer and its settings, with the parts it trains chosen."""
    model, tokenizer, packaging_config = build_model(
        config.encoder,
        lora_rank=config.lora_rank,
        lora_alpha=config.lora_alpha,
        layer_dropout=config.layer_dropout,
        gap_features=gaps.SIZE if config.gap_branch else 0,
        gap_context=config.gap_context if config.gap_branch else 0,
        acoustic_features=FRAME_FEATURES if config.acoustic_branch else 0,
        acoustic_timing_context=config.acoustic_timing_context if config.acoustic_branch else 0,
        silent_without_evidence=config.silent_without_evidence,
    )
    packaging_config["window_tokens"] = config.window_tokens
    if config.gap_branch:
        heard = any(spec["kind"] == "speech" for spec in config.sources) and not config.frozen_gap_branch
        packaging_config["gap_inputs"] = list(gaps.FEATURES if heard else gaps.TIMING_FEATURES)
    if config.init_from is not None and not resuming:
        load_weights(model, config.init_from, new_parts=("gap_branch.", "acoustic_branch."))
        log(f"starting from {config.init_from}")
    if config.acoustic_branch_from is not None and not resuming:
        load_part(model, config.acoustic_branch_from, "acoustic_branch.")
        log(f"acoustic branch from {config.acoustic_branch_from}")
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


def _run_data(
    config: TrainConfig, tokenizer: Any, gap_inputs: Any, log: Callable[[str], None]
) -> tuple[list[tuple[float, list[EncodedDocument]]], list[corpora.LabelledText], dict[str, Any]]:
    """Each source's training documents (encoded, with its weight), the dev documents of all of
    them, and an inventory of the words taken from each."""
    rng, dev_rng = _sampling_rngs(config)
    train_sources: list[tuple[float, list[EncodedDocument]]] = []
    dev_documents: list[corpora.LabelledText] = []
    inventory: dict[str, Any] = {}
    for spec in config.sources:
        documents = _cap(
            load_source(spec, config.data_root, "train", config.output.parent / "speech"),
            _word_cap(spec, config),
            rng,
        )
        dev = _cap(load_source(spec, config.data_root, "dev"), config.dev_words_per_source, dev_rng)
        if spec.get("asr_noise"):
            # A noisy copy beside each clean document; its own generator leaves the sampling of
            # the other sources and of dev exactly as in runs without noise.
            noise_rng = random.Random(f"{config.seed}:{spec['name']}")
            documents = documents + [
                corpora.with_asr_noise(d, float(spec["asr_noise"]), noise_rng) for d in documents
            ]
        encoded = [
            EncodedDocument(
                d,
                encode_words(tokenizer, d.words),
                gaps.restrict(gaps.document_gaps(d.extras, d.words), gap_inputs)
                if config.gap_branch
                else None,
                _audio_of(d) if config.acoustic_branch else None,
                corpora.mid_sentence_casing(d) if config.casing_mid_sentence_only else d.casing,
            )
            for d in documents
            if len(d) > 16
        ]
        train_sources.append((float(spec.get("weight", 1.0)), encoded))
        dev_documents.extend(dev)
        inventory[spec["name"]] = {
            "language": spec.get("language", "en"),
            "train_words": sum(len(d) for d in documents),
            "dev_words": sum(len(d) for d in dev),
            "weight": spec.get("weight", 1.0),
            "path": spec["path"],
        }
        log(
            f"data {spec['name']}: {inventory[spec['name']]['train_words']} train words, {inventory[spec['name']]['dev_words']} dev"
        )
    return train_sources, dev_documents, inventory


class _Stepper:
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
        if model.acoustic_branch is not None:
            batch.add_audio(
                [
                    (d.audio if sampler.rng.random() >= config.drop_audio else None, a, b)
                    for d, a, b in windows
                ],
                FRAME_FEATURES,
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


@dataclass
class _RunParts:
    """What an evaluation during a run reads and keeps."""

    model: PunctuationModel
    tokenizer: Any
    settings: dict[str, Any]
    dev_documents: list[corpora.LabelledText]
    gap_inputs: Any
    save: Callable[[Path], None]


def _model_saver(
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


def _evaluate_and_keep_best(
    run: _RunParts,
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


def dev_documents(config: TrainConfig) -> list[corpora.LabelledText]:
    """The same dev documents training evaluated on."""
    rng, dev_rng = _sampling_rngs(config)
    documents: list[corpora.LabelledText] = []
    for spec in config.sources:
        if dev_rng is rng:  # the training sample's draws come first in the shared stream
            _cap(load_source(spec, config.data_root, "train"), _word_cap(spec, config), rng)
        documents.extend(
            _cap(load_source(spec, config.data_root, "dev"), config.dev_words_per_source, dev_rng)
        )
    return documents


def _sampling_rngs(config: TrainConfig) -> tuple[random.Random, random.Random]:
    """Random sources for the training and the dev sample: one shared stream unless ``dev_seed`` is set."""
    rng = random.Random(config.seed)
    return rng, (rng if config.dev_seed is None else random.Random(config.dev_seed))


def calibrate_model(
    config: TrainConfig, model_dir: Path, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Fit the mark biases and temperature of a trained model on the dev data; write them into its settings."""
    from app.ml.packaging import load_model
    from app.ml.validation import CONFIG_NAME
    from app.training.calibrate import calibrate
    from app.training.scores import predict_documents

    model, tokenizer, settings = load_model(model_dir)
    documents = dev_documents(config)
    # Raw probabilities: the model's windows, none of a previous calibration.
    uncalibrated = {
        k: v for k, v in settings.items() if k not in ("temperature", "mark_bias", "mark_bias_by_language")
    }
    probabilities = predict_documents(TorchModel(model, tokenizer), documents, uncalibrated)
    result = calibrate(probabilities, [d.labels for d in documents], [d.language for d in documents])
    settings["temperature"] = result["temperature"]
    settings["mark_bias"] = result["mark_bias"]
    settings["mark_bias_by_language"] = result["mark_bias_by_language"]
    settings["calibration"] = result
    path = model_dir / CONFIG_NAME
    path.with_suffix(".tmp").write_text(json.dumps(settings, indent=2, ensure_ascii=False) + "\n")
    path.with_suffix(".tmp").replace(path)
    log(
        f"bias {result['mark_bias']}: dev F1 {result['f1_before']} -> {result['f1_after']}; "
        f"temperature {result['temperature']}: ECE {result['ece_before']} -> {result['ece_after']}"
    )
    return result


def _list_state(state: Any) -> Any:
    return [list(state[1]), state[0], state[2]]


def _tuple_state(state: Any) -> Any:
    return (state[1], tuple(state[0]), state[2])
