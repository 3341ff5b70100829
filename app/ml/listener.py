"""Marks heard: the recogniser's decoder forced along the captions' own words.

Whisper learned where marks go from 680,000 hours of speech. Given a window of audio (one encoder
pass) and the captions' words as the text it "transcribed", the decoder's distribution at each word
gap says how likely a comma, a full stop, a question mark... is against the next word, from what it
hears and what came before. No word is ever changed: the words are given, only marks are read.

Whisper follows the style of the text it is given: after an unpunctuated prefix it predicts few
marks (a single unmarked pass read 44 F1 on LJSpeech against 71 for marks written in as it goes).
So the forced text carries marks: a first pass writes the text model's marks and capitals, and a
second pass writes the combined reading of the first (``combine`` in ``read``), each pass one
decoder call per window reading every gap at once.

Audio arrives decoded (16 kHz mono float32); this module never opens media.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app.core.errors import PunctumError, error_line
from app.core.marks import MODEL_MARKS, SENTENCE_END_CLASSES, set_mark
from app.core.model import Casing, apply_casing
from app.ml.inference import log_softmax, softmax
from app.ml.whisper_model import COMPUTE_TYPE, install_hint, load_tokenizer, whisper_model

SAMPLE_RATE = 16_000
#: Whisper reads 30 s at a time; windows of whole cues stay under this, with room for margins.
WINDOW_SECONDS = 29.0
#: Audio taken before a window's first cue and after its last: caption timings are loose.
LEAD_SECONDS, TAIL_SECONDS = 0.3, 0.6
#: The decoder holds 448 positions and CTranslate2 counts a prompt's tokens twice against that:
#: the forced words with their marks, and the end of the window before as context.
MAX_FORCED_TOKENS = 160
CONTEXT_TOKENS = 48
#: Below this mean log-probability per forced word token, the audio does not say the captions' words
#: (the wrong video): on matching speech it is about -0.5 (LJSpeech, the real-speech set), on
#: another recording's audio below -5.
MIN_WORD_LOG_PROB = -3.0

Combine = Callable[[int, list[float]], list[float]]  # (gap, heard distribution) -> marks to write


class ListenerError(PunctumError):
    """The recogniser cannot be loaded for listening."""


@dataclass(frozen=True)
class Hearing:
    """What the listener read. ``marks``: per gap (the gap after each word), a distribution over
    ``MODEL_MARKS``, or None where the gap was not heard (no audio there, or the window failed)."""

    marks: list[list[float] | None]
    word_log_prob: float | None  # mean log-probability of the forced words' tokens; None: nothing heard
    windows: int
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Window:
    first: int  # index of its first word
    stop: int  # one past its last word
    start: float  # seconds into the audio
    end: float


class Listener:
    """One loaded recogniser for listening, reused for every file a worker reads."""

    def __init__(self, model: str | None = None, threads: int = 0, compute_type: str = COMPUTE_TYPE) -> None:
        try:
            import ctranslate2
            from faster_whisper.feature_extractor import FeatureExtractor
        except ImportError:
            raise ListenerError(f"listening needs faster-whisper: {install_hint()}") from None
        location = whisper_model(model)
        try:
            if not Path(location).is_dir():  # a Hugging Face id, for users who have the hub
                from faster_whisper.utils import download_model

                location = download_model(location)
            self._model: Any = ctranslate2.models.Whisper(
                location, device="cpu", compute_type=compute_type, intra_threads=threads
            )
            self._tokenizer: Any = load_tokenizer(location)
        except Exception as error:  # CTranslate2 and tokenizers raise their own kinds
            raise ListenerError(
                f"the speech recogniser {location} cannot be loaded: {error_line(error)}"
            ) from None
        self._storage = ctranslate2.StorageView
        self._features = FeatureExtractor(feature_size=self._model.n_mels)
        self._end_of_text = self._token("<|endoftext|>")
        self._mark_tokens = self._mark_candidates()

    def _token(self, text: str) -> int:
        found = self._tokenizer.token_to_id(text)
        if found is None:
            raise ListenerError(f"the recogniser's tokenizer lacks {text}")
        return int(found)

    def _encode(self, text: str) -> list[int]:
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def _mark_candidates(self) -> list[list[int]]:
        """For each mark class, the single tokens that write it (with French spacing too)."""
        forms: dict[str, tuple[str, ...]] = {
            ",": (",", " ,"),
            ".": (".", " .", ";", " ;", "..."),
            "?": ("?", " ?"),
            "!": ("!", " !"),
            ":": (":", " :"),
        }
        candidates: list[list[int]] = []
        for mark in MODEL_MARKS[1:]:
            ids = [encoded[0] for form in forms[mark] if len(encoded := self._encode(form)) == 1]
            candidates.append(sorted(set(ids)))
        return candidates

    @property
    def languages(self) -> tuple[str, ...]:
        from faster_whisper.tokenizer import _LANGUAGE_CODES

        return tuple(_LANGUAGE_CODES) if self._model.is_multilingual else ("en",)

    def read(
        self,
        words: Sequence[str],
        times: Sequence[tuple[float, float]],
        cues: Sequence[int],
        audio: np.ndarray,
        language: str,
        capitals: Sequence[bool] | None = None,
        first_marks: Sequence[int] | None = None,
        combine: Combine | None = None,
        progress: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> Hearing:
        """The marks heard at each gap of ``words`` (times in seconds, the cue each word is in).

        ``capitals``: words the text model writes with a capital (names, "I"); ``first_marks``: the
        marks (indices into ``MODEL_MARKS``) written into the first pass's forced text (the text
        model's); ``combine``: with it, a second pass writes the marks it makes of each heard gap.
        """
        count = len(words)
        marks: list[list[float] | None] = [None] * count
        warnings: list[str] = []
        base = language.lower().replace("_", "-").split("-")[0]
        if base not in self.languages:
            return Hearing(
                marks, None, 0, [f"the recogniser does not know the language {language!r}: not listened to"]
            )
        duration = len(audio) / SAMPLE_RATE
        windows, unheard = _plan_windows(times, cues, duration)
        if unheard:
            warnings.append(
                f"the captions run past the end of the media ({duration:.1f} s): "
                f"{unheard} words there were not listened to"
            )
        start = [
            self._token(t)
            for t in ("<|startoftranscript|>", f"<|{base}|>", "<|transcribe|>", "<|notimestamps|>")
        ]
        context: list[int] = []  # the previous window's text, marks written: Whisper's own conditioning
        written = list(first_marks) if first_marks is not None else [0] * count
        capital = list(capitals) if capitals is not None else [False] * count
        passes = 2 if combine is not None else 1
        log_probs: list[float] = []
        too_long = 0
        pending = list(reversed(windows))
        heard_windows = 0
        while pending:
            window = pending.pop()
            if cancelled is not None and cancelled():
                raise InterruptedError("listening cancelled")
            forced, gaps, word_tokens = self._forced_text(words, window, written, capital, language)
            if len(forced) > MAX_FORCED_TOKENS:
                halves = _halves(window)  # more words than the decoder holds: heard in two
                if halves is None:
                    too_long += 1
                else:
                    pending += reversed(halves)
                continue
            encoded = self._encode_window(audio, window)
            prefix = (
                [self._token("<|startofprev|>"), *context[-CONTEXT_TOKENS:], *start] if context else start
            )
            for done in range(passes):
                if done:  # the marks the first pass chose, written in
                    forced, gaps, word_tokens = self._forced_text(words, window, written, capital, language)
                    if len(forced) > MAX_FORCED_TOKENS:
                        break
                rows = self._logits(encoded, prefix + forced, len(forced) + 1)
                if rows is None:
                    break
                heard = self._gap_marks(rows, words, window, gaps, capital, count, language)
                for index, distribution in heard.items():
                    marks[index] = distribution
                    if done + 1 < passes and combine is not None:
                        chosen = combine(index, distribution)
                        written[index] = int(np.argmax(chosen))
                if done == 0:
                    log_probs += [float(rows[row, token]) for row, token in word_tokens]
            # The window as last written (later passes write no marks), for the next one's context.
            context = forced
            heard_windows += 1
            if progress is not None and count:
                progress(min(1.0, window.stop / count))
        if too_long:
            warnings.append(
                f"{too_long} stretches hold more words than the recogniser can follow: not listened to"
            )
        mean = float(np.mean(log_probs)) if log_probs else None
        return Hearing(marks, mean, heard_windows, warnings)

    def _encode_window(self, audio: np.ndarray, window: _Window) -> Any:
        first = max(0, int((window.start - LEAD_SECONDS) * SAMPLE_RATE))
        last = min(len(audio), int((window.end + TAIL_SECONDS) * SAMPLE_RATE), first + 30 * SAMPLE_RATE)
        features = self._features(audio[first:last].astype(np.float32, copy=False))[:, :3000]
        if features.shape[1] < 3000:
            features = np.pad(features, ((0, 0), (0, 3000 - features.shape[1])))
        return self._model.encode(self._storage.from_array(np.ascontiguousarray(features[None])), to_cpu=True)

    def _forced_text(
        self, words: Sequence[str], window: _Window, written: list[int], capital: list[bool], language: str
    ) -> tuple[list[int], dict[int, int], list[tuple[int, int]]]:
        """The window's words as tokens with the marks in ``written``; the row whose distribution
        is each gap's (word index -> row); and (row, token) of each word's first token."""
        tokens: list[int] = []
        gaps: dict[int, int] = {}
        firsts: list[tuple[int, int]] = []
        for index in range(window.first, window.stop):
            starts_sentence = index == 0 or written[index - 1] in SENTENCE_END_CLASSES
            form = (
                apply_casing(words[index], Casing.CAPITALISED)
                if starts_sentence or capital[index]
                else words[index]
            )
            pieces = self._encode(" " + form)
            firsts.append((len(tokens), pieces[0]))
            tokens += pieces
            gaps[index] = len(tokens)
            mark = MODEL_MARKS[written[index]]
            if mark:
                tokens += self._encode(set_mark("", mark, language))
        return tokens, gaps, firsts

    def _logits(self, encoded: Any, prompt: list[int], rows: int) -> np.ndarray | None:
        """The decoder's log-probabilities at each forced position (row k: the token after the
        prompt's first ``len(prefix) + k`` tokens), one call."""
        result = self._model.generate(
            encoded,
            [prompt],
            beam_size=1,
            max_length=2 * len(prompt) + 2,
            return_logits_vocab=True,
            suppress_blank=False,
            suppress_tokens=[],
        )[0]
        logits = np.asarray(result.logits[0], dtype=np.float32)
        return log_softmax(logits) if logits.shape[0] >= rows else None

    def _gap_marks(
        self,
        rows: np.ndarray,
        words: Sequence[str],
        window: _Window,
        gaps: dict[int, int],
        capital: list[bool],
        count: int,
        language: str,
    ) -> dict[int, list[float]]:
        heard: dict[int, list[float]] = {}
        for index, row in gaps.items():
            log_probs = rows[row]
            if index + 1 < count:
                following = words[index + 1]
                form = apply_casing(following, Casing.CAPITALISED) if capital[index + 1] else following
                go_on = [self._encode(" " + form)[0]]
                if index + 1 == window.stop:  # the audio may end before the next word is heard
                    go_on.append(self._end_of_text)
            else:
                go_on = [self._end_of_text]
            masses = [_log_sum(log_probs, go_on)] + [_log_sum(log_probs, ids) for ids in self._mark_tokens]
            heard[index] = softmax(np.asarray(masses)).tolist()
        return heard


def _plan_windows(
    times: Sequence[tuple[float, float]], cues: Sequence[int], duration: float
) -> tuple[list[_Window], int]:
    """Windows of whole cues up to ``WINDOW_SECONDS``; a longer cue is cut between words. Words
    that end after the audio does are left out (their count is returned)."""
    times = _spread(times, cues)
    windows: list[_Window] = []
    heard = [index for index, (start, end) in enumerate(times) if end <= duration + TAIL_SECONDS]
    unheard = len(times) - len(heard)
    first: int | None = None
    for position, index in enumerate(heard):
        if first is None:
            first = index
        following = heard[position + 1] if position + 1 < len(heard) else -1
        if (
            following == index + 1
            and times[following][1] - times[first][0] <= WINDOW_SECONDS
            and (cues[following] == cues[index] or _cue_fits(times, cues, first, following))
        ):
            continue
        windows.append(_Window(first, index + 1, times[first][0], times[index][1]))
        first = None
    return windows, unheard


def _halves(window: _Window) -> tuple[_Window, _Window] | None:
    """A window cut in two between its middle words (times shared out by words); None for one word."""
    size = window.stop - window.first
    if size < 2:
        return None
    middle = window.first + size // 2
    time = window.start + (window.end - window.start) * (middle - window.first) / size
    return _Window(window.first, middle, window.start, time), _Window(middle, window.stop, time, window.end)


def _spread(times: Sequence[tuple[float, float]], cues: Sequence[int]) -> list[tuple[float, float]]:
    """Words that share their cue's times get an even share of it each, in order (a cue longer
    than a window is then cut near where its words are said)."""
    spread = list(times)
    first = 0
    while first < len(times):
        stop = first
        while stop < len(times) and cues[stop] == cues[first] and times[stop] == times[first]:
            stop += 1
        start, end = times[first]
        step = (end - start) / (stop - first)
        for offset in range(stop - first):
            spread[first + offset] = (start + step * offset, start + step * (offset + 1))
        first = stop
    return spread


def _cue_fits(times: Sequence[tuple[float, float]], cues: Sequence[int], first: int, following: int) -> bool:
    """Whether the whole cue that ``following`` opens fits in the window begun at ``first``."""
    last = following
    while last + 1 < len(cues) and cues[last + 1] == cues[following]:
        last += 1
    return times[last][1] - times[first][0] <= WINDOW_SECONDS


def _log_sum(log_probs: np.ndarray, tokens: list[int]) -> float:
    if not tokens:
        return -math.inf
    chosen = log_probs[tokens]
    top = float(chosen.max())
    return top + math.log(float(np.exp(chosen - top).sum()))
