"""Marks heard: the recogniser's decoder forced along the captions' own words.

Whisper learned where marks go from 680,000 hours of speech. Given a window of audio (one encoder
pass) and the captions' words as the text it "transcribed", the decoder's distribution at each word
gap says how likely a comma, a full stop, a question mark... is against the next word, from what it
hears and what came before. No word is ever changed: the words are given, only marks are read.

Whisper follows the style of the text it is given: after an unpunctuated prefix it predicts few
marks (a single unmarked pass read 44 F1 on LJSpeech against 71 for marks written in as it goes).
So the forced text carries marks (``forced_text``), in two passes over each window: the first writes
the text model's marks and capitals, the second the marks combined from the first's reading, each
with the text before as the window before wrote it. Each pass is one call of the decoder over every
forced position (``forced_decoder``: ONNX Runtime, float), the audio's keys and values computed
once for both; CTranslate2 runs the encoder. The second pass is skipped where it would force the
same text. The alignment heads' attention in the last pass places the words
(``word_alignment``).

Windows (``listening_windows``) depend on each other only through that context, so two are heard
at once: a window's encoder pass runs while the window before decodes. Each window has its own
verdict: where the forced words are far less likely than matching speech ever makes them, the
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

from app.core.audio_format import SAMPLE_RATE
from app.core.errors import PunctumError, error_line
from app.ml.forced_decoder import DecoderGraphError, ForcedDecoder, ForcedPass
from app.ml.forced_text import ForcedText, Overlay
from app.ml.forced_text import Listening as Listening  # what read() takes, named with it
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
from app.ml.whisper_model import COMPUTE_TYPE, install_hint, load_tokenizer, loaded_whisper, whisper_model
from app.ml.word_alignment import MEL_FRAMES_PER_SECOND, attention_matrix, heard_word_times, monotonic

#: The decoder holds 448 positions: the end of the text before as context (48 tokens), the start of
#: a transcript, and the forced words with the text model's marks, planned to this budget, which a
#: second pass's marks can at most double in the words' count (a mark after every word).
MAX_FORCED_TOKENS = 192
CONTEXT_TOKENS = 48
#: Below this mean log-probability per forced word token, the audio does not say the captions' words
#: (the wrong video): on matching speech it is about -0.5 (LJSpeech, the real-speech set), on
#: another recording's audio below -5.
MIN_WORD_LOG_PROB = -3.0
#: Words of a window whose log-probability is taken for that verdict, evenly spaced: each needs the
#: whole row of 51,865 logits, where the marks need a few columns.
JUDGED_WORDS = 12
#: Windows heard before the file is judged: when none of these says the captions' words, the rest is
#: not listened to.
FIRST_VERDICT = 2
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
class Hearing:
    """What the listener read. ``marks``: per gap (the gap after each word), a distribution over
    ``MODEL_MARKS``, or None where the gap was not heard. ``word_times``: per word, where it is
    said (seconds), or None where it was not heard."""

    marks: list[list[float] | None]
    windows: int  # windows heard
    warnings: list[str] = field(default_factory=list)
    word_times: list[tuple[float, float] | None] = field(default_factory=list)
    #: That the captions run past the media's end, kept apart from ``warnings``: the gap evidence
    #: may have told it already.
    past_the_end: str | None = None


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
    ) -> None:
        try:
            import ctranslate2
            from faster_whisper.feature_extractor import FeatureExtractor
        except ImportError:
            raise ListenerError(f"listening needs faster-whisper: {install_hint()}") from None
        location = whisper_model(model)
        cores = threads or os.cpu_count() or 1
        self.parallel = 2 if cores >= 2 else 1  # windows heard at once, a core or more each
        try:
            if not Path(location).is_dir():  # a Hugging Face id, for users who have the hub
                from faster_whisper.utils import download_model

                location = download_model(location)
            # One encoder pass at a time, on every core (each holds some 140 MB while it runs, and
            # two at once, a core each, were no faster), in the recogniser transcribing shares.
            self._model: Any = loaded_whisper(location, compute_type, cores).model
            tokenizer = load_tokenizer(location)
            self.decoder = ForcedDecoder(Path(location), threads=max(1, cores // self.parallel))
        except DecoderGraphError as error:
            raise ListenerError(
                f"the speech recogniser {location} cannot be listened with: {error}"
            ) from None
        except Exception as error:  # CTranslate2 and tokenizers raise their own kinds
            raise ListenerError(
                f"the speech recogniser {location} cannot be loaded: {error_line(error)}"
            ) from None
        self._storage = ctranslate2.StorageView
        self._features = FeatureExtractor(feature_size=self._model.n_mels)
        self.text = ForcedText(tokenizer)

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages the recogniser knows, as its tokenizer names them (``<|en|>``...)."""
        if not self._model.is_multilingual:
            return ("en",)
        first, last = self.text.token("<|startoftranscript|>"), self.text.token("<|translate|>")
        return tuple(self.text.tokenizer.id_to_token(i)[2:-2] for i in range(first + 1, last))

    def read(
        self,
        listening: Listening,
        audio: np.ndarray,
        progress: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
        word_times: bool = True,
    ) -> Hearing:
        """The marks heard at each gap of ``listening.words`` in ``audio`` (16 kHz mono), and where
        each word is said unless ``word_times`` is False."""
        count = len(listening.words)
        marks: list[list[float] | None] = [None] * count
        times_heard: list[tuple[float, float] | None] = [None] * count
        base = listening.language.lower().replace("_", "-").split("-")[0]
        if base not in self.languages or base in UNHEARD_LANGUAGES:
            why = "cannot read the marks of" if base in self.languages else "does not know"
            warning = f"the recogniser {why} the language {listening.language!r}: not listened to"
            return Hearing(marks, 0, [warning], times_heard)
        tokens = [self.text.word_tokens(listening, index, listening.first_marks) for index in range(count)]
        duration = len(audio) / SAMPLE_RATE
        times = spread(listening.times, listening.cues)
        plan = plan_windows(times, listening.cues, [len(t) for t in tokens], duration, MAX_FORCED_TOKENS)
        warnings: list[str] = []
        past_the_end = (
            f"the captions run past the end of the media ({duration:.1f} s): "
            f"{plan.past_the_end} words there were not listened to"
            if plan.past_the_end
            else None
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
        session.word_times = word_times
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
                _merge(marks, times_heard, result)
                if len(heard) == FIRST_VERDICT and not any(h.matches for h in heard):
                    queue.clear()  # the wrong video: told before the whole file is heard
                if progress is not None and count:
                    progress(min(1.0, window.stop / count))
        warnings += verdict(plan.windows, [(h.matches, h.failure) for h in heard])
        heard_windows = sum(1 for h in heard if h.matches and not h.failure)
        return Hearing(
            marks, heard_windows, warnings, monotonic(times_heard, BACKWARDS_SECONDS), past_the_end
        )

    def encode_window(self, audio: np.ndarray, window: Window) -> Any:
        """The encoder's reading of one window of ``audio``, its 30 s padded with silence."""
        first, last = window_samples(window, len(audio), SAMPLE_RATE)
        features = self._features(audio[first:last].astype(np.float32, copy=False))[:, :3000]
        if features.shape[1] < 3000:
            features = np.pad(features, ((0, 0), (0, 3000 - features.shape[1])))
        encoded = self._model.encode(
            self._storage.from_array(np.ascontiguousarray(features[None])), to_cpu=True
        )
        return np.asarray(encoded)[0]

    def forced_pass(
        self,
        memory: dict[str, np.ndarray],
        prefix: list[int],
        forced: list[int],
        extra: list[int],
        full_rows: list[int],
    ) -> ForcedPass:
        """One decoder pass over ``prefix + forced``, reading the columns of the forced tokens, the
        marks, the end of the text and ``extra``, and the whole row at ``full_rows`` (rows counted
        as in ``ForcedPass``: from the prefix's last token)."""
        marks = [token for ids in self.text.mark_tokens for token in ids]
        columns = sorted(set(forced) | set(extra) | set(marks) | {self.text.end_of_text})
        first_row = len(prefix) - 1
        scores = self.decoder.scores(memory, prefix + forced, columns, [first_row + row for row in full_rows])
        return ForcedPass(scores, {token: column for column, token in enumerate(columns)}, first_row)

    def gap_marks(
        self, reading: ForcedPass, gaps: dict[int, int], go_on: dict[int, list[int]]
    ) -> dict[int, list[float]]:
        """Each gap's distribution over ``MODEL_MARKS``: going on to the next word (or the end of
        the text) against each mark. Only the few columns read are computed: the normaliser of
        the whole row cancels out."""
        heard: dict[int, list[float]] = {}
        for index, row in gaps.items():
            masses = [_log_sum(reading.logits(row, ids)) for ids in (go_on[index], *self.text.mark_tokens)]
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
        self.word_times = True  # whether each window also places its words (``Listener.read``)
        self.start = [
            listener.text.token(t)
            for t in ("<|startoftranscript|>", f"<|{base}|>", "<|transcribe|>", "<|notimestamps|>")
        ]
        # The marks second passes write, and per window whether its own are in: both passes of a
        # window have the text before it as the window before wrote it (the first pass of the
        # window before, on the other worker, is done by then or soon: windows start in order).
        self.second: dict[int, int] = {}
        self.written = [threading.Event() for _ in windows]

    def prefix(self, window: Window, written: Sequence[int] | None = None) -> list[int]:
        """The decoder's prompt before the window's words: the end of the text before it (with the
        marks ``written``, else the text model's), then the start of a transcript."""
        index = window.first
        if index and self.times[index - 1][0] > window.start + BACKWARDS_SECONDS:
            return self.start  # the text before is said later: no context for what is heard here
        context: list[int] = []
        while index > 0 and len(context) < CONTEXT_TOKENS:
            index -= 1
            word = (
                self.tokens[index]
                if written is None
                else self.listener.text.word_tokens(self.listening, index, written)
            )
            context = word + context
        if not context:
            return self.start
        return [self.listener.text.token("<|startofprev|>"), *context[-CONTEXT_TOKENS:], *self.start]

    def hear(self, number: int) -> _Heard:
        """Window ``number``: an encoder pass, a decoder pass along its words with the text model's
        marks, and a second with the marks combined from the first where there is a combination
        (the audio's keys and values are computed once for both)."""
        try:
            return self._hear(number)
        finally:
            self.written[number].set()

    def _hear(self, number: int) -> _Heard:
        window, listener, listening = self.windows[number], self.listener, self.listening
        try:
            memory = listener.decoder.memory(listener.encode_window(self.audio, window))
            before_written: Sequence[int] | None = None
            if listening.combination is not None and number:
                self.written[number - 1].wait()  # the text before as the window before wrote it
                before_written = Overlay(listening.first_marks, self.second)
            forced, gaps, firsts = listener.text.window_text(
                listening, window, before_written or listening.first_marks
            )
            prefix = self.prefix(window, before_written)
            go_on = listener.text.go_on(listening, window, gaps)
            extra = [token for ids in go_on.values() for token in ids]
            judged = firsts[:: max(1, math.ceil(len(firsts) / JUDGED_WORDS))]
            reading = listener.forced_pass(memory, prefix, forced, extra, [row for row, _ in judged])
            if float(np.mean(reading.log_probs(judged))) < MIN_WORD_LOG_PROB:
                return _Heard(matches=False)
            marks = listener.gap_marks(reading, gaps, go_on)
            second = listening.second_marks(marks)
            if second:
                self.second.update(second)
                self.written[number].set()
                written = Overlay(listening.first_marks, self.second)
                again, again_gaps, again_firsts = listener.text.window_text(listening, window, written)
                before = self.prefix(window, written)
                fits = len(before) + len(again) <= listener.decoder.dimensions.positions
                # The second pass's text, rows and reading are taken together or not at all: its
                # rows read in the first pass's reading broke the whole file (an IndexError).
                if fits and (again, before) != (forced, prefix):  # else the first pass's reading stands
                    reading = listener.forced_pass(memory, before, again, extra, [])
                    forced, gaps, firsts = again, again_gaps, again_firsts
                marks = listener.gap_marks(reading, gaps, go_on)
        # CTranslate2's and ONNX Runtime's own failures, and any slip of one window's rows: that
        # window keeps the text's reading, with a warning, never the file.
        except (RuntimeError, ValueError, IndexError) as error:
            return _Heard(failure=error_line(error))
        spans = [(row, gaps[window.first + n]) for n, (row, _) in enumerate(firsts)]
        return _Heard(marks, times=self.times_heard(reading, window, len(forced), spans))

    def times_heard(
        self, reading: ForcedPass, window: Window, forced: int, spans: list[tuple[int, int]]
    ) -> dict[int, tuple[float, float]]:
        """Where the window's words are said, from the alignment heads' attention along the
        ``forced`` tokens (``spans``: each word's own tokens in them) in the same pass; none if the
        aligner fails: the marks heard still hold."""
        if not self.word_times:
            return {}
        first, last = window_samples(window, len(self.audio), SAMPLE_RATE)
        frames = min(3000, (last - first) * MEL_FRAMES_PER_SECOND // SAMPLE_RATE) // 2
        transcript = reading.first_row + 1 - len(self.start)  # the rows from <|startoftranscript|>
        try:
            matrix = attention_matrix(
                reading.scores.alignment[:, transcript:, :], len(self.start) - 1, frames
            )
            times = heard_word_times(matrix, forced, spans, self.audio[first:last], first / SAMPLE_RATE)
        except (RuntimeError, ValueError):
            return {}
        return dict(zip(range(window.first, window.stop), times, strict=True))


def _merge(marks: list[list[float] | None], times: list[tuple[float, float] | None], heard: _Heard) -> None:
    """A window's reading into the file's, where its audio says its words."""
    if heard.matches and not heard.failure:
        for index, distribution in heard.marks.items():
            marks[index] = distribution
        for index, said in heard.times.items():
            times[index] = said


def _log_sum(logits: np.ndarray) -> float:
    if not logits.size:
        return -math.inf
    top = float(logits.max())
    return top + math.log(float(np.exp(logits - top).sum()))
