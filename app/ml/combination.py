"""Two readings, one suggestion: the text model's and the listener's distributions at a gap combined.

A log-linear combination per mark class, ``log p = (1 - w_c) log p_read(c) + w_c log p_heard(c) + b_c``,
then a temperature, renormalised. Where both readers chose the same mark and this would name
another, that mark's weight serves every class and the biases are left out: the combination never
names a mark other than the one both readers chose. The two readers are strong in different places (the listener
hears full stops, the text model places the commas a reader does not voice), so each class has its
own weight. The figures live in ``models/listener/combination.json``, fitted on the development
sets by ``tests/benchmarks/bench_listener.py --fit`` (the model card says how and on what).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.core.bundled import listener_dir
from app.core.errors import PunctumError
from app.core.json_files import read_json_object
from app.core.marks import MODEL_MARKS

PROBABILITY_FLOOR = 1e-6  # no reading is ever quite sure a mark is impossible


class CombinationError(PunctumError):
    pass


@dataclass(frozen=True)
class Combination:
    """Per class (``MODEL_MARKS`` order): the listener's weight and a bias; one temperature."""

    weights: tuple[float, ...]
    biases: tuple[float, ...]
    temperature: float = 1.0

    def __post_init__(self) -> None:
        if len(self.weights) != len(MODEL_MARKS) or len(self.biases) != len(MODEL_MARKS):
            raise CombinationError(f"a combination needs {len(MODEL_MARKS)} weights and biases")
        if not all(0.0 <= w <= 1.0 for w in self.weights) or self.temperature <= 0:
            raise CombinationError("weights lie between 0 and 1, and the temperature is positive")

    def combine(self, read: Sequence[float], heard: Sequence[float]) -> list[float]:
        """The combined distribution over ``MODEL_MARKS`` of the text model's and the listener's."""
        combined: list[float] = self.combine_heard([read], [heard])[0].tolist()
        return combined

    def combine_heard(
        self, read: Sequence[Sequence[float]] | np.ndarray, heard: Sequence[Sequence[float] | None]
    ) -> np.ndarray:
        """Per gap (gaps x ``MODEL_MARKS``): the combined distribution where the gap was heard, the
        text model's where it was not (``heard`` None)."""
        text = np.asarray(read, dtype=np.float64)
        known = np.asarray([h is not None for h in heard])
        listened = np.asarray(
            [h if h is not None else t for h, t in zip(heard, text, strict=True)], dtype=np.float64
        )
        log_read, log_heard = (
            np.log(np.maximum(text, PROBABILITY_FLOOR)),
            np.log(np.maximum(listened, PROBABILITY_FLOOR)),
        )
        weights = np.asarray(self.weights)[None, :]
        logits = ((1 - weights) * log_read + weights * log_heard + np.asarray(self.biases)) / self.temperature
        # Where both readers chose the same mark and the per-class weights and biases (fitted for
        # where they differ) would name another, that mark's weight serves every class and the
        # biases are left out: such a pool keeps the mark first, both its terms being largest there.
        agreed = text.argmax(axis=1)
        overruled = (agreed == listened.argmax(axis=1)) & (logits.argmax(axis=1) != agreed)
        if overruled.any():
            one = weights[0, agreed[overruled]][:, None]
            pooled = (1 - one) * log_read[overruled] + one * log_heard[overruled]
            logits[overruled] = pooled / self.temperature
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        combined: np.ndarray = np.where(known[:, None], probs, text)
        return combined

    def as_json(self) -> dict[str, object]:
        return {"weights": list(self.weights), "biases": list(self.biases), "temperature": self.temperature}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Combination:
        try:
            weights = tuple(float(w) for w in data["weights"])  # type: ignore[attr-defined]
            biases = tuple(float(b) for b in data["biases"])  # type: ignore[attr-defined]
            temperature = float(data.get("temperature", 1.0))  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError) as error:
            raise CombinationError(f"a combination file is malformed ({error})") from None
        return cls(weights, biases, temperature)


@functools.cache
def shipped_combination(path: Path | None = None) -> Combination:
    """The combination Punctum ships (``models/listener/combination.json``), or the one at ``path``."""
    path = path or listener_dir() / "combination.json"
    data = read_json_object(path, CombinationError, "the listener's combination")
    return Combination.from_json(data)
