"""A model's settings (``punctum-model.json``) as one typed, frozen value.

``app.ml.validation`` checks the file and makes this once; everything that runs or describes a
model reads its fields, so each default (the 192-token window, the half-window stride) is written
here alone. The file's own content stays in ``json`` for the few places that write a model's
settings back (training, calibration).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from app.ml.base_encoder import BASE_ENCODER

#: Tokens in one window the model reads, start and end tokens included.
DEFAULT_WINDOW_TOKENS = 192
#: How far a window moves, as a share of its length: each word is read twice.
DEFAULT_STRIDE = 0.5
DEFAULT_WINDOW_MERGE = "central"


@dataclass(frozen=True)
class InferenceOptions:
    """How ``app.ml.inference.predict_probabilities`` reads a document: windows of
    ``window_tokens`` moved by ``stride`` of their length, ``batch_size`` at a time, each word's
    predictions merged over them by ``merge``; the mark probabilities are
    ``softmax((log_softmax(logits) + mark_bias) / temperature)``."""

    window_tokens: int = DEFAULT_WINDOW_TOKENS
    batch_size: int = 8
    temperature: float = 1.0
    stride: float = DEFAULT_STRIDE
    mark_bias: Sequence[float] | None = None
    merge: str = DEFAULT_WINDOW_MERGE


@dataclass(frozen=True)
class LoraSettings:
    rank: int = 0
    alpha: int = 1
    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelSettings:
    """What a model folder says of itself; defaults are those of a file that leaves a key out."""

    encoder: str = BASE_ENCODER
    lora: LoraSettings = LoraSettings()
    window_tokens: int = DEFAULT_WINDOW_TOKENS
    stride: float = DEFAULT_STRIDE
    window_merge: str = DEFAULT_WINDOW_MERGE
    temperature: float = 1.0
    mark_bias: tuple[float, ...] | None = None
    #: Mark biases calibrated per language, where there are some.
    mark_bias_by_language: Mapping[str, tuple[float, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    gap_features: int = 0
    gap_context: int = 0
    #: Gaps on each side a timed word's timing branch reads (0: no timing branch).
    timing_context: int = 0
    #: The gap features the model reads, when only some of them (None: all).
    gap_inputs: tuple[str, ...] | None = None
    #: The languages it was trained on (empty: not said).
    languages: tuple[str, ...] = ()
    version: str = "unknown"
    data_note: str = ""
    #: The file's content as read (empty for settings made in code).
    json: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), compare=False)

    @classmethod
    def from_json(cls, content: Mapping[str, Any]) -> ModelSettings:
        """The settings of a file ``app.ml.validation`` has found sound (types are not checked here)."""
        lora = content.get("lora") or {}
        by_language = content.get("mark_bias_by_language") or {}
        # A plain number or text: the file's value as the type of the field's default, else the default.
        plain: dict[str, Any] = {
            f.name: type(f.default)(content.get(f.name, f.default))
            for f in fields(cls)
            if isinstance(f.default, int | float | str) and f.name != "encoder"
        }
        return cls(
            encoder=str(content["encoder"]),
            lora=LoraSettings(
                rank=int(lora.get("rank", 0)),
                alpha=int(lora.get("alpha", 1)),
                targets=tuple(lora.get("targets", ())),
            ),
            mark_bias=_biases(content.get("mark_bias")),
            mark_bias_by_language=MappingProxyType(
                {str(language): tuple(map(float, biases)) for language, biases in by_language.items()}
            ),
            gap_inputs=tuple(content["gap_inputs"]) if content.get("gap_inputs") is not None else None,
            languages=tuple(str(code) for code in content.get("languages") or ()),
            json=MappingProxyType(dict(content)),
            **plain,
        )

    def as_json(self) -> dict[str, Any]:
        """A copy of the file's content, to change and write back."""
        return dict(self.json)

    def inference_options(self, language: str | None = None) -> InferenceOptions:
        """How these settings have ``app.ml.inference.predict_probabilities`` read a document (with
        the mark biases calibrated for ``language`` where there are some)."""
        return InferenceOptions(
            window_tokens=self.window_tokens,
            stride=self.stride,
            merge=self.window_merge,
            temperature=self.temperature,
            mark_bias=self.mark_bias_by_language.get(language or "", self.mark_bias),
        )


def _biases(value: Sequence[float] | None) -> tuple[float, ...] | None:
    return tuple(map(float, value)) if value is not None else None
