"""Parse and write a 2-hour SRT (2,000 cues, 20,000 words), and the same captions as SCC; prints JSON.

Target: each under 300 ms on a 2-core laptop-class CPU for SRT. SCC (some 60,000 hex words, each
caption's codes read and spliced back) is reported beside it: parse, write as read, write with two
marks changed in every caption, and the read-back that says what the writing changed on screen.
Run: `make benchmark` or `.venv/bin/python -m tests.benchmarks.bench_formats`.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from app.core.model import Document
from app.formats import parse_document, read_document, render_document, srt, write_document
from app.formats.conversion import left_out

CUES, WORDS_PER_CUE, TARGET_MS = 2_000, 10, 300.0
VOCABULARY = [
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "that",
    "it",
    "is",
    "was",
    "for",
    "on",
    "are",
    "with",
    "as",
    "i",
    "his",
    "they",
    "be",
    "at",
    "one",
    "have",
    "this",
]


def make_srt(seed: int = 7) -> bytes:
    rng = random.Random(seed)
    blocks = []
    for number in range(CUES):
        start = number * 3_600  # 2,000 cues over 2 hours
        words = [rng.choice(VOCABULARY) for _ in range(WORDS_PER_CUE)]
        if number % 5 == 0:
            words[0] = "<i>" + words[0]
            words[-1] += "</i>"
        text = " ".join(words[:5]) + "\n" + " ".join(words[5:])
        blocks.append(
            f"{number + 1}\n{srt.format_time(start)} --> {srt.format_time(start + 3_400)}\n{text}\n"
        )
    return "\n".join(blocks).encode()


def best_of(runs: int, action) -> list[float]:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        action()
        times.append((time.perf_counter() - began) * 1000)
    return times


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "two-hours.srt"
        source.write_bytes(make_srt())
        document = read_document(source)
        assert document.word_count == CUES * WORDS_PER_CUE
        parse = best_of(7, lambda: read_document(source))
        write = best_of(7, lambda: write_document(document, Path(folder) / "out.srt"))
        assert (Path(folder) / "out.srt").read_bytes() == source.read_bytes()
    result = {
        "benchmark": "srt_two_hours",
        "cues": CUES,
        "words": CUES * WORDS_PER_CUE,
        "parse_ms_median": round(statistics.median(parse), 1),
        "write_ms_median": round(statistics.median(write), 1),
        "parse_ms_max": round(max(parse), 1),
        "write_ms_max": round(max(write), 1),
        "target_ms": TARGET_MS,
    }
    result["within_target"] = result["parse_ms_median"] < TARGET_MS and result["write_ms_median"] < TARGET_MS
    result["scc"] = scc_figures(document)
    print(json.dumps(result, indent=2))
    return 0


def scc_figures(subrip: Document) -> dict[str, object]:
    """The same captions as SCC (written by pycaption from the SubRip): median ms of 3 runs."""
    data = render_document(subrip, "scc").encode()
    document = parse_document(data, "scc")
    assert render_document(document).encode() == data
    parse = best_of(3, lambda: parse_document(data, "scc"))
    same = best_of(3, lambda: render_document(document))
    for cue in document.cues:
        cue.words[2] = replace(cue.words[2], mark=",")
        cue.words[-1] = replace(cue.words[-1], mark=".")
    changed = best_of(3, lambda: render_document(document))
    said = best_of(3, lambda: left_out(document, "scc"))
    return {
        "cues": len(document.cues),
        "bytes": len(data),
        "parse_ms_median": round(statistics.median(parse), 1),
        "write_as_read_ms_median": round(statistics.median(same), 1),
        "write_changed_ms_median": round(statistics.median(changed), 1),
        "changes_said_ms_median": round(statistics.median(said), 1),
    }


if __name__ == "__main__":
    sys.exit(main())
