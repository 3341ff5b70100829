"""Evaluation corpora as word lists: IWSLT/mteval XML transcripts and token-tag files.

Token-tag files (``word<TAB>LABEL``, as in the IWSLT2011 punctuation benchmark) split contractions
("do" "n't"); ``read_token_tags`` joins them back into the words captions show ("don't"), and the
label of the last piece is the word's.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from app.core.marks import LABELS
from app.core.model import Word
from app.formats.cuetext import tokenize
from app.formats.errors import FormatError

_CONTRACTION = re.compile(r"(?:'|’)(?:s|m|d|ll|re|ve|t)|n't", re.IGNORECASE)


def read_iwslt_xml(path: Path) -> list[list[Word]]:
    """The words of each ``<seg>``, in document order, punctuation kept on the words."""
    try:
        root = ElementTree.parse(path).getroot()
    except (ElementTree.ParseError, OSError) as error:
        raise FormatError(
            path, getattr(error, "position", (None,))[0], f"not readable XML: {error}"
        ) from None
    return [tokenize(seg.text or "", 0, 0)[0] for seg in root.iter("seg")]


def read_token_tags(path: Path) -> list[Word]:
    """Words with their marks from a ``token<TAB>LABEL`` file (labels O, COMMA, PERIOD, QUESTION)."""
    words: list[Word] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise FormatError(path, None, str(error)) from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        token, _, label = line.partition("\t")
        if label not in LABELS:
            raise FormatError(path, number, f"expected 'word<TAB>LABEL' with LABEL in {sorted(LABELS)}")
        mark = LABELS[label]
        if words and _CONTRACTION.fullmatch(token) and not words[-1].mark:
            words[-1] = Word(words[-1].text + token, mark=mark)
        else:
            words.append(Word(token, mark=mark))
    return words
