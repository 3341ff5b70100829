"""The text the listener forces: the captions' words as the recogniser's tokens, with marks.

Whisper follows the style of the text it is given, so the words go in as a writer would put them:
with the marks chosen so far and a capital where a sentence starts or the text model gives one.
Each form's tokens are kept, shared by the windows a file's workers hear at once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.core.marks import MODEL_MARKS, SENTENCE_END_CLASSES, set_mark
from app.core.model import Casing, apply_casing, casing_of
from app.ml.combination import Combination
from app.ml.listening_windows import Window

#: Word forms whose tokens are kept between windows and files.
_KEPT_FORMS = 50_000


@dataclass(frozen=True)
class Listening:
    """What to listen along. Per word: its text as the captions write it, its time in seconds
    (its own where the captions or a timing file give one, else its cue's), its cue, whether the
    text model writes it with a capital, and the mark (``MODEL_MARKS`` index) the text model puts
    after it, which the first pass writes in. With the text model's distributions (``read``) and
    how they combine with what is heard, a second pass writes the combined marks of the first."""

    words: Sequence[str]
    times: Sequence[tuple[float, float]]
    cues: Sequence[int]
    language: str
    capitals: Sequence[bool]
    first_marks: Sequence[int]
    read: Sequence[Sequence[float]] = ()
    combination: Combination | None = None

    def second_marks(self, heard: dict[int, list[float]]) -> dict[int, int]:
        """The marks a second pass writes at the gaps ``heard``: the combined reading's choice."""
        if self.combination is None or not self.read:
            return {}
        return {
            index: int(np.argmax(self.combination.combine(self.read[index], row)))
            for index, row in heard.items()
        }


class Overlay(Sequence[int]):
    """Marks as first written, with a window's own changed."""

    def __init__(self, under: Sequence[int], over: dict[int, int]) -> None:
        self.under, self.over = under, over

    def __len__(self) -> int:
        return len(self.under)

    def __getitem__(self, index: int) -> int:  # type: ignore[override]
        return self.over.get(index, self.under[index])


class ForcedText:
    """Words and marks as the recogniser's tokens (``tokenizer``: a ``tokenizers.Tokenizer``)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._encoded: dict[str, list[int]] = {}  # tokens of each word form, shared by the windows
        self._lock = threading.Lock()
        self.end_of_text = self.token("<|endoftext|>")
        self.mark_tokens = self._mark_candidates()

    def token(self, text: str) -> int:
        found = self.tokenizer.token_to_id(text)
        if found is None:
            raise ValueError(f"the recogniser's tokenizer lacks {text}")
        return int(found)

    def encode(self, text: str) -> list[int]:
        with self._lock:
            if text not in self._encoded:
                if len(self._encoded) >= _KEPT_FORMS:  # a worker reads file after file
                    self._encoded.clear()
                self._encoded[text] = list(self.tokenizer.encode(text, add_special_tokens=False).ids)
            return self._encoded[text]

    def _mark_candidates(self) -> list[list[int]]:
        """For each mark class, the single tokens that write it (with French spacing too)."""
        forms: dict[str, tuple[str, ...]] = {
            ",": (",", " ,"),
            ".": (".", " .", ";", " ;", "..."),
            "?": ("?", " ?"),
            "!": ("!", " !"),
            ":": (":", " :"),
        }
        return [
            sorted({encoded[0] for form in forms[mark] if len(encoded := self.encode(form)) == 1})
            for mark in MODEL_MARKS[1:]
        ]

    def form(self, listening: Listening, index: int, sentence_start: bool) -> list[int]:
        """Word ``index`` as forced: as the captions write it, with a capital where the text model
        gives it one or a sentence starts, unless the captions gave it capitals of their own."""
        word = listening.words[index]
        if casing_of(word) is Casing.LOWER and (sentence_start or listening.capitals[index]):
            word = apply_casing(word, Casing.CAPITALISED)
        return self.encode(" " + word)

    def mark(self, listening: Listening, mark: int) -> list[int]:
        return self.encode(set_mark("", MODEL_MARKS[mark], listening.language)) if mark else []

    def word_tokens(self, listening: Listening, index: int, written: Sequence[int]) -> list[int]:
        """Word ``index`` as forced, with the mark ``written`` after it."""
        sentence_start = index == 0 or written[index - 1] in SENTENCE_END_CLASSES
        return self.form(listening, index, sentence_start) + self.mark(listening, written[index])

    def window_text(
        self, listening: Listening, window: Window, written: Sequence[int]
    ) -> tuple[list[int], dict[int, int], list[tuple[int, int]]]:
        """The window's words as tokens with the marks in ``written``; the row whose distribution
        is each gap's (word index -> row); and (row, token) of each word's first token."""
        tokens: list[int] = []
        gaps: dict[int, int] = {}
        firsts: list[tuple[int, int]] = []
        for index in range(window.first, window.stop):
            word = self.word_tokens(listening, index, written)
            firsts.append((len(tokens), word[0]))
            tokens += word
            gaps[index] = len(tokens) - len(self.mark(listening, written[index]))
        return tokens, gaps, firsts

    def go_on(self, listening: Listening, window: Window, gaps: dict[int, int]) -> dict[int, list[int]]:
        """At each gap, the tokens that go on without a mark: the next word's first (or the end of
        the text, also at the window's last gap: its audio may end before the next word)."""
        count = len(listening.words)
        going: dict[int, list[int]] = {}
        for index in gaps:
            going[index] = (
                [self.form(listening, index + 1, sentence_start=False)[0]] if index + 1 < count else []
            )
            if index + 1 == window.stop:
                going[index].append(self.end_of_text)
        return going
