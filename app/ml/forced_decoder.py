"""The recogniser's decoder run over a whole forced text at once, by ONNX Runtime.

The listener knows every token it forces, so one decoder pass over all of them gives the
distribution at every position (teacher forcing), where CTranslate2 decodes token by token,
reading every weight again at each step (one thread, a 26 s window of 54 tokens: 0.21 s with the
audio's keys and values, against 0.38 s). The same pass gives the
alignment heads' cross-attention, from which the words are placed (``word_alignment``).

The graphs (``whisper_graph``) hold no weights; they are taken here from the CTranslate2
``model.bin`` the recogniser loads, int8 rows times their scales (or float16) made float32, and
handed to ONNX Runtime, which reads them in place. The computation is float: CTranslate2's int8
decoding differs from its own float32 by 0.2 in log-probability on average (1.7 at most, on that
window), this pass from it by under 2e-3 (``tests/test_forced_decoder.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.core.bundled import listener_dir
from app.ml.ctranslate2_file import ModelFileError, Variable, mapped_model
from app.ml.runtime import cpu_session
from app.ml.whisper_graph import (
    DECODER_GRAPH,
    EMBEDDINGS,
    MEMORY_GRAPH,
    Dimensions,
    dimensions_of,
    graph_weights,
    memory_names,
    weight_shapes,
)


class DecoderGraphError(ValueError):
    """The decoder graphs do not fit the recogniser's model, or are missing."""


@dataclass(frozen=True)
class Scores:
    """One pass over a forced text. ``logits[k, c]``: the logit of ``columns[c]`` as the token
    after the first ``k + 1`` tokens; ``log_normalisers[i]``: the log of the sum of the exponents
    of row ``full_rows[i]``'s logits; ``alignment[h, k, f]``: alignment head ``h``'s attention
    score (before its softmax) from position ``k`` to encoder frame ``f``."""

    logits: np.ndarray
    log_normalisers: np.ndarray
    alignment: np.ndarray


@dataclass(frozen=True)
class ForcedPass:
    """One pass over a window's prefix and forced text, as the listener reads it: row ``k`` is the
    distribution of the token after the prefix and the first ``k`` forced tokens; only some
    columns, and the whole of the rows ``full_rows``, are computed."""

    scores: Scores
    column: dict[int, int]  # token -> column of ``scores.logits``
    first_row: int  # the position of row 0: the prefix's last token

    def logits(self, row: int, tokens: Sequence[int]) -> np.ndarray:
        return np.asarray(self.scores.logits[self.first_row + row, [self.column[t] for t in tokens]])

    def log_probs(self, chosen: Sequence[tuple[int, int]]) -> list[float]:
        """The log-probability of each (row, token) in ``chosen``, whose rows are ``full_rows``."""
        return [
            float(self.scores.logits[self.first_row + row, self.column[token]] - normaliser)
            for (row, token), normaliser in zip(chosen, self.scores.log_normalisers, strict=True)
        ]


def _as_float32(variable: Variable, scale: Variable | None) -> np.ndarray:
    if variable.type == "int8":
        if scale is None:
            raise DecoderGraphError(f"{variable.name}: int8 without its scale")
        rows = np.frombuffer(variable.data, dtype=np.int8).reshape(variable.shape).astype(np.float32)
        rows /= np.frombuffer(scale.data, dtype=np.float32)[:, None]
        return rows
    if variable.type in ("float16", "float32"):
        return np.frombuffer(variable.data, dtype=variable.type).reshape(variable.shape).astype(np.float32)
    raise DecoderGraphError(f"{variable.name}: stored as {variable.type}, which this cannot read")


class _Embeddings:
    """The token embeddings as stored (int8 rows and their scales, or float16), which are also the
    output projection: only the rows and columns read are made float, and a whole row's
    normaliser is summed over the vocabulary in blocks."""

    BLOCK = 8192

    def __init__(self, weight: Variable, scale: Variable | None) -> None:
        self.rows = np.frombuffer(weight.data, dtype=weight.type).reshape(weight.shape)
        self.scales = None if scale is None else np.frombuffer(scale.data, dtype=np.float32)

    def vectors(self, tokens: Sequence[int] | slice) -> np.ndarray:
        chosen = self.rows[tokens].astype(np.float32)
        if self.scales is not None:
            chosen /= self.scales[tokens][:, None]
        return chosen

    def log_normalisers(self, hidden: np.ndarray) -> np.ndarray:
        """log sum exp of each hidden state's logits over the whole vocabulary (the int8 rows'
        scales divide the logits, not the rows: a block's rows are only cast)."""
        total = np.full(len(hidden), -np.inf)
        for first in range(0, len(self.rows), self.BLOCK):
            block = slice(first, first + self.BLOCK)
            logits = hidden @ self.rows[block].astype(np.float32).T
            if self.scales is not None:
                logits /= self.scales[block]
            total = np.logaddexp(total, _log_sum_exp(logits))
        return total


def _log_sum_exp(logits: np.ndarray) -> np.ndarray:
    top = logits.max(axis=1)
    return np.asarray(top + np.log(np.exp(logits - top[:, None]).sum(axis=1)), dtype=np.float64)


class ForcedDecoder:
    """The decoder of the Whisper in ``model_folder``, for teacher-forced passes."""

    def __init__(self, model_folder: Path, threads: int = 1, graphs: Path | None = None) -> None:
        graphs = graphs or listener_dir()
        try:
            expected = Dimensions.of_json(
                json.loads((graphs / "whisper-graphs.json").read_text(encoding="utf-8"))
            )
            model = mapped_model(model_folder / "model.bin")
            found = dimensions_of(model_folder, model)
        except (OSError, ValueError, KeyError, ModelFileError) as error:
            raise DecoderGraphError(f"the listener's decoder graphs cannot be read: {error}") from None
        if found != expected:
            raise DecoderGraphError(
                f"the listener's decoder graphs are for a Whisper of {expected.layers} layers of"
                f" width {expected.width}, not this recogniser ({found.layers} of {found.width})"
            )
        self.dimensions = found
        variables = {v.name: v for v in model.variables}
        self._embeddings = _Embeddings(variables[EMBEDDINGS], variables.get(EMBEDDINGS + "_scale"))
        shapes = weight_shapes(found)

        def weights(names: list[str]) -> dict[str, np.ndarray]:
            """Given with every run of a graph: ONNX Runtime reads them in place."""
            made = {}
            for name in names:
                array = np.ascontiguousarray(_as_float32(variables[name], variables.get(name + "_scale")))
                if array.shape != shapes[name]:
                    raise DecoderGraphError(f"{name}: shape {array.shape}, the graph expects {shapes[name]}")
                made[name] = array
            return made

        by_graph = graph_weights(found)
        self._memory_weights = weights(by_graph[MEMORY_GRAPH])
        self._decoder_weights = weights(by_graph[DECODER_GRAPH])
        self._memory_names = memory_names(found)
        # An arena would keep each pass's largest buffers for the next: more memory than time saved.
        self._memory = cpu_session(graphs / MEMORY_GRAPH, threads, arena=False)
        self._decoder = cpu_session(graphs / DECODER_GRAPH, threads, arena=False)

    def memory(self, encoded: np.ndarray) -> dict[str, np.ndarray]:
        """Each layer's cross-attention keys and values of one window's encoder output
        (frames x width), computed once for every pass over that window."""
        feeds = {"encoded": np.ascontiguousarray(encoded, dtype=np.float32), **self._memory_weights}
        return dict(zip(self._memory_names, self._memory.run(self._memory_names, feeds), strict=True))

    def scores(
        self,
        memory: dict[str, np.ndarray],
        tokens: list[int],
        columns: list[int],
        full_rows: list[int],
    ) -> Scores:
        """One pass over ``tokens`` (at most the decoder's positions) against a window's memory."""
        if len(tokens) > self.dimensions.positions:
            raise ValueError(
                f"{len(tokens)} tokens, more than the decoder's {self.dimensions.positions} positions"
            )
        feeds = {"embedded": self._embeddings.vectors(tokens), **memory}
        feeds |= self._decoder_weights
        hidden, alignment = self._decoder.run(["hidden", "alignment_scores"], feeds)
        logits = hidden @ self._embeddings.vectors(columns).T
        normalisers = self._embeddings.log_normalisers(hidden[full_rows])
        return Scores(logits, normalisers, alignment)
