"""Carry a reference transcript's punctuation and capitals onto ASR caption words.

Rule (Guerreiro et al.): a mark after a reference word goes to the aligned caption gap if the word
on its left or on its right was recognised correctly (the start and end of the text count as
correct). Otherwise it is left out, and the report says why. Both neighbours right gives a
high-confidence suggestion, one a medium one.

A reference for another video or in another language matches few words; below
``MIN_MATCH_RATE`` (exact token matches over the shorter text) nothing is carried, since marks
placed by a poor alignment would be scattered at random.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from app.align.alignment import Alignment, align
from app.align.normalize import tokens
from app.core.marks import clean_mark, mark_class, same_mark, strength
from app.core.model import Casing, Source, Suggestion, Word

MIN_MATCH_RATE = 0.5
HIGH_CONFIDENCE = 0.95
MEDIUM_CONFIDENCE = 0.75

NEITHER_NEIGHBOUR = "neither neighbouring word recognised"
NO_WORD_BEFORE = "no caption word before the mark"
SAME_GAP = "another mark carried to the same gap"
NO_TOKENS = "reference word has no letters or digits"


@dataclass
class TransferResult:
    suggestions: list[Suggestion]
    alignment: Alignment | None
    report: dict[str, object] = field(default_factory=dict)


@dataclass
class _Tokens:
    items: list[str]
    owner: list[int]  # word index of each token
    last: dict[int, int]  # word index -> its last token
    first: dict[int, int]


def _tokenize(words: Sequence[Word], language: str) -> _Tokens:
    result = _Tokens([], [], {}, {})
    for index, word in enumerate(words):
        parts = tokens(word.text, language)
        if not parts:
            continue
        result.first[index] = len(result.items)
        result.items.extend(parts)
        result.owner.extend([index] * len(parts))
        result.last[index] = len(result.items) - 1
    return result


def transfer(
    captions: Sequence[Word],
    reference: Sequence[Word],
    language: str = "en",
    first_id: int = 1,
) -> TransferResult:
    """Suggestions (source: reference) for the caption words, and a report of what was done."""
    hyp = _tokenize(captions, language)
    ref = _tokenize(reference, language)
    report: dict[str, object] = {
        "caption_words": len(captions),
        "reference_words": len(reference),
        "min_match_rate": MIN_MATCH_RATE,
        "warnings": [],
    }
    warnings: list[str] = report["warnings"]  # type: ignore[assignment]
    if not ref.items:
        warnings.append("the reference has no words: nothing carried")
        return TransferResult([], None, report)
    if not hyp.items:
        warnings.append("the captions have no words: nothing carried")
        return TransferResult([], None, report)

    alignment = align(hyp.items, ref.items)
    match_rate = alignment.matches / min(len(hyp.items), len(ref.items))
    report["alignment"] = {
        "matches": alignment.matches,
        "substitutions": alignment.substitutions,
        "insertions": alignment.insertions,
        "deletions": alignment.deletions,
        "match_rate": round(match_rate, 4),
    }
    report["word_error_rate"] = round(alignment.word_error_rate, 4)
    if match_rate < MIN_MATCH_RATE:
        warnings.append(
            f"only {match_rate:.0%} of the words match (below {MIN_MATCH_RATE:.0%}): the reference seems "
            "to be for another video or in another language; nothing carried"
        )
        return TransferResult([], alignment, report)

    carried, skipped = _carried_marks(reference, alignment, hyp, ref)
    suggestions: list[Suggestion] = []
    next_id = first_id
    for gap in sorted(carried):
        mark, confidence, _ = carried[gap]
        if same_mark(captions[gap].mark, mark):
            continue  # already there
        if gap + 1 < len(captions) and captions[gap + 1].glued:
            continue  # inside one word split by styling
        suggestions.append(Suggestion(next_id, gap, mark, confidence, Source.REFERENCE, {mark: confidence}))
        next_id += 1
    casing = _casing(captions, reference, alignment, hyp, ref, next_id)
    suggestions.extend(casing)
    by_mark = Counter(mark_class(mark) or "none" for mark, _, _ in carried.values())
    report["marks"] = {
        "carried": len(carried),
        "carried_by_class": dict(sorted(by_mark.items())),
        "high_confidence": sum(1 for _, _, both in carried.values() if both),
        "skipped": dict(sorted(skipped.items())),
    }
    report["casing_carried"] = len(casing)
    return TransferResult(suggestions, alignment, report)


def _carried_marks(
    reference: Sequence[Word], alignment: Alignment, hyp: _Tokens, ref: _Tokens
) -> tuple[dict[int, tuple[str, float, bool]], Counter[str]]:
    """Each reference mark placed at its caption gap: gap -> (mark, confidence, whether both
    neighbours matched), the strongest where two meet; and the marks not placed, by reason."""
    carried: dict[int, tuple[str, float, bool]] = {}
    skipped: Counter[str] = Counter()
    for ref_index, word in enumerate(reference):
        mark = clean_mark(word.mark)
        if not mark:
            continue
        if ref_index not in ref.last:
            skipped[NO_TOKENS] += 1
            continue
        gap, both = _place(ref.last[ref_index], alignment, hyp, len(ref.items))
        if gap is None:
            skipped[NO_WORD_BEFORE if both is None else NEITHER_NEIGHBOUR] += 1
            continue
        confidence = HIGH_CONFIDENCE if both else MEDIUM_CONFIDENCE
        if gap in carried:
            skipped[SAME_GAP] += 1
            held = carried[gap]
            if (confidence, strength(mark)) <= (held[1], strength(held[0])):
                continue
        carried[gap] = (mark, confidence, bool(both))
    return carried, skipped


def _place(r: int, alignment: Alignment, hyp: _Tokens, ref_length: int) -> tuple[int | None, bool | None]:
    """The caption gap (word index) for a mark after reference token ``r``, and whether both
    neighbours matched. (None, None): no caption word before it; (None, False): rule says no."""
    left_ok = alignment.exact[r]
    right_ok = r + 1 == ref_length or alignment.exact[r + 1]
    if left_ok:
        return hyp.owner[alignment.ref_to_hyp[r]], right_ok
    if not right_ok:
        return None, False
    # Only the right neighbour is sure: the mark goes just before it, after any inserted words.
    before = len(hyp.owner) if r + 1 == ref_length else alignment.hyp_before[r + 1]
    if before == 0:
        return None, None
    return hyp.owner[before - 1], False


def _casing(
    captions: Sequence[Word],
    reference: Sequence[Word],
    alignment: Alignment,
    hyp: _Tokens,
    ref: _Tokens,
    first_id: int,
) -> list[Suggestion]:
    """Capitals of matched one-token words: sentence starts, names, acronyms."""
    suggestions: list[Suggestion] = []
    for ref_index, word in enumerate(reference):
        casing = word.casing
        if casing in (Casing.LOWER, Casing.UNCASED, Casing.MIXED) or ref_index not in ref.first:
            continue
        r = ref.first[ref_index]
        if r != ref.last[ref_index] or not alignment.exact[r]:
            continue
        h = alignment.ref_to_hyp[r]
        caption_index = hyp.owner[h]
        if hyp.first[caption_index] != h or hyp.last[caption_index] != h:
            continue
        if captions[caption_index].casing is casing or not captions[caption_index].casable:
            continue
        suggestions.append(
            Suggestion(
                first_id + len(suggestions),
                caption_index,
                "",
                HIGH_CONFIDENCE,
                Source.REFERENCE,
                casing=casing,
            )
        )
    return suggestions
