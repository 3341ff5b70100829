"""Punctuation for live captions: words go in as a recogniser gives them, and each comes back once,
in order, with its mark and capital, as soon as the policy lets it be decided.

Each new word re-reads one bounded window of the stream: the newest words that fit
``context_tokens`` sub-tokens (the words still waiting and the decided ones before them), so the
model's work per word, and the memory of an endless stream, stay constant. A word is decided when
``lookahead`` words follow it; with the dynamic policy earlier, once a word follows it and the
entropy of its mark prediction is under ``entropy_threshold``; and at the latest
``max_delay_ms`` after it (see ``StreamPunctuator``). Word times, when they come, give the gap
evidence of batch mode: the pause after a word is known once the next word starts, and from then
on it feeds the model.

``run_json_lines`` is ``punctum stream``: JSON lines in, through a ``StreamPunctuator``, JSON lines
out; reading and checking its input lines is ``stream_input``'s job.
"""

from __future__ import annotations

import itertools
import json
import math
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from app.audio.gap_features import timed_gaps
from app.audio.prosody import RATE_CONTEXT
from app.core.errors import UsageError
from app.core.marks import SENTENCE_END_CLASSES, has_protected_punctuation, model_class, set_mark
from app.core.model import Evidence, Word, apply_casing
from app.core.orthography import is_abbreviation
from app.formats.cuetext import split_token
from app.services.gap_evidence import GapEvidence
from app.services.model import Punctuator
from app.services.stream_input import MAX_LINE_BYTES, OVERLONG, StreamInputError, parse_line, read_lines
from app.services.suggestions import head_casing, model_mark, model_word, written_capital

#: Words after a gap before it is decided, by default (F1 and delay for each lookahead: docs/stream.md).
DEFAULT_LOOKAHEAD = 4
#: The longest lookahead accepted: the waiting words must fit one model window.
MAX_LOOKAHEAD = 32
#: Sub-tokens of the window read per new word: the model's whole window (some 140 words). On
#: the dev sets (``bench_stream --tune``) F1 at lookahead 4 is 63.1 with it, 62.1 with 96 and
#: 61.7 with 48 (half and a third of the compute); on the TED test talks only the whole window
#: brings lookahead 4 within 3 F1 of whole documents (the table in docs/stream.md).
CONTEXT_TOKENS = 190


class StreamContextError(UsageError):
    """A context longer than the model's window: asked for, it would be cut without a word."""


#: The smallest window accepted: a few words of context.
MIN_CONTEXT_TOKENS = 8
#: Mark entropy (nats) under which the dynamic policy decides a gap before ``lookahead`` words
#: follow it: the largest tried on the dev sets (``bench_stream --tune``); with the whole window
#: it keeps the F1 of lookahead 4 (63.2 against 63.1) and cuts the mean wait from 3.4 words to 2.3.
ENTROPY_THRESHOLD = 0.3
#: Words that must follow a gap before the model's confidence may decide it early: with none, at
#: the window's very end, the model is often sure of marks it gets wrong (F1 41 at lookahead 0 on
#: the dev sets; deciding early from there costs 0.8 F1).
EARLIEST = 1

#: Why a word was decided when it was.
LOOKAHEAD, CONFIDENT, DEADLINE, END = "lookahead", "confident", "deadline", "end"


@dataclass(frozen=True)
class StreamWord:
    """A decided word: its text as given with only its capital changed, and the mark after it."""

    index: int  # position in the stream, from 0
    word: str  # opening punctuation given with the word, and the word
    mark: str  # what is written after the word: the model's mark, with quotes given kept
    confidence: float  # the model's probability of that mark
    start: float | None  # seconds, as given
    end: float | None
    after: int  # words that had arrived after this one when it was decided
    decided: str  # LOOKAHEAD, CONFIDENT, DEADLINE or END

    def as_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {"index": self.index, "word": self.word, "mark": self.mark}
        if self.start is not None:
            record["start"] = self.start
        if self.end is not None:
            record["end"] = self.end
        record.update(confidence=round(self.confidence, 4), after=self.after, decided=self.decided)
        return record


@dataclass
class _Entry:
    """A word in the window: given, waiting, or decided and kept as left context."""

    index: int
    prefix: str
    text: str
    trailing: str  # punctuation given after the word
    model_text: str
    tokens: int
    start: float | None
    end: float | None
    arrived: float  # wall clock (``clock``) when it was fed
    gap: list[float] | None = None  # evidence of the gap after it, once the next word is known
    decided: bool = False


@dataclass(frozen=True)
class WindowReading:
    """The model's reading of the latest window: per word from ``first`` on, mark and casing
    probabilities (also for words already decided there, as left context)."""

    first: int
    marks: list[list[float]]
    casing: list[list[float]]

    def marks_of(self, index: int) -> list[float]:
        return self.marks[index - self.first]

    def casing_of(self, index: int) -> list[float]:
        return self.casing[index - self.first]


def entropy(probabilities: Iterable[float]) -> float:
    """In nats: 0 when the model is certain, log(6) when it has no idea among the six marks."""
    return -sum(p * math.log(p) for p in probabilities if p > 0)


@dataclass(frozen=True)
class StreamPolicy:
    """When a word of the stream is decided: once ``lookahead`` words follow it; earlier, unless
    ``fixed``, when its mark entropy is under ``entropy_threshold`` and at least ``EARLIEST`` word
    follows it; and, with ``max_delay_ms``, no later than that after it: by the stream's own clock
    when the words come with times (a word is due once a newer word's end is ``max_delay_ms`` past
    its end), by the wall clock since it was fed otherwise."""

    lookahead: int = DEFAULT_LOOKAHEAD
    fixed: bool = False
    entropy_threshold: float = ENTROPY_THRESHOLD
    max_delay_ms: float | None = None


class StreamPunctuator:
    """Feed words (``feed``), get back the words decided, in order, each exactly once; ``flush``
    at the end of the stream decides the rest. When a word is decided is the ``policy``'s choice
    (``StreamPolicy``); each new word re-reads the newest words within ``context_tokens``.
    ``expire`` decides the words whose wall-clock deadline has passed while no word came (the
    command calls it when its input is silent), timed or not. Words are given in the order
    spoken; times in seconds.
    """

    def __init__(
        self,
        punctuator: Punctuator | None = None,
        language: str = "en",
        policy: StreamPolicy = StreamPolicy(),
        context_tokens: int = CONTEXT_TOKENS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        lookahead, max_delay_ms = policy.lookahead, policy.max_delay_ms
        if not 0 <= lookahead <= MAX_LOOKAHEAD:
            raise ValueError(f"lookahead {lookahead}: must be 0 to {MAX_LOOKAHEAD}")
        if context_tokens < MIN_CONTEXT_TOKENS:
            raise ValueError(f"context of {context_tokens} sub-tokens: must be {MIN_CONTEXT_TOKENS} or more")
        self.punctuator = punctuator or Punctuator()
        model = self.punctuator.load()
        self.language = language
        self.lookahead = lookahead
        self.threshold = None if policy.fixed else policy.entropy_threshold
        self.max_delay = None if max_delay_ms is None else max_delay_ms / 1000
        # One model window holds the whole context, so it is read once per word.
        most = model.settings.window_tokens - 2
        if context_tokens > most and context_tokens != CONTEXT_TOKENS:
            raise StreamContextError(f"--context {context_tokens}: the model reads {most} sub-tokens at most")
        self.context_tokens = min(context_tokens, most)
        self.clock = clock
        self._tokenizer, self._special = model.tokenizer, model.special
        self._entries: deque[_Entry] = deque()
        self._count = 0
        self._stream_time: float | None = None  # the latest word time seen
        self._sentence_start = True
        self.reading: WindowReading | None = None

    @property
    def waiting(self) -> int:
        """Words fed and not yet decided."""
        return sum(1 for e in self._entries if not e.decided)

    def feed(self, word: str, start: float | None = None, end: float | None = None) -> list[StreamWord]:
        """Add the next word (times in seconds, if known); the words this decides, in order."""
        return self.feed_many([(word, start, end)])

    def feed_many(self, words: Sequence[tuple[str, float | None, float | None]]) -> list[StreamWord]:
        """Add words that arrived together (a recogniser's segment): one model run reads them all,
        rather than one per word, and each is decided as if they had come one by one and been
        read only at the last. A word that cannot be read refuses them all."""
        entries = [
            self._entry(word, start, end, self._count + n) for n, (word, start, end) in enumerate(words)
        ]
        if not entries:
            return []
        for entry in entries:
            if self._entries:
                _settle_gap(self._entries, entry)
            self._entries.append(entry)
            self._count += 1
            for given in (entry.start, entry.end):
                if given is not None:
                    self._stream_time = given if self._stream_time is None else max(self._stream_time, given)
        self.reading = self._read_window()
        decided = self._decide(self._why_now)
        self._forget_old()
        return decided

    def expire(self) -> list[StreamWord]:
        """The words fed at least ``max_delay_ms`` ago by the wall clock, decided now."""
        delay = self.max_delay
        if delay is None:
            return []
        now = self.clock()
        return self._decide(lambda e: DEADLINE if now - e.arrived >= delay else None)

    def next_deadline(self) -> float | None:
        """Seconds of wall clock until ``expire`` has a word to decide; None without a deadline."""
        first = next((e for e in self._entries if not e.decided), None)
        if self.max_delay is None or first is None:
            return None
        return max(0.0, first.arrived + self.max_delay - self.clock())

    def flush(self) -> list[StreamWord]:
        """The end of the stream: every waiting word, decided."""
        reading, last = self.reading, self._entries[-1].index if self._entries else None
        if last is not None and (reading is None or last >= reading.first + len(reading.marks)):
            # Words fed without a reading (a read cut short by Ctrl+C): read them now.
            self.reading = self._read_window()
        decided = self._decide(lambda e: END)
        self._forget_old()
        return decided

    # --- one word in ------------------------------------------------------------------------

    def _entry(self, word: str, start: float | None, end: float | None, index: int) -> _Entry:
        from app.ml.windows import encode_words

        token = word.strip()
        if not token or any(c.isspace() for c in token):
            raise StreamInputError(f"{word!r}: give one word at a time")
        prefix, text, trailing = split_token(token)
        if not text:  # a symbol standing alone is read as a word
            prefix, text, trailing = "", token, ""
        model_text = model_word(Word(text))
        tokens = len(encode_words(self._tokenizer, [model_text], self._special.unknown).ids)
        return _Entry(index, prefix, text, trailing, model_text, tokens, start, end, self.clock())

    # --- reading and deciding ---------------------------------------------------------------

    def _window(self) -> list[_Entry]:
        """The newest words within ``context_tokens``; all waiting words whatever their length."""
        window: list[_Entry] = []
        tokens = 0
        for entry in reversed(self._entries):
            if entry.decided and tokens + entry.tokens > self.context_tokens:
                break
            window.append(entry)
            tokens += entry.tokens
        window.reverse()
        return window

    def _read_window(self) -> WindowReading:
        window = self._window()
        vectors = [e.gap for e in window]
        evidence = None
        if any(v is not None for v in vectors):
            kinds = [Evidence.TEXT if v is None else Evidence.TIMING for v in vectors]
            evidence = GapEvidence(vectors, kinds)
        marks, casing = self.punctuator.probabilities([e.model_text for e in window], self.language, evidence)
        return WindowReading(window[0].index, marks, casing)

    def _why_now(self, entry: _Entry) -> str | None:
        """Why ``entry`` is decided after the newest word, or None while it waits."""
        following = self._count - 1 - entry.index
        if following >= self.lookahead:
            return LOOKAHEAD
        reading, threshold = self.reading, self.threshold
        if (
            threshold is not None
            and reading is not None
            and following >= EARLIEST
            and entropy(reading.marks_of(entry.index)) < threshold
        ):
            return CONFIDENT
        if self.max_delay is not None:
            if entry.end is not None and self._stream_time is not None:
                due = self._stream_time - entry.end >= self.max_delay
            else:
                due = self.clock() - entry.arrived >= self.max_delay
            if due:
                return DEADLINE
        return None

    def _decide(self, why: Callable[[_Entry], str | None]) -> list[StreamWord]:
        """The waiting words decided, from the oldest on, while ``why`` has a reason for each:
        words come out in order, so a word waits for the ones before it."""
        decided: list[StreamWord] = []
        for entry in self._entries:
            if entry.decided:
                continue
            reason = why(entry)
            if reason is None:
                break
            decided.append(self._finish(entry, reason))
        return decided

    def _finish(self, entry: _Entry, reason: str) -> StreamWord:
        assert self.reading is not None  # every word has been read once it is fed
        marks = self.reading.marks_of(entry.index)
        best, mark = model_mark(marks, self.language)
        if has_protected_punctuation(entry.trailing):
            trailing = entry.trailing  # an ellipsis or a dash given with the word stays the writer's
        else:
            trailing = set_mark(entry.trailing, mark, self.language)
        capital = written_capital(
            Word(entry.text),
            head_casing(self.reading.casing_of(entry.index)),
            self._sentence_start,
            self.language,
        )
        text = apply_casing(entry.text, capital) if capital is not None else entry.text
        # An abbreviation's full stop ("e.g.", "the U.S. team") starts no sentence.
        self._sentence_start = model_class(trailing) in SENTENCE_END_CLASSES and not is_abbreviation(
            text + trailing
        )
        entry.decided = True
        return StreamWord(
            entry.index,
            entry.prefix + text,
            trailing,
            float(marks[best]),
            entry.start,
            entry.end,
            self._count - 1 - entry.index,
            reason,
        )

    def _forget_old(self) -> None:
        """Decided words beyond the window and the rate context of its gaps are dropped."""
        keep = max(len(self._window()), RATE_CONTEXT + 2)
        while len(self._entries) > keep and self._entries[0].decided:
            self._entries.popleft()


def _settle_gap(entries: deque[_Entry], newest: _Entry) -> None:
    """The evidence of the gap before ``newest``, known now that its start is, from the words
    batch mode uses for it (the speaking rate of the words before, and the pause)."""
    # The last few entries only: the same work per word however long the queue.
    span = [*reversed(list(itertools.islice(reversed(entries), RATE_CONTEXT + 1))), newest]
    if span[-2].end is None or newest.start is None:
        return
    vectors = timed_gaps([e.model_text for e in span], [e.start for e in span], [e.end for e in span])
    span[-2].gap = vectors[-2]


# --- JSON lines ------------------------------------------------------------------------------


def run_json_lines(
    stream: StreamPunctuator,
    source: IO[bytes],
    sink: IO[bytes],
    warn: Callable[[str], None],
) -> int:
    """``punctum stream``: JSON lines of words from ``source``, JSON lines of decided words to
    ``sink``, each written and flushed as soon as it is decided. A line that cannot be read gets
    one line from ``warn`` and is skipped. Returns how many lines were skipped."""
    lines: queue.Queue[bytes | None] = queue.Queue()
    threading.Thread(
        target=read_lines, args=(source, lines), name="punctum-stream-input", daemon=True
    ).start()

    def write(words: list[StreamWord]) -> None:
        for word in words:
            sink.write(json.dumps(word.as_json(), ensure_ascii=False).encode("utf-8") + b"\n")
            sink.flush()

    skipped = 0
    number = 0
    try:
        while True:
            try:
                raw = lines.get(timeout=stream.next_deadline())
            except queue.Empty:  # the input was silent until a waiting word's deadline
                write(stream.expire())
                continue
            if raw is None:
                break
            number += 1
            try:
                if raw is OVERLONG:
                    raise StreamInputError(f"longer than {MAX_LINE_BYTES:,} bytes")
                text = raw.decode("utf-8").lstrip("\ufeff").strip()
                if not text:
                    continue
                write(stream.feed_many(parse_line(text)))
            except UnicodeDecodeError:
                skipped += 1
                warn(f"line {number}: not UTF-8 text; skipped")
            except StreamInputError as error:
                skipped += 1
                warn(f"line {number}: {error}; skipped")
    except KeyboardInterrupt:
        # Ctrl+C: what waits is written as decided at the end, then the caller says so.
        write(stream.flush())
        raise
    write(stream.flush())
    return skipped
