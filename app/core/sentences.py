"""Where sentences start in captions whose marks are in: the capital export gives a word and
re-cutting plans by, whether or not the captions have written it yet."""

from __future__ import annotations

from collections.abc import Sequence

from app.core.marks import SENTENCE_END_CLASSES, model_class
from app.core.model import Word
from app.core.orthography import is_abbreviation


def starts_sentence(words: Sequence[Word], index: int) -> bool:
    """Whether word ``index`` starts the text or follows a sentence mark, but not an
    abbreviation's full stop ("e.g. apples", "the U.S. team")."""
    if index == 0:
        return True
    before = words[index - 1]
    return model_class(before.mark) in SENTENCE_END_CLASSES and not is_abbreviation(before.text + before.mark)
