"""Word alignment speed and memory: ASR words against a reference with about 15% word errors.

Targets: 10,000 words in under 1 s and under 200 MB peak memory; 100,000 words in under 10 s.
Each size runs in a fresh process so its peak resident memory is its own. Prints JSON.
Run: `.venv/bin/python -m tests.benchmarks.bench_align`
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import time

from app.align.normalize import tokens

SIZES = {10_000: (1.0, 200.0), 100_000: (10.0, None)}


def texts(size: int, seed: int = 11) -> tuple[list[str], list[str]]:
    """A Zipf-like reference (common words repeat, as in speech) and an ASR version of it."""
    rng = random.Random(seed)
    vocabulary = [f"word{n}" for n in range(20_000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    reference = rng.choices(vocabulary, weights, k=size)
    hypothesis: list[str] = []
    for word in reference:
        roll = rng.random()
        if roll < 0.05:
            continue  # deleted
        if roll < 0.11:
            hypothesis.append(word[:-1] + "z")  # misheard
        else:
            hypothesis.append(word)
        if roll > 0.96:
            hypothesis.append("um")  # filler
    return hypothesis, reference


def run_one(size: int) -> dict[str, object]:
    from app.align.alignment import align

    hypothesis, reference = texts(size)
    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    began = time.perf_counter()
    alignment = align(hypothesis, reference)
    seconds = time.perf_counter() - began
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "words": size,
        "seconds": round(seconds, 3),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "growth_during_alignment_mb": round((peak_kb - baseline_kb) / 1024, 1),
        "word_error_rate": round(alignment.word_error_rate, 3),
        "matches": alignment.matches,
    }


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        print(json.dumps(run_one(int(sys.argv[2]))))
        return 0
    tokens("warm-up")  # import cost is not alignment cost
    results = []
    for size, (max_seconds, max_mb) in SIZES.items():
        output = subprocess.run(
            [sys.executable, "-m", "tests.benchmarks.bench_align", "--one", str(size)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        result = json.loads(output)
        result["target_seconds"] = max_seconds
        result["target_peak_mb"] = max_mb
        result["within_target"] = result["seconds"] < max_seconds and (
            max_mb is None or result["peak_rss_mb"] < max_mb
        )
        results.append(result)
    print(json.dumps({"benchmark": "word_alignment", "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
