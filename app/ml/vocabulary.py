"""A model's compact vocabulary: the sub-word pieces its languages need, out of the encoder's 250,002.

The multilingual encoder's word-embedding table (250,002 x 384 floats, 384 MB) is most of its
export, and most of it serves scripts a Punctum model was never trained on. A model folder may
list the piece ids to keep in ``vocabulary.txt``; the export then keeps only those rows of the
table and cuts ``tokenizer.json`` to match, so that the runtime loads a fraction of the bytes.

The list is every piece the training corpora's words are cut into (the model reads words one by
one, lowercased, so the words decide it), plus a margin: every piece written in Latin, Greek or
Cyrillic letters, digits, punctuation and symbols. A list of the training words' pieces alone
(43,096 pieces) cut 0.1-2% of the test sets' words differently from the whole vocabulary (the
Spanish UD words "azúcar" and "gastronomía", say, which the training text lacks), and moved F1 by
up to 1 point; with the margin, the test sets are cut exactly as before. A word in another script
becomes the unknown piece: no crash, and a warning that the language is not supported.

``python -m app.training.build_vocabulary RECIPE.toml [...] [--data DIR] [-o FILE]`` writes the list from
the training sources the recipes name (training code, which the runtime never imports).
"""

from __future__ import annotations

import copy
import hashlib
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

VOCABULARY_NAME = "vocabulary.txt"
#: The word-start marker SentencePiece puts before each word's first piece.
WORD_START = "\u2581"
#: The ids that must keep their place: start, pad, end, unknown (the encoder finds padding by id).
FIXED_IDS = (0, 1, 2, 3)


class VocabularyError(ValueError):
    """A vocabulary list that does not fit the model's tokenizer."""


def read_vocabulary(path: Path) -> list[int]:
    """The sorted piece ids of a ``vocabulary.txt`` (one id per line, ``#`` starts a comment)."""
    ids = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if not text.isdigit():
            raise VocabularyError(f"line {number}: not a piece id: {text!r}")
        ids.append(int(text))
    kept = sorted(set(ids))
    if kept[: len(FIXED_IDS)] != list(FIXED_IDS):
        raise VocabularyError(f"the list must keep the special ids {FIXED_IDS}")
    return kept


def vocabulary_digest(model_dir: Path) -> str:
    """What identifies a model's vocabulary list ("" for the encoder's whole vocabulary)."""
    path = model_dir / VOCABULARY_NAME
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


#: The scripts whose pieces are all kept: the supported languages' own, and the two whose names
#: and symbols their text quotes most (Greek letters in science, Cyrillic names in the news).
MARGIN_SCRIPTS = ("LATIN", "GREEK", "CYRILLIC")


def margin_pieces(pieces: Sequence[str]) -> set[int]:
    """The ids of the pieces written in one of ``MARGIN_SCRIPTS`` (or in digits, punctuation and
    symbols alone): any word of the supported languages is then cut as the whole vocabulary cuts
    it, the words the training corpora lack included. That matters beyond the word itself: a word
    cut into other pieces moves every later window's boundaries, which moved F1 on a test set by
    0.5 for five Cyrillic and Greek names."""
    kept = set()
    for index, piece in enumerate(pieces):
        text = piece.replace(WORD_START, "")
        if not text or (piece.startswith("<") and piece.endswith(">")):
            continue
        scripts = {unicodedata.name(c, "").split(" ")[0] for c in text if c.isalpha()}
        if len(scripts) <= 1 and scripts <= set(MARGIN_SCRIPTS):
            kept.add(index)
    return kept


def pieces_of_words(tokenizer: Any, words: Iterable[str]) -> set[int]:
    """The piece ids that a ``tokenizers.Tokenizer`` cuts ``words`` into, read as the model reads
    them (lowercased, accents composed)."""
    unique = sorted({unicodedata.normalize("NFC", w.lower()) for w in words})
    used: set[int] = set()
    for start in range(0, len(unique), 50_000):
        for encoding in tokenizer.encode_batch(unique[start : start + 50_000], add_special_tokens=False):
            used.update(encoding.ids)
    return used


def compact_tokenizer(tokenizer: dict[str, Any], kept: Sequence[int]) -> dict[str, Any]:
    """``tokenizer.json``'s content with only the pieces ``kept`` (sorted ids), renumbered in
    their order; special tokens keep their places or move with their piece."""
    model = tokenizer["model"]
    if model.get("type") != "Unigram":
        raise VocabularyError(
            f"a compact vocabulary needs a SentencePiece Unigram tokenizer, not {model.get('type')}"
        )
    vocab = model["vocab"]
    if kept[-1] >= len(vocab):
        raise VocabularyError(f"piece id {kept[-1]} is past the tokenizer's {len(vocab)} pieces")
    new_id = {old: new for new, old in enumerate(kept)}
    # Everything but the piece list is small: copied whole, the list rebuilt from the kept ids.
    result = copy.deepcopy({key: value for key, value in tokenizer.items() if key != "model"})
    result["model"] = {
        **copy.deepcopy({k: v for k, v in model.items() if k != "vocab"}),
        "vocab": [vocab[i] for i in kept],
        "unk_id": new_id[model["unk_id"]],
    }
    result["added_tokens"] = [
        {**token, "id": new_id[token["id"]]}
        for token in result.get("added_tokens", [])
        if token["id"] in new_id
    ]
    processor = result.get("post_processor") or {}
    for special in processor.get("special_tokens", {}).values():
        special["ids"] = [new_id[i] for i in special["ids"]]
    return result


def build_vocabulary(tokenizer: Any, pieces: Sequence[str], words: Iterable[str]) -> list[int]:
    """The sorted ids to keep for a model trained on ``words``: their pieces, the margin and the
    special tokens the model reads (not the mask, which only pre-training used)."""
    return sorted(pieces_of_words(tokenizer, words) | margin_pieces(pieces) | set(FIXED_IDS))
