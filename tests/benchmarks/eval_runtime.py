"""The runtime's ways of running the shipped model, scored on every evaluation set in one run:
float with the encoder's whole vocabulary (the export as it was before the compact vocabulary),
float with the model's compact vocabulary, and int8 with it. Prints JSON: overall F1 per set and
way, each way's difference from the first, whether every set is within the goals, and how many
distinct words of each set the compact vocabulary cuts otherwise than the whole one.

Goals: compact vocabulary within 0.1 F1 of the whole one on every set; int8 within 0.3 of float
(whole vocabulary) on every set, for int8 to be the default.
Sets: IWSLT2011 test2011 and test2011asr, IWSLT17 tst2016 en/de/fr, each UD test half, the
Earnings-22 test calls with and without their word timings.
Run: `.venv/bin/python -m tests.benchmarks.eval_runtime [--data DIR] [--only SET ...]`
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from app.ml.runtime import SHIPPED_MODEL, forget_export
from app.ml.vocabulary import VOCABULARY_NAME
from app.services.model import Punctuator
from app.training.evaluation import score_documents
from tests.benchmarks import cpu_flags
from tests.benchmarks.eval_model import benchmarks
from tests.conftest import SHARED_DATA

TEST_SETS = (
    "iwslt2011_test2011",
    "iwslt2011_test2011asr",
    "iwslt17_tst2016_en",
    "iwslt17_tst2016_de",
    "iwslt17_tst2016_fr",
    "ud_test_de",
    "ud_test_fr",
    "ud_test_es",
    "ud_test_pt",
    "ud_test_nl",
    "ud_test_ro",
    "earnings22_test_calls",
)
VOCABULARY_GOAL = 0.1
INT8_GOAL = 0.3


def _scores(punctuator: Punctuator, sets: dict[str, list]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for name, documents in sets.items():
        timed = name.startswith("earnings22")
        for timings in (True, False) if timed else (True,):
            key = name if timings else f"{name}_without_timings"
            result = score_documents(documents, punctuator, timings=timings, digits=2)
            scores[key] = float(result["scores"]["overall"]["f1"])
            print(key, scores[key], file=sys.stderr)
    return scores


def words_cut_differently(sets: dict[str, list]) -> dict[str, int]:
    """Per set, the words the export's compact tokenizer cuts otherwise than the base encoder's."""
    from tokenizers import Tokenizer

    from app.ml.base_encoder import base_encoder_dir
    from app.ml.runtime import TOKENIZER_NAME, runtime_dir

    whole = Tokenizer.from_file(str(base_encoder_dir() / "tokenizer.json"))
    compact = Tokenizer.from_file(str(runtime_dir(SHIPPED_MODEL) / TOKENIZER_NAME))
    counts = {}
    for name, documents in sets.items():
        words = sorted({w for d in documents for w in d.words})
        pairs = zip(
            whole.encode_batch(words, add_special_tokens=False),
            compact.encode_batch(words, add_special_tokens=False),
            strict=True,
        )
        counts[name] = sum(1 for a, b in pairs if a.tokens != b.tokens)
    return counts


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(SHARED_DATA))
    parser.add_argument("--only", nargs="*", help="set names to run")
    args = parser.parse_args()
    root = Path(args.data)
    if not root.is_dir():
        print(f"eval_runtime: no data folder at {root}", file=sys.stderr)
        return 3
    sets = {k: v for k, v in benchmarks(root).items() if k in TEST_SETS and (not args.only or k in args.only)}
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="punctum-whole-vocabulary-") as scratch:
        whole = Path(scratch) / "model"
        shutil.copytree(SHIPPED_MODEL, whole, ignore=shutil.ignore_patterns(VOCABULARY_NAME))
        try:
            print("float, whole vocabulary", file=sys.stderr)
            results["float_whole_vocabulary"] = _scores(
                Punctuator(whole, quantize=False, log=lambda _: None), sets
            )
        finally:
            forget_export(whole)
    print("float, compact vocabulary", file=sys.stderr)
    results["float_compact"] = _scores(Punctuator(quantize=False), sets)
    print("int8, compact vocabulary", file=sys.stderr)
    results["int8_compact"] = _scores(Punctuator(quantize=True), sets)
    base = results["float_whole_vocabulary"]
    differences = {
        way: {name: round(score - base[name], 2) for name, score in scores.items()}
        for way, scores in results.items()
        if way != "float_whole_vocabulary"
    }
    worst = {way: min(values.values()) for way, values in differences.items()}
    print(
        json.dumps(
            {
                "benchmark": "runtime precision and vocabulary",
                "cpu_avx_flags": cpu_flags(),
                "f1_overall": results,
                "difference_from_float_whole_vocabulary": differences,
                "worst_difference": worst,
                "distinct_words_cut_differently_by_the_compact_vocabulary": words_cut_differently(sets),
                "compact_within_goal": all(
                    abs(d) <= VOCABULARY_GOAL for d in differences["float_compact"].values()
                ),
                "int8_within_goal": worst["int8_compact"] >= -INT8_GOAL,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
