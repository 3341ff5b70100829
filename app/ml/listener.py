"""Marks heard: the recogniser's decoder forced along the captions' own words.

Whisper learned where marks go from 680,000 hours of speech. Given a window of audio (one encoder
pass) and the captions' words as the text it "transcribed", the decoder's distribution at each word
gap says how likely a comma, a full stop, a question mark... is against the next word, from what it
hears and what came before. No word is ever changed: the words are given, only marks are read.

Whisper follows the style of the text it is given: after an unpunctuated prefix it predicts few
marks (a single unmarked pass read 44 F1 on LJSpeech against 71 for marks written in as it goes).
So the forced text carries the text model's marks and capitals. One pass: a second that wrote the
marks combined from the first read the same on LJSpeech (73.1) and 0.7 F1 more on ``audio/real``
(71.8 against 71.1) for twice the decoding.

Windows (``listening_windows``) are independent of each other, so two are heard at once, each on a
core: the decoder's steps are too small to keep two cores busy with one window. Each window has its
own verdict: where the forced words are far less likely than matching speech ever makes them, the
audio does not say them and that window is not heard.

Audio arrives decoded (16 kHz mono float32); this module never opens media.
"""

from __future__ import annotations

import math
import os
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app.core.errors import PunctumError, error_line
from app.core.marks import MODEL_MARKS, SENTENCE_END_CLASSES, set_mark
from app.core.memory import cap_malloc_arenas
from app.core.model import Casing, apply_casing, casing_of
from app.ml.inference import softmax
from app.ml.listening_windows import (
    BACKWARDS_SECONDS,
    Window,
    counted,
    plan_windows,
    spread,
    verdict,
    window_samples,
)
from app.ml.whisper_model import COMPUTE_TYPE, install_hint, load_tokenizer, whisper_model
from app.ml.word_alignment import heard_word_times, monotonic

SAMPLE_RATE = 16_000
#: The decoder holds 448 positions and CTranslate2 counts a prompt's tokens twice against that:
#: the forced words with their marks (at most 160 would fit), and the end of the text before as
#: context. Windows are planned to 144, the budget the figures were measured with.
MAX_FORCED_TOKENS = 144
CONTEXT_TOKENS = 48
#: Below this mean log-probability per forced word token, the audio does not say the captions' words
#: (the wrong video): on matching speech it is about -0.5 (LJSpeech, the real-speech set), on
#: another recording's audio below -5.
MIN_WORD_LOG_PROB = -3.0
#: Windows heard before the file is judged: when none of these says the captions' words, the rest is
#: not listened to.
FIRST_VERDICT = 2
#: Word forms whose tokens are kept between windows and files.
_KEPT_FORMS = 50_000
#: Languages whose marks the listener cannot read: written without spaces between words (its forced
#: text joins words with spaces), or with marks of their own that its candidates (``,`` ``.`` ``?``
#: ``!`` ``:``) do not cover (Arabic script, Greek's question mark, the danda, Armenian, Ethiopic).
UNHEARD_LANGUAGES = frozenset(
    {"zh", "yue", "ja", "th", "lo", "km", "my", "bo", "ar", "fa", "ur", "ps", "sd", "ug"}
    | {"el", "hi", "mr", "ne", "sa", "bn", "as", "hy", "am"}
)


class ListenerError(PunctumError):
    """The recogniser cannot be loaded for listening."""


@dataclass(frozen=True)
class Listening:
    """What to listen along. Per word: its text as the captions write it, its time in seconds
    (its own where the captions or a timing file give one, else its cue's), its cue, whether the
    text model writes it with a capital, and the mark (``MODEL_MARKS`` index) the text model puts
    after it, which the first pass writes in."""

    words: Sequence[str]
    times: Sequence[tuple[float, float]]
    cues: Sequence[int]
    language: str
    capitals: Sequence[bool]
    first_marks: Sequence[int]


@dataclass(frozen=True)
class Hearing:
    """What the listener read. ``marks``: per gap (the gap after each word), a distribution over
    ``MODEL_MARKS``, or None where the gap was not heard. ``word_times``: per word, where it is
    said (seconds), or None where it was not heard."""

    marks: list[list[float] | None]
    windows: int  # windows heard
    warnings: list[str] = field(default_factory=list)
    word_times: list[tuple[float, float] | None] = field(default_factory=list)


@dataclass
class _Heard:
    """One window's reading: its gaps' distributions, whether the audio says its words, or why it
    could not be heard."""

    marks: dict[int, list[float]] = field(default_factory=dict)
    matches: bool = True
    times: dict[int, tuple[float, float]] = field(default_factory=dict)
    failure: str | None = None


class Listener:
    """One loaded recogniser for listening, reused for every file a worker reads."""

    def __init__(
        self,
        model: str | None = None,
        threads: int = 0,
        compute_type: str = COMPUTE_TYPE,
        word_times: bool = True,
    ) -> None:
        try:
            import ctranslate2
            from faster_whisper.feature_extractor import FeatureExtractor
        except ImportError:
            raise ListenerError(f"listening needs faster-whisper: {install_hint()}") from None
        location = whisper_model(model)
        cap_malloc_arenas()  # a worker process started elsewhere than app.launch
        cores = threads or os.cpu_count() or 1
        self.parallel = 2 if cores >= 2 else 1  # windows heard at once, a core or more each
        try:
            if not Path(location).is_dir():  # a Hugging Face id, for users who have the hub
                from faster_whisper.utils import download_model

                location = download_model(location)
            self._model: Any = ctranslate2.models.Whisper(
                location,
                device="cpu",
                compute_type=compute_type,
                inter_threads=self.parallel,
                intra_threads=max(1, cores // self.parallel),
            )
            self._tokenizer: Any = load_tokenizer(location)
        except Exception as error:  # CTranslate2 and tokenizers raise their own kinds
            raise ListenerError(
                f"the speech recogniser {location} cannot be loaded: {error_line(error)}"
            ) from None
        self._storage = ctranslate2.StorageView
        self.word_times = word_times  # whether windows also align their words to the audio
        self._encoded: dict[str, list[int]] = {}  # tokens of each word form, shared by the windows
        self._lock = threading.Lock()
        self._encoding = threading.Lock()
        self._features = FeatureExtractor(feature_size=self._model.n_mels)
        self._end_of_text = self._token("<|endoftext|>")
        self._mark_tokens = self._mark_candidates()

    def _token(self, text: str) -> int:
        found = self._tokenizer.token_to_id(text)
        if found is None:
            raise ListenerError(f"the recogniser's tokenizer lacks {text}")
        return int(found)

    def _encode(self, text: str) -> list[int]:
        with self._lock:
            if text not in self._encoded:
                if len(self._encoded) >= _KEPT_FORMS:  # a worker reads file after file
                    self._encoded.clear()
                self._encoded[text] = list(self._tokenizer.encode(text, add_special_tokens=False).ids)
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
        candidates: list[list[int]] = []
        for mark in MODEL_MARKS[1:]:
            ids = [encoded[0] for form in forms[mark] if len(encoded := self._encode(form)) == 1]
            candidates.append(sorted(set(ids)))
        return candidates

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages the recogniser knows, as its tokenizer names them (``<|en|>``...)."""
        if not self._model.is_multilingual:
            return ("en",)
        first, last = self._token("<|startoftranscript|>"), self._token("<|translate|>")
        return tuple(self._tokenizer.id_to_token(i)[2:-2] for i in range(first + 1, last))

    def read(
        self,
        listening: Listening,
        audio: np.ndarray,
        progress: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
        with_times: bool | None = None,
    ) -> Hearing:
        """The marks heard at each gap of ``listening.words`` in ``audio`` (16 kHz mono), and where
        each word is said unless ``with_times`` is False (the listener's own setting unless given)."""
        count = len(listening.words)
        marks: list[list[float] | None] = [None] * count
        word_times: list[tuple[float, float] | None] = [None] * count
        base = listening.language.lower().replace("_", "-").split("-")[0]
        if base not in self.languages or base in UNHEARD_LANGUAGES:
            why = "cannot read the marks of" if base in self.languages else "does not know"
            warning = f"the recogniser {why} the language {listening.language!r}: not listened to"
            return Hearing(marks, 0, [warning], word_times)
        tokens = [self._word_tokens(listening, index, listening.first_marks) for index in range(count)]
        duration = len(audio) / SAMPLE_RATE
        times = spread(listening.times, listening.cues)
        plan = plan_windows(times, listening.cues, [len(t) for t in tokens], duration, MAX_FORCED_TOKENS)
        warnings: list[str] = []
        if plan.past_the_end:
            warnings.append(
                f"the captions run past the end of the media ({duration:.1f} s): "
                f"{plan.past_the_end} words there were not listened to"
            )
        if plan.too_dense:
            warnings.append(
                f"the captions put {counted(plan.too_dense, 'word')} where the audio has time for far fewer"
                " (are these its captions?): not listened to there"
            )
        if plan.too_long:
            warnings.append(
                f"{counted(plan.too_long, 'word')} longer than the recogniser can follow: not listened to"
            )
        session = _FileListening(self, listening, audio, plan.windows, times, tokens, base)
        session.word_times = self.word_times if with_times is None else with_times
        heard: list[_Heard] = []
        with ThreadPoolExecutor(self.parallel, thread_name_prefix="listener") as pool:
            # Windows start in order, at most one per worker, so the file's verdict comes early.
            in_flight: deque[tuple[Window, Future[_Heard]]] = deque()
            queue = deque(enumerate(plan.windows))
            while queue or in_flight:
                while queue and len(in_flight) < self.parallel:
                    number, window = queue.popleft()
                    in_flight.append((window, pool.submit(session.hear, number)))
                window, future = in_flight.popleft()
                if cancelled is not None and cancelled():
                    raise InterruptedError("listening cancelled")
                result = future.result()
                heard.append(result)
                _merge(marks, word_times, result)
                if len(heard) == FIRST_VERDICT and not any(h.matches for h in heard):
                    queue.clear()  # the wrong video: told before the whole file is heard
                if progress is not None and count:
                    progress(min(1.0, window.stop / count))
        warnings += verdict(plan.windows, [(h.matches, h.failure) for h in heard])
        heard_windows = sum(1 for h in heard if h.matches and not h.failure)
        return Hearing(marks, heard_windows, warnings, monotonic(word_times, BACKWARDS_SECONDS))

    def _encode_window(self, audio: np.ndarray, window: Window) -> Any:
        first, last = window_samples(window, len(audio), SAMPLE_RATE)
        features = self._features(audio[first:last].astype(np.float32, copy=False))[:, :3000]
        if features.shape[1] < 3000:
            features = np.pad(features, ((0, 0), (0, 3000 - features.shape[1])))
        with self._encoding:  # one encoder pass at a time: each holds some 140 MB while it runs
            return self._model.encode(
                self._storage.from_array(np.ascontiguousarray(features[None])), to_cpu=True
            )

    def _form(self, listening: Listening, index: int, sentence_start: bool) -> list[int]:
        """Word ``index`` as forced: as the captions write it, with a capital where the text model
        gives it one or a sentence starts, unless the captions gave it capitals of their own."""
        word = listening.words[index]
        if casing_of(word) is Casing.LOWER and (sentence_start or listening.capitals[index]):
            word = apply_casing(word, Casing.CAPITALISED)
        return self._encode(" " + word)

    def _mark(self, listening: Listening, mark: int) -> list[int]:
        return self._encode(set_mark("", MODEL_MARKS[mark], listening.language)) if mark else []

    def _word_tokens(self, listening: Listening, index: int, written: Sequence[int]) -> list[int]:
        """Word ``index`` as forced, with the mark ``written`` after it."""
        sentence_start = index == 0 or written[index - 1] in SENTENCE_END_CLASSES
        return self._form(listening, index, sentence_start) + self._mark(listening, written[index])

    def _forced_text(
        self, listening: Listening, window: Window, written: Sequence[int]
    ) -> tuple[list[int], dict[int, int], list[tuple[int, int]]]:
        """The window's words as tokens with the marks in ``written``; the row whose distribution
        is each gap's (word index -> row); and (row, token) of each word's first token."""
        tokens: list[int] = []
        gaps: dict[int, int] = {}
        firsts: list[tuple[int, int]] = []
        for index in range(window.first, window.stop):
            sentence_start = index == 0 or written[index - 1] in SENTENCE_END_CLASSES
            pieces = self._form(listening, index, sentence_start)
            firsts.append((len(tokens), pieces[0]))
            tokens += pieces
            gaps[index] = len(tokens)
            tokens += self._mark(listening, written[index])
        return tokens, gaps, firsts

    def _logits(self, encoded: Any, prefix: list[int], forced: list[int]) -> Sequence[Any]:
        """The decoder's logits at each forced position (row k: the token after the prefix and the
        first k forced tokens), one call, and not a step more: CTranslate2 returns
        ``min(max_length // 2, max_length - len(prefix) + 1)`` rows for such a prompt (measured),
        and past the forced text the decoder would go on transcribing by itself. The rows stay
        CTranslate2's, each read when needed: a whole window's would be some 30 MB as one array."""
        rows = len(forced) + 1
        result = self._model.generate(
            encoded,
            [prefix + forced],
            beam_size=1,
            max_length=max(2 * rows, rows + len(prefix) - 1),
            return_logits_vocab=True,
            suppress_blank=False,
            suppress_tokens=[],
        )[0]
        logits: Sequence[Any] = result.logits[0]
        if len(logits) < rows:
            raise ValueError(f"the decoder gave {len(logits)} of {rows} rows")
        return logits

    def _gap_marks(
        self, rows: Sequence[Any], listening: Listening, window: Window, gaps: dict[int, int]
    ) -> dict[int, list[float]]:
        """Each gap's distribution over ``MODEL_MARKS``: going on to the next word (or the end of
        the text) against each mark. Only the few columns read are taken from a row: the
        normaliser of the whole row cancels out."""
        heard: dict[int, list[float]] = {}
        count = len(listening.words)
        for index, row in gaps.items():
            logits = np.asarray(rows[row], dtype=np.float32)
            if index + 1 < count:
                go_on = [self._form(listening, index + 1, sentence_start=False)[0]]
                if index + 1 == window.stop:  # the audio may end before the next word is heard
                    go_on.append(self._end_of_text)
            else:
                go_on = [self._end_of_text]
            masses = [_log_sum(logits, go_on)] + [_log_sum(logits, ids) for ids in self._mark_tokens]
            heard[index] = softmax(np.asarray(masses)).tolist()
        return heard


class _FileListening:
    """One file's listening, window by window, on the listener's workers: each window forces the
    text model's marks, with the end of the text before it as Whisper's own context."""

    def __init__(
        self,
        listener: Listener,
        listening: Listening,
        audio: np.ndarray,
        windows: list[Window],
        times: Sequence[tuple[float, float]],
        tokens: list[list[int]],
        base: str,
    ) -> None:
        self.listener, self.listening, self.audio = listener, listening, audio
        self.windows, self.times, self.tokens = windows, times, tokens  # tokens: each word as forced
        self.word_times = listener.word_times  # whether each window also places its words
        self.start = [
            listener._token(t)
            for t in ("<|startoftranscript|>", f"<|{base}|>", "<|transcribe|>", "<|notimestamps|>")
        ]

    def prefix(self, window: Window) -> list[int]:
        """The decoder's prompt before the window's words: the end of the text before it, then the
        start of a transcript."""
        index = window.first
        if index and self.times[index - 1][0] > window.start + BACKWARDS_SECONDS:
            return self.start  # the text before is said later: no context for what is heard here
        context: list[int] = []
        while index > 0 and len(context) < CONTEXT_TOKENS:
            index -= 1
            context = self.tokens[index] + context
        if not context:
            return self.start
        return [self.listener._token("<|startofprev|>"), *context[-CONTEXT_TOKENS:], *self.start]

    def hear(self, number: int) -> _Heard:
        """Window ``number``: an encoder pass and the decoder along its words."""
        window, listener, listening = self.windows[number], self.listener, self.listening
        try:
            encoded = listener._encode_window(self.audio, window)
            forced, gaps, firsts = listener._forced_text(listening, window, listening.first_marks)
            rows = listener._logits(encoded, self.prefix(window), forced)
        except (RuntimeError, ValueError) as error:  # CTranslate2's own failures
            return _Heard(failure=error_line(error))
        if float(np.mean(_normalised(rows, firsts))) < MIN_WORD_LOG_PROB:
            return _Heard(matches=False)
        spans = [(row, gaps[window.first + n]) for n, (row, _) in enumerate(firsts)]
        times = self.times_heard(encoded, window, forced, spans)
        return _Heard(listener._gap_marks(rows, listening, window, gaps), times=times)

    def times_heard(
        self, encoded: Any, window: Window, forced: list[int], spans: list[tuple[int, int]]
    ) -> dict[int, tuple[float, float]]:
        """Where the window's words are said, aligned along the forced text (``spans``: each word's
        own tokens in it); none if the aligner fails: the marks heard still hold."""
        if not self.word_times:
            return {}
        first, last = window_samples(window, len(self.audio), SAMPLE_RATE)
        try:
            times = heard_word_times(
                self.listener._model,
                encoded,
                self.start,
                forced,
                spans,
                self.audio[first:last],
                first / SAMPLE_RATE,
            )
        except (RuntimeError, ValueError):  # CTranslate2's own failures
            return {}
        return dict(zip(range(window.first, window.stop), times, strict=True))


def _normalised(rows: Sequence[Any], firsts: list[tuple[int, int]]) -> list[float]:
    """The log-probability of each word's first token where it is forced."""
    values: list[float] = []
    for row, token in firsts:
        logits = np.asarray(rows[row], dtype=np.float32)
        top = float(logits.max())
        values.append(float(logits[token]) - top - math.log(float(np.exp(logits - top).sum())))
    return values


def _merge(marks: list[list[float] | None], times: list[tuple[float, float] | None], heard: _Heard) -> None:
    """A window's reading into the file's, where its audio says its words."""
    if heard.matches and not heard.failure:
        for index, distribution in heard.marks.items():
            marks[index] = distribution
        for index, said in heard.times.items():
            times[index] = said


def _log_sum(log_probs: np.ndarray, tokens: list[int]) -> float:
    if not tokens:
        return -math.inf
    chosen = log_probs[tokens]
    top = float(chosen.max())
    return top + math.log(float(np.exp(chosen - top).sum()))
