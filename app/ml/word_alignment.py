"""Word times heard: where in the audio each caption word is said, from the window the listener
already encoded.

Editors retime captions by their words; the captions' own times are often a cue's span shared by
its words. Whisper's cross-attention, read along the forced words by dynamic time warping
(CTranslate2's ``Whisper.align``), places each token in the window at 20 ms steps, for one more
decoder pass over an encoder output the listener computed anyway.

Marks written in the forced text belong to no word: a word ends where its last own token ends, and
the pause the path gives a full stop stays between the words. Cross-attention alone still puts word
edges next to pauses 60-100 ms and more off (it often hands a pause, and the sound beside it, to
the word on its wrong side), so the window's own audio corrects them, judged in 10 ms energy frames
against its own levels: a pause goes between the two words whose boundary is nearest it, and an
edge left in silence moves to the sound. On known boundaries (``tests/benchmarks/bench_word_times``)
this took the median error from 173 ms to a few ms.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.core.audio_format import SAMPLE_RATE

#: The encoder's output: one frame per 20 ms (two mel frames of 10 ms).
SECONDS_PER_FRAME = 0.02
MEL_FRAMES_PER_SECOND = 100
#: The width of the median filter over the attention weights, in encoder frames.
MEDIAN_FILTER_WIDTH = 7
#: The energy frames silence is judged on.
ENERGY_SECONDS = 0.01
#: A 10 ms frame is silent this far (dB) below the window's loud frames (its 95th percentile):
#: quiet consonants (f, s, th) of clean speech stay within 40 dB of the vowels.
SILENCE_BELOW_LOUD_DB = 40.0
#: ... or within this of its quiet frames (its 10th percentile), where noise sits: a noisy
#: recording's pauses are not silent by the first rule.
SILENCE_ABOVE_QUIET_DB = 6.0
#: Silence this long is a pause between words: stop consonants' closures are shorter.
MIN_PAUSE_SECONDS = 0.15
#: A pause is taken for a word boundary no further than this from it.
PAUSE_REACH_SECONDS = 0.4

Times = tuple[float, float]


def token_starts(alignments: Sequence[tuple[int, int]], tokens: int) -> np.ndarray:
    """Where each of ``tokens`` text tokens and the end of text after them starts (encoder frames,
    ``tokens + 1`` values), from the path's (text index, frame) pairs: the first frame the path
    reaches each index. An index the path skips starts where the next one does."""
    starts = np.full(tokens + 1, -1, dtype=np.int64)
    for index, frame in alignments:
        if 0 <= index <= tokens and starts[index] < 0:
            starts[index] = frame
    for index in range(tokens, -1, -1):
        if starts[index] < 0:
            starts[index] = starts[index + 1] if index < tokens else (starts[:index].max(initial=0))
    return starts


def words_in_window(starts: np.ndarray, spans: Sequence[tuple[int, int]], offset: float) -> list[Times]:
    """Each word's (start, end) in seconds of the file: its own tokens ``spans[i]`` (first, stop),
    from where its first token starts to where the token after its last starts."""
    return [
        (offset + float(starts[first]) * SECONDS_PER_FRAME, offset + float(starts[stop]) * SECONDS_PER_FRAME)
        for first, stop in spans
    ]


def silent_frames(audio: np.ndarray) -> np.ndarray:
    """Whether each 10 ms frame of ``audio`` (16 kHz) is silent, against the window's own levels."""
    size = int(ENERGY_SECONDS * SAMPLE_RATE)
    count = len(audio) // size
    if count == 0:
        return np.zeros(0, dtype=bool)
    frames = np.asarray(audio[: count * size], dtype=np.float64).reshape(count, size)
    level = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-12)
    loud, quiet = np.percentile(level, 95), np.percentile(level, 10)
    threshold = max(loud - SILENCE_BELOW_LOUD_DB, quiet + SILENCE_ABOVE_QUIET_DB)
    return np.asarray(level < threshold)


def pauses(silent: np.ndarray, offset: float) -> list[Times]:
    """Runs of silent frames of at least ``MIN_PAUSE_SECONDS``, (start, end) in seconds of the
    file (``silent`` from ``silent_frames`` of the audio starting at ``offset`` seconds)."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], silent.astype(np.int8), [0]))))
    runs = edges.reshape(-1, 2)
    shortest = MIN_PAUSE_SECONDS / ENERGY_SECONDS
    return [
        (offset + float(first) * ENERGY_SECONDS, offset + float(stop) * ENERGY_SECONDS)
        for first, stop in runs
        if stop - first >= shortest
    ]


def across_the_pauses(times: list[Times], found: list[Times]) -> list[Times]:
    """Words moved off the pauses ``found`` in their audio: nobody says a word across a pause, but
    the attention path often gives a pause, and the sound next to it, to the word on its wrong side.
    Each pause is put between the two words (or before the first, after the last) whose boundary is
    nearest it, if within ``PAUSE_REACH_SECONDS``: the word before ends where the pause begins, the
    word after starts where it ends, unless a word would be left with no time."""
    moved = [list(t) for t in times]
    for begin, end in found:
        distances = [_distance(moved, k, (begin, end)) for k in range(len(moved) + 1)]
        nearest = int(np.argmin(distances))
        if distances[nearest] > PAUSE_REACH_SECONDS:
            continue
        if nearest > 0 and begin <= moved[nearest - 1][0]:
            continue
        if nearest < len(moved) and end >= moved[nearest][1]:
            continue
        if nearest > 0:
            moved[nearest - 1][1] = begin
        if nearest < len(moved):
            moved[nearest][0] = end
    return [(start, end) for start, end in moved]


def _distance(times: list[list[float]], boundary: int, pause: Times) -> float:
    """How far ``pause`` is from boundary ``boundary``: between word ``boundary - 1`` and word
    ``boundary``, from the one's end to the other's start (0 where they overlap)."""
    left = times[boundary - 1][1] if boundary > 0 else -np.inf
    right = times[boundary][0] if boundary < len(times) else np.inf
    low, high = min(left, right), max(left, right)
    return float(max(0.0, pause[0] - high, low - pause[1]))


def to_the_sound(times: list[Times], silent: np.ndarray, offset: float) -> list[Times]:
    """Word edges that fall in silence moved to the sound: a start forward to the first sounding
    frame, an end back to the last, each within its word (``silent`` from ``silent_frames`` of the
    audio starting at ``offset`` seconds)."""
    moved: list[Times] = []
    count = len(silent)
    for start, end in times:
        first = int((start - offset) / ENERGY_SECONDS)
        last = int(np.ceil((end - offset) / ENERGY_SECONDS))  # one past the word's last frame
        first, last = max(0, min(first, count)), max(0, min(last, count))
        sounding = np.flatnonzero(~silent[first:last])
        if sounding.size:
            if silent[first]:
                start = offset + (first + int(sounding[0])) * ENERGY_SECONDS
            if last > 0 and silent[last - 1]:
                end = offset + (first + int(sounding[-1]) + 1) * ENERGY_SECONDS
        moved.append((start, end))
    return moved


def monotonic(times: Sequence[Times | None], backwards: float = 1.0) -> list[Times | None]:
    """Times that never go back: each word starts no earlier than the word before it ends, and
    ends no earlier than it starts. Windows' audio overlaps at their margins and the pauses move
    edges, so neighbours heard in two windows could cross; an editor retiming by word needs them in
    order. Only captions whose cues run backwards (a word starting ``backwards`` seconds or more
    before the one before it ends) go back: clamped, they would all be wrong."""
    ordered: list[Times | None] = []
    floor = -np.inf
    for heard in times:
        if heard is None:
            ordered.append(None)
            continue
        start = max(heard[0], floor) if heard[0] > floor - backwards else heard[0]
        end = max(heard[1], start)
        ordered.append((start, end))
        floor = end
    return ordered


def attention_matrix(scores: np.ndarray, first_text_row: int, frames: int) -> np.ndarray:
    """The alignment heads' attention (``scores``: heads x rows x encoder frames, before their
    softmax, rows from the start of the transcript) as one text-row x frame matrix for the time
    warping: each head's softmax over the window's own ``frames``, standardised along the rows,
    median-filtered along the frames and averaged over the heads. Rows from ``first_text_row``:
    the one predicting each forced token, then the one predicting the end of the text."""
    frames = max(1, min(frames, scores.shape[-1]))
    weights = np.asarray(scores[..., :frames], dtype=np.float32)
    weights = np.exp(weights - weights.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    spread_ = weights.std(axis=-2, keepdims=True)
    weights = (weights - weights.mean(axis=-2, keepdims=True)) / np.where(spread_ > 0, spread_, 1.0)
    return np.asarray(_median_filtered(weights, MEDIAN_FILTER_WIDTH).mean(axis=0)[first_text_row:])


def _median_filtered(values: np.ndarray, width: int) -> np.ndarray:
    """A median filter of odd ``width`` along the last axis, reflected at the edges."""
    rank = width // 2
    if values.shape[-1] <= rank:
        return values
    padded = np.pad(values, [(0, 0)] * (values.ndim - 1) + [(rank, rank)], mode="reflect")
    windows = np.lib.stride_tricks.sliding_window_view(padded, width, axis=-1)
    return np.partition(windows, rank, axis=-1)[..., rank]


def negative_dtw(matrix: np.ndarray) -> list[tuple[int, int]]:
    """The monotonic path through ``matrix`` (rows x frames) that gathers the most of it, as (row,
    frame) pairs from (0, 0) to the last of each: dynamic time warping on its negation, moves
    diagonal, down a row or along a frame (ties along a frame, as Whisper's own aligner breaks
    them). Each row of the cost is one running minimum: along a frame the cost of a cell is the
    matrix's prefix sum plus the least of the entries from above."""
    rows, frames = matrix.shape
    values = -np.asarray(matrix, dtype=np.float64)
    cost = np.full((rows + 1, frames + 1), np.inf)
    cost[0, 0] = 0.0
    for i in range(1, rows + 1):
        from_above = np.minimum(cost[i - 1, :-1], cost[i - 1, 1:])  # diagonal, down
        prefix = np.cumsum(values[i - 1])
        before = prefix - values[i - 1]  # the row's sum up to the frame before
        cost[i, 1:] = np.minimum.accumulate(from_above - before) + prefix
    diagonal, above, left = cost[:-1, :-1], cost[:-1, 1:], cost[1:, :-1]
    trace = np.full((rows + 1, frames + 1), 2, dtype=np.int8)
    trace[1:, 1:][(diagonal < above) & (diagonal < left)] = 0
    trace[1:, 1:][(above < diagonal) & (above < left)] = 1
    trace[:, 0] = 1
    trace[0, :] = 2
    path: list[tuple[int, int]] = []
    i, j = rows, frames
    while i > 0 or j > 0:
        path.append((i - 1, j - 1))
        step = trace[i, j]
        if step == 0:
            i, j = i - 1, j - 1
        elif step == 1:
            i -= 1
        else:
            j -= 1
    path.reverse()
    return path


def heard_word_times(
    matrix: np.ndarray, forced: int, spans: Sequence[tuple[int, int]], audio: np.ndarray, offset: float
) -> list[Times]:
    """Each word's (start, end), seconds of the file, in one window: ``matrix`` from
    ``attention_matrix`` over the window's ``forced`` tokens (and the end of the text), ``spans``
    each word's own tokens in them, ``audio`` the window's own stretch (16 kHz), starting
    ``offset`` seconds into the file."""
    starts = token_starts(negative_dtw(matrix), forced)
    times = words_in_window(starts, spans, offset)
    silent = silent_frames(audio)
    ordered = monotonic(to_the_sound(across_the_pauses(times, pauses(silent, offset)), silent, offset))
    return [t for t in ordered if t is not None]
