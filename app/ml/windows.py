"""Words to sub-token windows and back: shared by training and inference.

A window is a run of whole words whose sub-tokens fit the encoder's budget, wrapped in the
tokenizer's start and end tokens. Inference slides overlapping windows over the whole document
and merges, for each word, the predictions of the windows that hold it (see `app.ml.inference`).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: A word longer than this many sub-tokens (a URL, a run of symbols) keeps its first and last ones.
MAX_WORD_TOKENS = 16
_ENCODED_AT_ONCE = 4096  # words handed to the tokenizer in one call


@dataclass
class Encoded:
    """A document's words as sub-token ids, flattened, with where each word starts and ends."""

    ids: list[int]
    starts: list[int]
    ends: list[int]

    def __len__(self) -> int:
        return len(self.starts)

    def tokens_between(self, first: int, stop: int) -> int:
        return self.ends[stop - 1] - self.starts[first] if stop > first else 0


@dataclass(frozen=True)
class SpecialTokens:
    """The ids that wrap and pad a window, and the one for a word the vocabulary lacks."""

    start: int
    end: int
    pad: int
    unknown: int

    @classmethod
    def of(cls, tokenizer: Any) -> SpecialTokens:
        """The special ids of a Transformers tokenizer."""
        return cls(
            tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id, tokenizer.unk_token_id
        )


def word_token_ids(tokenizer: Any, words: list[str]) -> list[list[int]]:
    """Each word's sub-token ids, from a Transformers tokenizer or a bare ``tokenizers.Tokenizer``
    (what the runtime cache holds: it loads in milliseconds)."""
    if hasattr(tokenizer, "encode_batch"):
        return [e.ids for e in tokenizer.encode_batch(words, add_special_tokens=False)]
    ids: list[list[int]] = tokenizer(words, add_special_tokens=False)["input_ids"]
    return ids


def encode_words(tokenizer: Any, words: Sequence[str], unknown: int | None = None) -> Encoded:
    """The words' sub-tokens; an empty word (nothing the vocabulary knows) becomes ``unknown``
    (by default the Transformers tokenizer's own unknown id)."""
    ids: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    if unknown is None:
        unknown = tokenizer.unk_token_id
    for offset in range(0, len(words), _ENCODED_AT_ONCE):
        for word_ids in word_token_ids(tokenizer, list(words[offset : offset + _ENCODED_AT_ONCE])):
            if not word_ids:
                word_ids = [unknown]
            if len(word_ids) > MAX_WORD_TOKENS:
                half = MAX_WORD_TOKENS // 2
                word_ids = word_ids[:half] + word_ids[-half:]
            starts.append(len(ids))
            ids.extend(word_ids)
            ends.append(len(ids))
    return Encoded(ids, starts, ends)


def window_end(encoded: Encoded, first: int, budget: int) -> int:
    """The end (exclusive) of the longest run of words from ``first`` within ``budget`` tokens."""
    limit = encoded.starts[first] + budget
    # The word ends increase: bisected; at least one word per window.
    return max(bisect.bisect_right(encoded.ends, limit, first, len(encoded)), first + 1)


def plan_windows(encoded: Encoded, budget: int, stride: float = 0.5) -> list[tuple[int, int]]:
    """Overlapping word ranges covering the document; each starts ``stride`` of a window later."""
    windows: list[tuple[int, int]] = []
    first = 0
    total = len(encoded)
    while first < total:
        stop = window_end(encoded, first, budget)
        windows.append((first, stop))
        if stop >= total:
            break
        target = encoded.starts[first] + max(1, int(encoded.tokens_between(first, stop) * stride))
        first = bisect.bisect_left(encoded.starts, target, first + 1, stop)  # the first word from there
    return windows


#: How a word's predictions from the overlapping windows that hold it are merged (see
#: ``app.ml.inference.predict_probabilities``).
WINDOW_MERGES = ("central", "mean")


def central_windows(windows: Sequence[tuple[int, int]], total: int) -> list[int]:
    """For each word, the window in which it sits furthest from a window edge (document edges
    do not count as edges: a word there has no context to miss)."""
    best = [0] * total
    margin = [-1.0] * total
    for number, (first, stop) in enumerate(windows):
        for word in range(first, stop):
            left = word - first if first > 0 else math.inf
            right = stop - 1 - word if stop < total else math.inf
            distance = min(left, right)
            if distance > margin[word]:
                margin[word], best[word] = distance, number
    return best


#: The arrays of a ``WindowBatch`` the model reads, in ``PunctuationModel.forward``'s order, and
#: the gap evidence's two, which only a model with a gap branch reads.
MODEL_INPUTS = ("input_ids", "attention_mask", "first_index", "last_index", "next_index")
GAP_INPUTS = ("gap_features", "gap_present")


@dataclass
class WindowBatch:
    """A batch of windows as the model reads it, in NumPy arrays (torch and ONNX Runtime both take them)."""

    input_ids: np.ndarray  # (batch, tokens) int64
    attention_mask: np.ndarray  # (batch, tokens) int64
    first_index: np.ndarray  # (batch, words) int64: each word's first sub-token
    last_index: np.ndarray  # (batch, words) int64: each word's last sub-token
    next_index: np.ndarray  # (batch, words) int64: the sub-token after the word
    word_mask: np.ndarray  # (batch, words) bool: which word slots are real
    gap_features: np.ndarray | None = None  # (batch, words, features) float32
    gap_present: np.ndarray | None = None  # (batch, words) bool: which gaps have evidence

    @property
    def words(self) -> int:
        return int(self.word_mask.shape[1])

    def add_gaps(
        self, windows: Sequence[tuple[Sequence[list[float] | None] | None, int, int]], size: int
    ) -> None:
        """Gap evidence for each window's words: (the document's per-word vectors or None, first, stop)."""
        features = np.zeros((*self.word_mask.shape, size), dtype=np.float32)
        present = np.zeros(self.word_mask.shape, dtype=bool)
        for row, (gaps, first, stop) in enumerate(windows):
            if gaps is None:
                continue
            for column, vector in enumerate(gaps[first:stop]):
                if vector is not None:
                    features[row, column] = vector
                    present[row, column] = True
        self.gap_features, self.gap_present = features, present


def make_batch(
    encoded_windows: Sequence[tuple[Encoded, int, int]], start_id: int, end_id: int, pad_id: int
) -> WindowBatch:
    """Arrays for a batch of windows: ``<s> words </s>`` with the positions of each word's parts."""
    rows: list[list[int]] = []
    firsts: list[list[int]] = []
    lasts: list[list[int]] = []
    for encoded, first, stop in encoded_windows:
        row = [start_id]
        word_first, word_last = [], []
        for word in range(first, stop):
            word_first.append(len(row))
            row.extend(encoded.ids[encoded.starts[word] : encoded.ends[word]])
            word_last.append(len(row) - 1)
        row.append(end_id)
        rows.append(row)
        firsts.append(word_first)
        lasts.append(word_last)
    width = max(len(row) for row in rows)
    words = max(len(w) for w in firsts)
    input_ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    attention = np.zeros((len(rows), width), dtype=np.int64)
    first_index = np.zeros((len(rows), words), dtype=np.int64)
    last_index = np.zeros((len(rows), words), dtype=np.int64)
    word_mask = np.zeros((len(rows), words), dtype=bool)
    for number, row in enumerate(rows):
        input_ids[number, : len(row)] = row
        attention[number, : len(row)] = 1
        count = len(firsts[number])
        first_index[number, :count] = firsts[number]
        last_index[number, :count] = lasts[number]
        word_mask[number, :count] = True
    # Each word's next sub-token: the next word's start, or </s>; 0 in padding, as before.
    next_index = np.where(word_mask, last_index + 1, 0)
    return WindowBatch(input_ids, attention, first_index, last_index, next_index, word_mask)
