"""Minimum-edit-distance alignment of two token sequences (ASR hypothesis and human reference).

Three stages keep it fast and its memory linear in the length of the texts:

1. *Anchors*: n-grams that occur exactly once in each text, kept where their order agrees
   (longest increasing subsequence), cut the texts into short stretches to align separately.
2. Each stretch is aligned by rapidfuzz's compiled Levenshtein (uniform costs).
3. Where that alignment has no exact matches, a small weighted alignment re-pairs the words by
   character similarity, so a misheard name ("rosa" / "rose") lines up as a substitution with its
   look-alike rather than with whatever word happens to stand in the same column.
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz, process
from rapidfuzz.distance import Levenshtein

#: Stretches longer than this (tokens on either side) are cut further by anchors before aligning.
MAX_STRETCH = 3_000
#: Mismatched regions up to this many cells are re-paired by similarity.
MAX_REPAIR_CELLS = 40_000


@dataclass
class Alignment:
    """Token-level alignment. Index -1 means no counterpart (insertion or deletion)."""

    hyp_to_ref: list[int]
    ref_to_hyp: list[int]
    exact: list[bool]  # per reference token: aligned to an identical hypothesis token
    #: Per reference token: hypothesis tokens that come before its column, and through its column.
    #: Insertions between two reference tokens count as after the first and before the second.
    hyp_before: list[int]
    hyp_through: list[int]

    @property
    def matches(self) -> int:
        return sum(self.exact)

    @property
    def substitutions(self) -> int:
        return sum(1 for r, h in enumerate(self.ref_to_hyp) if h >= 0 and not self.exact[r])

    @property
    def deletions(self) -> int:
        return self.ref_to_hyp.count(-1)

    @property
    def insertions(self) -> int:
        return self.hyp_to_ref.count(-1)

    @property
    def word_error_rate(self) -> float:
        """Errors over reference tokens: (S + D + I) / N."""
        errors = self.substitutions + self.deletions + self.insertions
        return errors / len(self.ref_to_hyp) if self.ref_to_hyp else float(bool(self.hyp_to_ref))


def align(hyp: Sequence[str], ref: Sequence[str]) -> Alignment:
    pairs: list[tuple[int, int]] = []  # (hyp index or -1, ref index or -1) in path order
    for h0, h1, r0, r1, anchored in _stretches(hyp, ref, 0, len(hyp), 0, len(ref)):
        if anchored:
            pairs.extend((h0 + k, r0 + k) for k in range(h1 - h0))
        else:
            pairs.extend(_align_stretch(hyp, ref, h0, h1, r0, r1))
    return _build(pairs, hyp, ref)


def _build(pairs: list[tuple[int, int]], hyp: Sequence[str], ref: Sequence[str]) -> Alignment:
    hyp_to_ref = [-1] * len(hyp)
    ref_to_hyp = [-1] * len(ref)
    hyp_before = [0] * len(ref)
    hyp_through = [0] * len(ref)
    consumed = 0
    for h, r in pairs:
        if r >= 0:
            hyp_before[r] = consumed
        if h >= 0:
            consumed += 1
        if r >= 0:
            hyp_through[r] = consumed
        if h >= 0 and r >= 0:
            hyp_to_ref[h] = r
            ref_to_hyp[r] = h
    exact = [h >= 0 and hyp[h] == ref[r] for r, h in enumerate(ref_to_hyp)]
    return Alignment(hyp_to_ref, ref_to_hyp, exact, hyp_before, hyp_through)


def _stretches(
    hyp: Sequence[str], ref: Sequence[str], h0: int, h1: int, r0: int, r1: int, depth: int = 0
) -> list[tuple[int, int, int, int, bool]]:
    """Cut [h0:h1] x [r0:r1] into anchored runs (identical n-grams) and stretches between them."""
    if max(h1 - h0, r1 - r0) <= MAX_STRETCH:
        return [(h0, h1, r0, r1, False)]
    if depth > 3:
        return _diagonal_cut(h0, h1, r0, r1)
    anchors: list[tuple[int, int, int]] = []
    for n in (3, 2, 1):
        anchors = _anchors(hyp, ref, h0, h1, r0, r1, n)
        if anchors:
            break
    if not anchors:
        return _diagonal_cut(h0, h1, r0, r1)
    result: list[tuple[int, int, int, int, bool]] = []
    h, r = h0, r0
    for ah, ar, n in anchors:
        if ah < h or ar < r:
            continue  # overlaps the previous anchor
        result.extend(_stretches(hyp, ref, h, ah, r, ar, depth + 1))
        result.append((ah, ah + n, ar, ar + n, True))
        h, r = ah + n, ar + n
    result.extend(_stretches(hyp, ref, h, h1, r, r1, depth + 1))
    return result


def _diagonal_cut(h0: int, h1: int, r0: int, r1: int) -> list[tuple[int, int, int, int, bool]]:
    """Texts with nothing in common: align proportional pieces, which bounds memory."""
    pieces = max(h1 - h0, r1 - r0) // MAX_STRETCH + 1
    cuts = [(h0 + (h1 - h0) * k // pieces, r0 + (r1 - r0) * k // pieces) for k in range(pieces + 1)]
    return [(a[0], b[0], a[1], b[1], False) for a, b in itertools.pairwise(cuts)]


def _anchors(
    hyp: Sequence[str], ref: Sequence[str], h0: int, h1: int, r0: int, r1: int, n: int
) -> list[tuple[int, int, int]]:
    """(hyp start, ref start, n) of n-grams unique on both sides, in an order both agree on."""
    hyp_grams = Counter(tuple(hyp[i : i + n]) for i in range(h0, h1 - n + 1))
    ref_grams = Counter(tuple(ref[i : i + n]) for i in range(r0, r1 - n + 1))
    ref_position = {
        tuple(ref[i : i + n]): i for i in range(r0, r1 - n + 1) if ref_grams[tuple(ref[i : i + n])] == 1
    }
    candidates = [
        (i, ref_position[gram])
        for i in range(h0, h1 - n + 1)
        if hyp_grams[gram := tuple(hyp[i : i + n])] == 1 and gram in ref_position
    ]
    return [(i, j, n) for i, j in _increasing(candidates)]


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Longest subsequence of ``pairs`` (sorted by first item) whose second items increase."""
    tails: list[int] = []  # smallest second item ending an increasing run of each length
    tail_index: list[int] = []
    previous = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        place = bisect.bisect_left(tails, j)
        if place == len(tails):
            tails.append(j)
            tail_index.append(k)
        else:
            tails[place] = j
            tail_index[place] = k
        previous[k] = tail_index[place - 1] if place else -1
    chain = []
    k = tail_index[-1] if tail_index else -1
    while k >= 0:
        chain.append(pairs[k])
        k = previous[k]
    return chain[::-1]


def _align_stretch(
    hyp: Sequence[str], ref: Sequence[str], h0: int, h1: int, r0: int, r1: int
) -> list[tuple[int, int]]:
    pairs: list[tuple[int, int]] = []
    pending: list[tuple[int, int, int, int]] = []  # consecutive non-equal opcodes, merged

    def flush() -> None:
        if pending:
            a0, a1, b0, b1 = pending[0][0], pending[-1][1], pending[0][2], pending[-1][3]
            pairs.extend(_repair(hyp, ref, a0, a1, b0, b1))
            pending.clear()

    for op in Levenshtein.opcodes(hyp[h0:h1], ref[r0:r1]):
        a0, a1, b0, b1 = h0 + op.src_start, h0 + op.src_end, r0 + op.dest_start, r0 + op.dest_end
        if op.tag == "equal":
            flush()
            pairs.extend((a0 + k, b0 + k) for k in range(a1 - a0))
        else:
            pending.append((a0, a1, b0, b1))
    flush()
    return pairs


def _repair(
    hyp: Sequence[str], ref: Sequence[str], a0: int, a1: int, b0: int, b1: int
) -> list[tuple[int, int]]:
    """Weighted alignment of a mismatched region: substitution costs 2 x (1 - similarity)."""
    m, n = a1 - a0, b1 - b0
    if m == 0 or n == 0 or m * n > MAX_REPAIR_CELLS:
        return _plain(a0, a1, b0, b1)
    similarity = process.cdist(hyp[a0:a1], ref[b0:b1], scorer=fuzz.ratio) / 100.0
    # An edge of the table costs one per word left over.
    cost = [[float(i)] + [0.0] * n for i in range(m + 1)]
    cost[0] = [float(j) for j in range(n + 1)]
    for i in range(1, m + 1):
        row, above = cost[i], cost[i - 1]
        sims = similarity[i - 1]
        for j in range(1, n + 1):
            row[j] = min(above[j - 1] + 2.0 * (1.0 - float(sims[j - 1])), above[j] + 1.0, row[j - 1] + 1.0)
    pairs: list[tuple[int, int]] = []
    i, j = m, n
    while i > 0 or j > 0:
        if (
            i > 0
            and j > 0
            and abs(cost[i][j] - (cost[i - 1][j - 1] + 2.0 * (1.0 - float(similarity[i - 1][j - 1])))) < 1e-9
        ):
            pairs.append((a0 + i - 1, b0 + j - 1))
            i, j = i - 1, j - 1
        elif i > 0 and abs(cost[i][j] - (cost[i - 1][j] + 1.0)) < 1e-9:
            pairs.append((a0 + i - 1, -1))
            i -= 1
        else:
            pairs.append((-1, b0 + j - 1))
            j -= 1
    return pairs[::-1]


def _plain(a0: int, a1: int, b0: int, b1: int) -> list[tuple[int, int]]:
    """Pair position by position, the surplus as insertions or deletions."""
    common = min(a1 - a0, b1 - b0)
    pairs = [(a0 + k, b0 + k) for k in range(common)]
    pairs += [(a, -1) for a in range(a0 + common, a1)]
    pairs += [(-1, b) for b in range(b0 + common, b1)]
    return pairs
