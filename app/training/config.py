"""A training run's settings: its TOML file (``punctum train --config FILE.toml``) read, checked
and turned into a ``TrainConfig``, with the sources it trains on (its own, or another run's with
changes)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from app.core.errors import PunctumError
from app.core.small_files import SmallFileError, small_file_text


class TrainConfigError(PunctumError):
    """A training configuration that cannot be read or makes no sense."""


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
    # The timing branch starts from this model's (one trained beside an earlier text model's
    # frozen parts) instead of from zero; it adds to the mark logits, so it carries over.
    timing_branch_from: Path | None = None
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
    # timings learn and everything else stays as it is.
    gap_branch: bool = False
    # How many gaps on each side the gap branch reads besides the gap itself (0: that gap alone).
    gap_context: int = 0
    only_branches: bool = False
    drop_timing: float = 0.3
    # bfloat16 matrix products (autocast): about 1.3-1.6x faster steps on CPUs with bf16 units;
    # the weights and optimizer stay float32.
    bf16: bool = False
    # With > 0, a timing branch reads the gap vectors this many gaps on each side of a timed
    # word, so a stage can still learn from timings while the gap branch is frozen. It adds
    # nothing to words without timing: text without timings reads exactly as the text model.
    timing_context: int = 0
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
        strays = sorted(set(raw) - {"train", "source", "source_change"})
        if strays:  # a setting written outside [train] would otherwise be ignored without a word
            raise TrainConfigError(
                f"{path}: {', '.join(strays)} outside [train], [[source]] and [[source_change]]"
            )
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
        if not values["sources"]:
            raise TrainConfigError(f"{path}: no data to train on: name [[source]] entries or sources_from")
        if values.get("timing_context") and not values.get("gap_branch"):
            raise TrainConfigError(f"{path}: timing_context needs gap_branch")
        if values.get("gap_evidence_learns") and not values.get("frozen_gap_branch"):
            raise TrainConfigError(f"{path}: gap_evidence_learns is for a frozen_gap_branch")
        values["output"] = (base / values.get("output", "runs/model")).resolve()
        values["data_root"] = (base / values.get("data_root", "../shared/data")).resolve()
        for key in ("init_from", "timing_branch_from"):
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
        return tomllib.loads(small_file_text(path, 1_000_000))
    except SmallFileError as error:
        raise TrainConfigError(f"cannot read {path}: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise TrainConfigError(f"{path} is not a valid TOML file: {error}") from error
