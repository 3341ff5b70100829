"""Streaming punctuation (``app.services.stream``) against whole documents; prints JSON.

One real ``StreamPunctuator`` (the command's defaults) reads IWSLT2011 test2011 (reference
transcript, no times), then the held-out Earnings-22 test calls word by word with their times,
then the Earnings-22 dev calls, over and over, until 100,000 words have gone through it. From that
one run:
- the dynamic policy's F1 (its real decisions) and its delay per word, in words and in
  milliseconds of compute (the ``feed`` calls from the word's own to the one that decided it);
- fixed lookahead N = 0, 1, 2, 4, 8: each gap as the window read when N words followed it (the
  window read per word is the same whatever the policy), with the same delays;
- resident memory once the model is loaded, after the scored words and after 100,000 words
  (the last stretch keeps nothing per word: what it grows by is the stream's own).
Beside them, the whole-document figure (``app.training.scores``: overlapping windows, as ``punctum
eval``). Overall = micro-average over comma, period and question, as ``eval_model``.

``--tune`` reads the dev sets instead (IWSLT2011 dev2012's held-out tenth and the Earnings-22 dev
calls, 3,000 words each) for window sizes and entropy thresholds of the dynamic policy: where the
constants of ``app.services.stream`` come from. The test sets are never used to choose them.

Run: `OMP_NUM_THREADS=2 .venv/bin/python -m tests.benchmarks.bench_stream --threads 2 [--data DIR]
[--context-tokens N] [--int8] [--tune [--budgets N ...]]` (exit 3 without the shared data; about an hour
with the default window on a 2-core machine, the figures in docs/stream.md).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.core.marks import MODEL_MARKS, mark_class
from app.core.metrics import punctuation_scores
from app.services.model import Punctuator
from app.services.stream import (
    CONTEXT_TOKENS,
    DEFAULT_LOOKAHEAD,
    ENTROPY_THRESHOLD,
    StreamPolicy,
    StreamPunctuator,
    StreamWord,
    entropy,
)
from app.training import data as corpora
from app.training.scores import predict_documents, scores_from
from tests.conftest import SHARED_DATA

LOOKAHEADS = (0, 1, 2, 4, 8)
MEMORY_WORDS = 100_000
TUNE_WORDS = 3_000


@dataclass
class Reading:
    """What one stream made of one document."""

    document: corpora.LabelledText
    # Per lookahead N, per word: its mark probabilities in the window read when N words followed
    # it (at the document's end, fewer: the last window, as ``flush`` decides them).
    at_lookahead: dict[int, list[list[float]]] = field(default_factory=dict)
    decided: list[str] = field(default_factory=list)  # the real stream's class per word
    delay_words: list[int] = field(default_factory=list)
    delay_seconds: list[float] = field(default_factory=list)
    fixed_delay_seconds: dict[int, list[float]] = field(default_factory=dict)


def times_of(document: corpora.LabelledText) -> tuple[Sequence[float | None], Sequence[float | None]]:
    starts, ends = document.extras.get("starts"), document.extras.get("ends")
    if isinstance(starts, list) and isinstance(ends, list):
        return starts, ends
    return [None] * len(document), [None] * len(document)


def read_document(stream: StreamPunctuator, document: corpora.LabelledText, deepest: int) -> Reading:
    """Feed ``document`` to ``stream`` word by word, then flush it; collect what it decided,
    when, and the window readings at each lookahead up to ``deepest``."""
    reading = Reading(document, {n: [[]] * len(document) for n in range(deepest + 1)})
    starts, ends = times_of(document)
    feed_seconds: list[float] = []
    offset: int | None = None
    reading.decided = [""] * len(document)
    reading.delay_words = [0] * len(document)
    reading.delay_seconds = [0.0] * len(document)

    def take(words: list[StreamWord], feed: int) -> None:
        assert offset is not None  # set by the first window read
        for word in words:
            position = word.index - offset
            reading.decided[position] = mark_class(word.mark)
            reading.delay_words[position] = word.after
            reading.delay_seconds[position] = sum(feed_seconds[position : feed + 1])

    for position, word in enumerate(document.words):
        started = time.perf_counter()
        # A corpus's empty word (10 in dev2012) would be refused: the stream takes words only.
        decided = stream.feed(word or "<unk>", starts[position], ends[position])
        feed_seconds.append(time.perf_counter() - started)
        window = stream.reading
        assert window is not None
        if offset is None:
            offset = window.first + len(window.marks) - 1 - position
        for n in range(deepest + 1):
            if position - n >= 0:
                # A word decided early may have left a window of long words; it keeps what it had.
                inside = offset + position - n >= window.first
                reading.at_lookahead[n][position - n] = (
                    window.marks_of(offset + position - n)
                    if inside
                    else reading.at_lookahead[n - 1][position - n]
                )
        take(decided, position)
    window = stream.reading
    assert window is not None and offset is not None
    for n in range(deepest + 1):
        for position in range(max(0, len(document) - n), len(document)):
            reading.at_lookahead[n][position] = window.marks_of(offset + position)
    take(stream.flush(), len(document) - 1)
    last = len(document) - 1
    reading.fixed_delay_seconds = {
        n: [sum(feed_seconds[p : min(p + n, last) + 1]) for p in range(len(document))] for n in LOOKAHEADS
    }
    return reading


def current_rss_mb() -> float | None:
    """Resident memory now (Linux); None elsewhere."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return round(pages * resource.getpagesize() / 2**20, 1)


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def f1_of(readings: Sequence[Reading], predicted: Callable[[Reading], list[str]]) -> dict[str, object]:
    gold: list[str] = []
    guessed: list[str] = []
    for reading in readings:
        gold += [mark_class(MODEL_MARKS[label]) for label in reading.document.labels]
        guessed += predicted(reading)
    return punctuation_scores(gold, guessed, digits=2)["overall"]  # type: ignore[return-value]


def argmax_classes(rows: list[list[float]]) -> list[str]:
    return [mark_class(MODEL_MARKS[int(np.argmax(row))]) for row in rows]


def delays(words: Sequence[float], seconds: Sequence[float]) -> dict[str, float]:
    milliseconds = 1000 * np.asarray(seconds)
    return {
        "mean_words": round(float(np.mean(words)), 2),
        "p95_words": round(float(np.percentile(words, 95)), 2),
        "mean_compute_ms": round(float(np.mean(milliseconds)), 1),
        "p95_compute_ms": round(float(np.percentile(milliseconds, 95)), 1),
    }


def whole_documents(punctuator: Punctuator, documents: list[corpora.LabelledText]) -> dict[str, object]:
    model = punctuator.load()
    probabilities = predict_documents(model, documents, model.settings)
    return scores_from(documents, probabilities, digits=2)["overall"]  # type: ignore[no-any-return]


def scores(name: str, readings: list[Reading], punctuator: Punctuator) -> dict[str, object]:
    result: dict[str, object] = {
        "words": sum(len(r.document) for r in readings),
        "whole_document": whole_documents(punctuator, [r.document for r in readings]),
    }
    for n in LOOKAHEADS:
        result[f"lookahead_{n}"] = {
            **f1_of(readings, lambda r, n=n: argmax_classes(r.at_lookahead[n])),  # type: ignore[misc]
            **delays(
                [min(n, len(r.document) - 1 - p) for r in readings for p in range(len(r.document))],
                [s for r in readings for s in r.fixed_delay_seconds[n]],
            ),
        }
    result["dynamic"] = {
        **f1_of(readings, lambda r: r.decided),
        **delays(
            [d for r in readings for d in r.delay_words], [s for r in readings for s in r.delay_seconds]
        ),
    }
    print(name, json.dumps(result), file=sys.stderr)
    return result


def memory_words(root: Path) -> Iterator[corpora.LabelledText]:
    """The Earnings-22 dev calls, over and over: words to stream after the scored ones."""
    split = corpora.earnings_split(root / "earnings22" / "force_aligned_nlp_references")
    calls = [corpora.read_rev(p) for p in split["dev"]]
    while True:
        yield from calls


def benchmark(root: Path, punctuator: Punctuator, context_tokens: int) -> dict[str, object]:
    punctuator.load()
    memory: dict[str, object] = {"rss_mb_model_loaded": current_rss_mb()}
    stream = StreamPunctuator(punctuator, context_tokens=context_tokens)
    iwslt = [corpora.read_iwslt_tags(root / "iwslt2011" / "test2011")]
    split = corpora.earnings_split(root / "earnings22" / "force_aligned_nlp_references")
    earnings = [corpora.read_rev(p) for p in split["test"]]
    started = time.perf_counter()
    results: dict[str, object] = {
        "policy": {
            "lookahead": DEFAULT_LOOKAHEAD,
            "entropy_threshold": ENTROPY_THRESHOLD,
            "context_tokens": stream.context_tokens,
            "threads": punctuator.threads,
            "int8": punctuator.quantize,
        },
        "earnings22_test_calls_used": [d.name for d in earnings],
    }
    for name, documents in (("iwslt2011_test2011", iwslt), ("earnings22_test_calls", earnings)):
        readings = [read_document(stream, d, max(LOOKAHEADS)) for d in documents]
        results[name] = scores(name, readings, punctuator)
    # From here on nothing is kept per word: what memory grows by is the stream's own.
    streamed = sum(len(d) for d in iwslt + earnings)
    memory[f"rss_mb_after_{streamed}_words"] = current_rss_mb()
    for call in memory_words(root):
        starts, ends = times_of(call)
        for number, word in enumerate(call.words[: MEMORY_WORDS - streamed]):
            stream.feed(word or "<unk>", starts[number], ends[number])
        streamed += min(len(call), MEMORY_WORDS - streamed)
        if streamed >= MEMORY_WORDS:
            break
    memory.update(
        {
            f"rss_mb_after_{MEMORY_WORDS}_words": current_rss_mb(),
            "peak_rss_mb": peak_rss_mb(),
            "words_waiting": stream.waiting,
            "seconds_for_all_words": round(time.perf_counter() - started, 1),
        }
    )
    results["memory"] = memory
    return results


# --- choosing the constants on the dev sets -----------------------------------------------------


def dynamic_classes(
    reading: Reading, bound: int, threshold: float, least: int
) -> tuple[list[str], list[int]]:
    """What the dynamic policy would decide from the same windows: each gap at the first
    lookahead from ``least`` on whose entropy is under ``threshold``, else at ``bound``; never
    before the gap before it (words go out in order)."""
    classes: list[str] = []
    waited: list[int] = []
    previous_end = -1
    for position in range(len(reading.document)):
        chosen = bound
        for n in range(least, bound):
            if position + n >= previous_end and entropy(reading.at_lookahead[n][position]) < threshold:
                chosen = n
                break
        chosen = max(chosen, previous_end - position)
        previous_end = position + chosen
        classes.append(mark_class(MODEL_MARKS[int(np.argmax(reading.at_lookahead[chosen][position]))]))
        waited.append(min(chosen, len(reading.document) - 1 - position))
    return classes, waited


def tune(root: Path, punctuator: Punctuator, budgets: Sequence[int]) -> dict[str, object]:
    iwslt = corpora.split_words(corpora.read_iwslt_tags(root / "iwslt2011" / "dev2012"), 0.9)[1]
    split = corpora.earnings_split(root / "earnings22" / "force_aligned_nlp_references")
    dev = [
        corpora.words_between(iwslt, 0, TUNE_WORDS),
        corpora.words_between(corpora.read_rev(split["dev"][0]), 0, TUNE_WORDS),
    ]
    result: dict[str, object] = {"whole_document": whole_documents(punctuator, dev)}
    for budget in budgets:
        stream = StreamPunctuator(
            punctuator, policy=StreamPolicy(max(LOOKAHEADS), fixed=True), context_tokens=budget
        )
        started = time.perf_counter()
        readings = [read_document(stream, d, max(LOOKAHEADS)) for d in dev]
        seconds = time.perf_counter() - started
        row: dict[str, object] = {"ms_per_word": round(1000 * seconds / sum(len(d) for d in dev), 1)}
        for n in LOOKAHEADS:
            row[f"lookahead_{n}"] = f1_of(readings, lambda r, n=n: argmax_classes(r.at_lookahead[n]))["f1"]  # type: ignore[misc]
        for bound in (4, 8):
            for least in (0, 1, 2):
                for threshold in (0.02, 0.05, 0.1, 0.2, 0.3):
                    decided = [dynamic_classes(r, bound, threshold, least) for r in readings]
                    gold = [mark_class(MODEL_MARKS[x]) for r in readings for x in r.document.labels]
                    guessed = [c for classes, _ in decided for c in classes]
                    waited = [w for _, ws in decided for w in ws]
                    row[f"dynamic_bound{bound}_least{least}_h{threshold}"] = {
                        "f1": punctuation_scores(gold, guessed, digits=2)["overall"]["f1"],  # type: ignore[index]
                        "mean_words": round(float(np.mean(waited)), 2),
                    }
        result[f"context_tokens_{budget}"] = row
        print(budget, json.dumps(row), file=sys.stderr)
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SHARED_DATA)
    parser.add_argument("--model")
    parser.add_argument("--threads", type=int, default=1, help="model threads (default 1)")
    parser.add_argument("--int8", action="store_true", help="the int8 model, as `punctum stream --int8`")
    parser.add_argument(
        "--context-tokens", type=int, default=CONTEXT_TOKENS, help="window size (default: the stream's)"
    )
    parser.add_argument("--tune", action="store_true", help="the dev-set sweep behind the constants")
    parser.add_argument("--budgets", type=int, nargs="*", default=[48, CONTEXT_TOKENS, 190])
    args = parser.parse_args()
    if not (args.data / "iwslt2011").is_dir() or not (args.data / "earnings22").is_dir():
        print(f"bench_stream: no shared data at {args.data} (set PUNCTUM_DATA); skipped", file=sys.stderr)
        return 3
    punctuator = Punctuator(args.model, quantize=args.int8, threads=args.threads)
    if args.tune:
        print(json.dumps(tune(args.data, punctuator, args.budgets), indent=2))
    else:
        print(json.dumps(benchmark(args.data, punctuator, args.context_tokens), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
