"""Words to sub-token windows and back: shared by training and inference.

A window is a run of whole words whose sub-tokens fit the encoder's budget, wrapped in the
tokenizer's start and end tokens. Inference slides overlapping windows over the whole document
and merges, for each word, the predictions of the windows that hold it (see `app.ml.inference`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from app.audio.frames import FRAME_SECONDS

#: A word longer than this many sub-tokens (a URL, a run of symbols) keeps its first and last ones.
MAX_WORD_TOKENS = 16


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


def encode_words(tokenizer: Any, words: Sequence[str], chunk: int = 4096) -> Encoded:
    ids: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    unknown = tokenizer.unk_token_id
    for offset in range(0, len(words), chunk):
        part = list(words[offset : offset + chunk])
        pieces = tokenizer(part, add_special_tokens=False, is_split_into_words=False)["input_ids"]
        for word_ids in pieces:
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
    low, high = first + 1, len(encoded)
    # Binary search on the (increasing) word ends; at least one word per window.
    while low < high:
        middle = (low + high + 1) // 2
        if encoded.ends[middle - 1] <= limit:
            low = middle
        else:
            high = middle - 1
    return max(low, first + 1)


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
        following = first + 1
        while following < stop and encoded.starts[following] < target:
            following += 1
        first = following
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


# The acoustic branch hears 0.8 s before a word's end and 0.48 s after it (10 ms frames): the
# word's own intonation and the pause that follows.
AUDIO_BEFORE, AUDIO_AFTER = 80, 48
AUDIO_FRAMES = AUDIO_BEFORE + AUDIO_AFTER


@dataclass
class WindowBatch:
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    first_index: torch.Tensor
    last_index: torch.Tensor
    next_index: torch.Tensor
    word_mask: torch.Tensor  # (batch, words): which word slots are real
    gap_features: torch.Tensor | None = None  # (batch, words, features)
    gap_present: torch.Tensor | None = None  # (batch, words): which gaps have evidence
    audio_frames: torch.Tensor | None = None  # (batch, words, AUDIO_FRAMES, features)
    audio_present: torch.Tensor | None = None  # (batch, words): which words have audio

    def model_inputs(self) -> dict[str, torch.Tensor | None]:
        return {
            "input_ids": self.input_ids,
            "attention_mask": self.attention_mask,
            "first_index": self.first_index,
            "last_index": self.last_index,
            "next_index": self.next_index,
            "gap_features": self.gap_features,
            "gap_present": self.gap_present,
            "audio_frames": self.audio_frames,
            "audio_present": self.audio_present,
        }

    def add_gaps(
        self, windows: Sequence[tuple[Sequence[list[float] | None] | None, int, int]], size: int
    ) -> None:
        """Gap evidence for each window's words: (the document's per-word vectors or None, first, stop)."""
        features = torch.zeros((*self.word_mask.shape, size))
        present = torch.zeros(self.word_mask.shape, dtype=torch.bool)
        for row, (gaps, first, stop) in enumerate(windows):
            if gaps is None:
                continue
            for column, vector in enumerate(gaps[first:stop]):
                if vector is not None:
                    features[row, column] = torch.tensor(vector)
                    present[row, column] = True
        self.gap_features, self.gap_present = features, present

    def add_audio(self, windows: Sequence[tuple[AudioEvidence | None, int, int]], features: int) -> None:
        """The audio frames around each word's end: (the document's audio or None, first, stop)."""
        frames = np.zeros((*self.word_mask.shape, AUDIO_FRAMES, features), dtype=np.float32)
        present = np.zeros(self.word_mask.shape, dtype=bool)
        for row, (audio, first, stop) in enumerate(windows):
            if audio is None:
                continue
            for column, end in enumerate(audio.ends[first:stop]):
                if end is None:
                    continue
                centre = round(end / audio.frame_seconds)
                low, high = centre - AUDIO_BEFORE, centre + AUDIO_AFTER
                piece = audio.frames[max(0, low) : max(0, high)]
                if piece.shape[0] == 0:
                    continue
                offset = max(0, -low)
                frames[row, column, offset : offset + piece.shape[0]] = piece
                present[row, column] = True
        self.audio_frames, self.audio_present = torch.from_numpy(frames), torch.from_numpy(present)


@dataclass
class AudioEvidence:
    """A document's audio as the acoustic branch reads it: frame features and each word's end."""

    frames: np.ndarray  # (frames, features), frame k starting at k * frame_seconds
    ends: Sequence[float | None]  # per word, seconds; None where unknown
    frame_seconds: float = FRAME_SECONDS


def make_batch(
    encoded_windows: Sequence[tuple[Encoded, int, int]], start_id: int, end_id: int, pad_id: int
) -> WindowBatch:
    """Tensors for a batch of windows: ``<s> words </s>`` with the positions of each word's parts."""
    rows: list[list[int]] = []
    firsts: list[list[int]] = []
    lasts: list[list[int]] = []
    nexts: list[list[int]] = []
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
        nexts.append([position + 1 for position in word_last])  # the next word's start, or </s>
    width = max(len(row) for row in rows)
    words = max(len(w) for w in firsts)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    first_index = torch.zeros((len(rows), words), dtype=torch.long)
    last_index = torch.zeros((len(rows), words), dtype=torch.long)
    next_index = torch.zeros((len(rows), words), dtype=torch.long)
    word_mask = torch.zeros((len(rows), words), dtype=torch.bool)
    for number, row in enumerate(rows):
        input_ids[number, : len(row)] = torch.tensor(row)
        attention[number, : len(row)] = 1
        count = len(firsts[number])
        first_index[number, :count] = torch.tensor(firsts[number])
        last_index[number, :count] = torch.tensor(lasts[number])
        next_index[number, :count] = torch.tensor(nexts[number])
        word_mask[number, :count] = True
    return WindowBatch(input_ids, attention, first_index, last_index, next_index, word_mask)
