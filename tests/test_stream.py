"""Streaming punctuation (``app.services.stream``) and ``punctum stream``, with the shipped model."""

from __future__ import annotations

import itertools
import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.audio.gap_features import timed_gaps
from app.formats import parse_document
from app.services.gap_evidence import GapEvidence
from app.services.model import Punctuator
from app.services.stream import (
    CONFIDENT,
    DEADLINE,
    END,
    LOOKAHEAD,
    StreamPolicy,
    StreamPunctuator,
    StreamWord,
    run_json_lines,
)
from app.services.stream_input import StreamInputError, parse_line
from tests.conftest import ROOT, SAMPLE

#: The sample's recognised words with their times (milliseconds in the file, seconds here).
TIMED = [
    (item["word"], item["start"] / 1000, item["end"] / 1000)
    for item in json.loads((SAMPLE / "sample.words.json").read_text(encoding="utf-8"))
]


def _stopped_clock() -> float:
    return 0.0  # the wall clock never moves: only the word times can make a word due


@pytest.fixture(scope="module")
def punctuator() -> Punctuator:
    loaded = Punctuator(threads=1)
    loaded.load()
    return loaded


@pytest.fixture(scope="module")
def sample_stream(punctuator: Punctuator) -> tuple[list[str], list[StreamWord], StreamPunctuator]:
    """The bundled sample's caption words streamed without times (default policy), and flushed."""
    path = SAMPLE / "sample.srt"
    words = [w.text for w in parse_document(path.read_bytes(), "srt", path).words()]
    stream = StreamPunctuator(punctuator, clock=_stopped_clock)
    out = [decided for word in words for decided in stream.feed(word)]
    return words, out + stream.flush(), stream


def test_the_sample_comes_back_in_order_each_word_once_with_marks(
    sample_stream: tuple[list[str], list[StreamWord], StreamPunctuator],
) -> None:
    words, out, _ = sample_stream
    assert [w.index for w in out] == list(range(len(words)))
    # Only capitals change: the text of each word is the one given.
    assert [w.word.lower() for w in out] == [w.lower() for w in words]
    assert out[0].word == "Hello"
    marks = [w.mark for w in out]
    assert marks.count(".") + marks.count("?") >= 10 and marks.count(",") >= 5, marks
    assert out[-1].mark in (".", "?", "!") and out[-1].decided == END
    # After a full stop comes a capital.
    assert all(b.word[0].isupper() for a, b in itertools.pairwise(out) if a.mark == "."), out
    assert {w.decided for w in out} <= {LOOKAHEAD, CONFIDENT, END}
    assert all(w.after <= 4 for w in out)


def test_the_window_stays_bounded_however_long_the_stream(
    sample_stream: tuple[list[str], list[StreamWord], StreamPunctuator],
) -> None:
    words, _, stream = sample_stream
    assert stream.reading is not None
    # The sample's first words are no longer re-read: the window ends at its sub-token budget.
    assert stream.reading.first > 0 and len(stream.reading.marks) < len(words)
    assert stream.waiting == 0


def test_a_fixed_lookahead_decides_each_word_when_n_words_follow(punctuator: Punctuator) -> None:
    stream = StreamPunctuator(punctuator, policy=StreamPolicy(lookahead=3, fixed=True), clock=_stopped_clock)
    fed = [stream.feed(word) for word, _, _ in TIMED[:8]]
    assert [[w.index for w in out] for out in fed] == [[], [], [], [0], [1], [2], [3], [4]]
    assert all(w.after == 3 and w.decided == LOOKAHEAD for out in fed for w in out)
    rest = stream.flush()
    assert [w.index for w in rest] == [5, 6, 7] and [w.after for w in rest] == [2, 1, 0]
    assert stream.flush() == []  # nothing is given twice


def test_max_delay_forces_a_decision_by_the_word_times(punctuator: Punctuator) -> None:
    words = [("so", 0.0, 0.3), ("what", 0.4, 0.6), ("do", 0.7, 0.9), ("people", 0.95, 1.0)]
    waiting = StreamPunctuator(punctuator, policy=StreamPolicy(lookahead=8, fixed=True), clock=_stopped_clock)
    assert [waiting.feed(*word) for word in words] == [[], [], [], []]
    stream = StreamPunctuator(
        punctuator, policy=StreamPolicy(lookahead=8, fixed=True, max_delay_ms=500), clock=_stopped_clock
    )
    fed = [stream.feed(*word) for word in words]
    # "do" ends 0.6 s after "so" ends: "so" is due; "what" (0.3 s, then 0.4 s) is not yet.
    assert [[w.index for w in out] for out in fed] == [[], [], [0], []]
    assert fed[2][0].decided == DEADLINE and fed[2][0].after == 2
    assert fed[2][0].start == 0.0 and fed[2][0].end == 0.3


def test_max_delay_without_times_goes_by_the_clock(punctuator: Punctuator) -> None:
    now = [100.0]
    stream = StreamPunctuator(
        punctuator, policy=StreamPolicy(lookahead=8, fixed=True, max_delay_ms=1000), clock=lambda: now[0]
    )
    assert stream.feed("hello") == [] and stream.feed("and") == []
    assert stream.next_deadline() == pytest.approx(1.0)
    now[0] += 0.5
    assert stream.expire() == []
    now[0] += 0.6
    assert [w.index for w in stream.expire()] == [0, 1]
    assert stream.next_deadline() is None


class Recording(Punctuator):
    """The shipped model, with a record of the evidence of every model run."""

    def __init__(self, loaded: Punctuator) -> None:
        super().__init__(threads=1)
        self._loaded = loaded.load()
        self.seen: list[GapEvidence | None] = []

    def probabilities(
        self, words: list[str], language: str | None = None, evidence: GapEvidence | None = None
    ) -> tuple[list[list[float]], list[list[float]]]:
        self.seen.append(evidence)
        return super().probabilities(words, language, evidence)


def test_timed_words_get_the_gap_evidence_of_batch_mode(punctuator: Punctuator) -> None:
    recording = Recording(punctuator)
    stream = StreamPunctuator(recording, policy=StreamPolicy(lookahead=2), clock=_stopped_clock)
    words = TIMED[:40]
    for word in words:
        stream.feed(*word)
    batch = timed_gaps([w for w, _, _ in words], [s for _, s, _ in words], [e for _, _, e in words])
    last = recording.seen[-1]
    assert last is not None and stream.reading is not None
    first = stream.reading.first
    # The newest word's pause is not known yet: batch mode has no next word either at its end.
    assert last.vectors[:-1] == batch[first:-1] and last.vectors[-1] is None
    assert any(v is not None for v in last.vectors)


def test_words_that_arrive_together_are_read_in_one_model_run(
    punctuator: Punctuator, sample_stream: tuple[list[str], list[StreamWord], StreamPunctuator]
) -> None:
    words, alone, _ = sample_stream
    recording = Recording(punctuator)
    stream = StreamPunctuator(recording, clock=_stopped_clock)
    segments = [[(word, None, None) for word in words[n : n + 10]] for n in range(0, len(words), 10)]
    together = [w for segment in segments for w in stream.feed_many(segment)] + stream.flush()
    assert len(recording.seen) == len(segments)  # one model run per segment, not per word
    assert [w.index for w in together] == list(range(len(words)))
    assert [w.word.lower() for w in together] == [w.lower() for w in words]
    # Read with more words after them, the marks are mostly the ones given word by word.
    same = sum(a.mark == b.mark for a, b in zip(alone, together, strict=True))
    assert same >= 0.9 * len(words), [(a.word, a.mark, b.mark) for a, b in zip(alone, together, strict=True)]
    # A segment with a word that cannot be read is refused whole; the stream goes on.
    waiting = stream.waiting
    with pytest.raises(StreamInputError):
        stream.feed_many([("fine", None, None), ("two words", None, None)])
    assert stream.waiting == waiting and stream.feed_many([]) == []
    assert [w.index for w in stream.feed("next") + stream.flush()] == [len(words)]


def test_a_long_pause_makes_a_sentence_end_likelier(punctuator: Punctuator) -> None:
    def period_after_ten(pause: float) -> float:
        stream = StreamPunctuator(
            punctuator, policy=StreamPolicy(lookahead=3, fixed=True), clock=_stopped_clock
        )
        text = ["we", "start", "at", "ten", "we", "will", "save", "you", "a", "seat"]
        clock = 0.0
        for word in text:
            stream.feed(word, clock, clock + 0.3)
            clock += 0.35 + (pause if word == "ten" else 0.0)
        assert stream.reading is not None
        return stream.reading.marks_of(3)[2]

    assert period_after_ten(1.5) > period_after_ten(0.0) + 0.05


def test_words_given_with_punctuation_keep_their_text() -> None:
    assert parse_line('"we will"') == [("we", None, None), ("will", None, None)]
    assert parse_line('{"word": " hi", "start": 1, "end": 1.5, "probability": 0.9}') == [(" hi", 1.0, 1.5)]
    segment = '[{"word": "we", "start": 0, "end": 0.2}, {"word": "will", "start": 0.3, "end": 0.5}]'
    assert parse_line(segment) == [("we", 0.0, 0.2), ("will", 0.3, 0.5)]
    for bad in (
        "[1]",
        "[]",
        '[{"word": "a"}, "b"]',
        '{"word": "a", "start": true}',
        '{"word": "a", "end": -1}',
        '""',
        "{",
    ):
        with pytest.raises(StreamInputError):
            parse_line(bad)


def test_punctuation_given_with_a_word_is_replaced_and_quotes_stay(punctuator: Punctuator) -> None:
    stream = StreamPunctuator(punctuator, policy=StreamPolicy(lookahead=0, fixed=True), clock=_stopped_clock)
    out = [w for word in ('"where', "are", 'you?"', "i", "wonder...") for w in stream.feed(word)]
    assert [w.word.lower() for w in out] == ['"where', "are", "you", "i", "wonder"]
    assert out[0].word == '"Where' and out[3].word == "I"  # a sentence start; English's "I"
    assert out[2].mark[-1] == '"' and out[4].mark == "..."  # the quote and the ellipsis given stay
    with pytest.raises(StreamInputError):
        stream.feed("two words")


def test_an_abbreviations_full_stop_starts_no_sentence(punctuator: Punctuator) -> None:
    stream = StreamPunctuator(punctuator, policy=StreamPolicy(lookahead=0, fixed=True), clock=_stopped_clock)
    words = ["we", "need", "fruit", "e.g.", "apples", "and", "pears"]
    out = [w for word in words for w in stream.feed(word)] + stream.flush()
    decided = [(w.word, w.mark) for w in out]
    assert decided[3] == ("E.g", ".") and decided[4][0] == "apples", decided  # after "e.g.", no capital


# --- the command ------------------------------------------------------------------------------


def punctum_stream(*options: str, given: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "app", "stream", *options],
        input=given,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        check=False,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


def _records(stdout: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.decode("utf-8").splitlines()]


def test_the_command_reports_bad_lines_and_goes_on_and_flushes_at_the_end() -> None:
    lines = [
        b'{"word": "hello", "start": 0.0, "end": 0.5}',
        b"hello there",  # not JSON
        b'"and welcome"',
        b'{"text": "to"}',
        b'{"word": "to", "start": 2, "end": 1}',
        b"\xff\xfe",
        b"",
        b'{"word": "the", "start": 1.2, "end": 1.4}',
        b'"show"',
    ]
    result = punctum_stream("--lookahead", "8", given=b"\n".join(lines) + b"\n")
    errors = result.stderr.decode("utf-8").splitlines()
    assert result.returncode == 0, errors
    assert "Traceback" not in result.stderr.decode("utf-8")
    assert [e.split(":")[1] for e in errors] == [" line 2", " line 4", " line 5", " line 6"], errors
    assert all(e.startswith("punctum: ") for e in errors)
    assert "not JSON" in errors[0] and "before start" in errors[2] and "UTF-8" in errors[3]
    out = _records(result.stdout)
    # Eight words of lookahead never came: the end of the input decided every word.
    assert [(r["index"], r["word"].lower()) for r in out] == list(
        enumerate(["hello", "and", "welcome", "the", "show"])
    )
    assert {r["decided"] for r in out} == {END} and out[0]["word"] == "Hello"
    assert out[0]["start"] == 0.0 and out[0]["end"] == 0.5 and "start" not in out[1]


def test_hostile_lines_are_one_warning_each_and_never_end_the_stream() -> None:
    words = ["one", "two", "three", "four", "five"]
    hostile = [
        b"[" * 1_000 + b"]" * 1_000,  # deeper than the JSON parser's recursion
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,  # deeper than the C stack
        b'{"word": "x", "end": 1' + b"0" * 310 + b"}",  # an integer beyond any float
        b'{"word": "x", "end": 1' + b"0" * 5_000 + b"}",  # beyond Python's integer digits
        b'{"word": "\\ud800"}',  # a lone surrogate
        b'"' + b"word " * 250_000 + b'"',  # more bytes than a line may have
        b'"' + b"w " * 10_001 + b'"',  # more words than a line may have
    ]
    lines = [json.dumps(words[0]).encode()] + hostile + [json.dumps(w).encode() for w in words[1:]]
    result = punctum_stream("--lookahead", "2", given=b"\n".join(lines) + b"\n")
    errors = result.stderr.decode("utf-8").splitlines()
    assert result.returncode == 0, errors
    assert [int(e.split(":")[1].split()[1]) for e in errors] == list(range(2, 2 + len(hostile))), errors
    assert "nested more than" in errors[0] and "nested more than" in errors[1]
    assert '"end" must be a number of seconds' in errors[2] and "digits" in errors[3]
    assert "lone surrogate" in errors[4] and "bytes" in errors[5] and "10,000" in errors[6]
    assert [r["word"].lower().strip(",.?!") for r in _records(result.stdout)] == words


#: Words a valid line may carry; anything else the fuzz test sends must be refused.
FUZZ_WORDS = ["one", "two", "three", "so", "we", "go", "here"]


def _json_values() -> Any:
    """Any JSON value but a string or an object with a "word": none of them is a word."""
    from hypothesis import strategies as st

    leaves = st.none() | st.booleans() | st.integers(-(10**400), 10**400) | st.floats()
    keys = st.text(max_size=6).filter(lambda key: key != "word")
    return st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner | st.text(max_size=8), max_size=4)
            | st.dictionaries(keys, inner | st.text(max_size=8), max_size=3)
        ),
        max_leaves=12,
    )


def _fuzz_lines() -> Any:
    """(line, its words if valid): valid words (plain or timed) mixed with hostile lines."""
    from hypothesis import strategies as st

    word = st.sampled_from(FUZZ_WORDS)
    valid = word.map(lambda w: (json.dumps(w).encode(), [w])) | word.map(
        lambda w: (json.dumps({"word": w, "start": 1.0, "end": 1.25}).encode(), [w])
    )
    surrogate = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
    hostile = st.one_of(
        _json_values().map(lambda v: json.dumps(v, allow_nan=True).encode()),
        st.tuples(st.text(max_size=10), surrogate).map(lambda t: json.dumps(t[0] + " " + t[1]).encode()),
        st.binary(max_size=40).map(lambda b: b"\xff" + b.replace(b"\n", b"")),
        st.text(max_size=40).map(lambda t: ("#" + t.replace("\n", " ")).encode("utf-8", "surrogatepass")),
        st.integers(33, 3_000).map(lambda n: b"[" * n + b"]" * n),
        st.sampled_from([b'{"word": 7}', b'{"word": "a", "end": -1}', b'{"word": "a b"}', b"[]", b'""']),
    ).map(lambda line: (line, []))
    return st.lists(valid | hostile, min_size=1, max_size=12)


def test_fuzzed_input_never_ends_the_stream_and_every_word_comes_out_once(punctuator: Punctuator) -> None:
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_fuzz_lines())
    def check(lines: list[tuple[bytes, list[str]]]) -> None:
        import io

        sink = io.BytesIO()
        warnings: list[str] = []
        stream = StreamPunctuator(punctuator, policy=StreamPolicy(lookahead=2), clock=_stopped_clock)
        source = io.BytesIO(b"\n".join(line for line, _ in lines) + b"\n")
        run_json_lines(stream, source, sink, warnings.append)
        out = [r["word"].lower().strip(",.?!:") for r in _records(sink.getvalue())]
        assert out == [w for _, words in lines for w in words]
        assert len(warnings) <= len(lines) and all(w.startswith("line ") for w in warnings)

    check()


def _stream_process(*options: str, **popen: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "app", "stream", *options],
        stdin=popen.pop("stdin", subprocess.PIPE),
        stdout=popen.pop("stdout", subprocess.PIPE),
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        **popen,
    )


def _read_words(process: subprocess.Popen[bytes], count: int) -> list[dict[str, Any]]:
    assert process.stdout is not None
    records = []
    for _ in range(count):
        ready, _, _ = select.select([process.stdout], [], [], 90)
        assert ready, "no word came out"
        records.append(json.loads(process.stdout.readline()))
    return records


def test_ctrl_c_writes_the_waiting_words_and_exits_130_in_one_line() -> None:
    # A shell that starts the tests in the background leaves SIGINT ignored; a terminal does not.
    process = _stream_process(
        "--lookahead", "1", "--fixed", preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    try:
        process.stdin.write(b'"so"\n"we"\n"are"\n"going"\n')
        process.stdin.flush()  # and kept open, as a live recogniser's pipe is
        first = _read_words(process, 3)
        process.send_signal(signal.SIGINT)
        rest = [json.loads(line) for line in process.stdout.read().splitlines()]
        assert process.wait(timeout=60) == 130
        stderr = process.stderr.read().decode("utf-8")
    finally:
        process.kill()
        process.wait()
    assert [r["word"].lower().strip(",.?") for r in first + rest] == ["so", "we", "are", "going"]
    assert rest[-1]["decided"] == END
    assert stderr.startswith("punctum: interrupted") and stderr.count("\n") == 1, stderr


def test_a_reader_that_goes_away_ends_the_stream_quietly() -> None:
    process = _stream_process("--lookahead", "1", "--fixed")
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    try:
        for word in ("one", "two", "three", "four", "five", "six", "seven"):
            process.stdin.write(json.dumps(word).encode() + b"\n")
        process.stdin.flush()  # kept open: the stream must end by itself
        _read_words(process, 1)
        process.stdout.close()  # as `| head -1` does
        assert process.wait(timeout=60) == 0
        assert process.stderr.read() == b""
    finally:
        process.kill()
        process.wait()


def test_closed_or_full_standard_streams_are_one_line() -> None:
    closed_in = _stream_process(stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0))
    closed_out = _stream_process(stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
    with Path("/dev/full").open("wb") as full:  # every write fails: no space left
        on_full = _stream_process(stdout=full)
        assert on_full.stdin is not None
        on_full.stdin.write(b'"hello"\n"there"\n')
        on_full.stdin.close()
    for process, code, problem in (
        (closed_in, 2, "standard input is closed"),
        (closed_out, 2, "standard output is closed"),
        (on_full, 3, "cannot write the output"),
    ):
        assert process.wait(timeout=90) == code
        assert process.stderr is not None
        stderr = process.stderr.read().decode("utf-8")
        assert stderr.count("\n") == 1 and problem in stderr and "Traceback" not in stderr, stderr


def test_the_command_writes_each_word_as_soon_as_it_is_decided() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "stream", "--lookahead", "1", "--fixed"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(b'"hello"\n"and"\n')
        process.stdin.flush()  # the input stays open: nothing forces the output but the command
        ready, _, _ = select.select([process.stdout], [], [], 90)
        assert ready, "no word came out while the input stayed open"
        assert json.loads(process.stdout.readline())["word"] == "Hello"
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--lookahead", "-1"], "must be 0 to 32"),
        (["--lookahead", "four"], "'four' is not a whole number"),
        (["--max-delay", "soon"], "not a number of milliseconds"),
        (["--context", "4"], "must be 8 sub-tokens or more"),
        (["--language", "klingon"], "'klingon'"),
    ],
)
def test_bad_options_are_one_line_usage_errors(options: list[str], problem: str) -> None:
    result = punctum_stream(*options, given=b"")
    stderr = result.stderr.decode("utf-8")
    assert result.returncode == 2, stderr
    assert stderr.count("\n") == 1 and problem in stderr and "Traceback" not in stderr, stderr
    assert result.stdout == b""


def test_a_context_longer_than_the_model_reads_is_refused(punctuator: Punctuator) -> None:
    """`stream --context 100000` was taken and cut to the model's window without a word."""
    from app.services.stream import CONTEXT_TOKENS, StreamContextError

    with pytest.raises(StreamContextError, match="--context 100000: the model reads 190 sub-tokens at most"):
        StreamPunctuator(punctuator, context_tokens=100_000)
    assert StreamPunctuator(punctuator, context_tokens=CONTEXT_TOKENS).context_tokens == CONTEXT_TOKENS
