"""The runtime's ways of running the shipped model, scored on every evaluation set in one run.
Prints JSON: overall F1 per set and way, each way's difference from today's float graph and from
the whole vocabulary, whether every set is within the goals, each way's seconds over all sets, and
how many distinct words of each set the compact vocabulary cuts otherwise than the whole one.

Ways (``--ways``, default all): ``float`` as shipped (compact vocabulary, the word-embedding table
in int8 rows with a scale each, every other matrix stored in float16 and computed in float32);
``float32_table`` and ``float16_table``, that graph with every weight in float32 (the float export
before export format 5) and with only the table in float16 (read through a Cast), made here in a
scratch folder; ``float_whole_vocabulary``, the
export of the model without its vocabulary list; ``int8``, the int8 graph.

Goals: the table's int8 rows (and float16) within 0.1 F1 of the float32 table on every set; the
compact vocabulary within 0.1 of the whole one; int8 within 0.3 of the float32 table, for int8 to
be the default.
Sets: IWSLT2011 test2011 and test2011asr, IWSLT17 tst2016 en/de/fr, each UD test half, the
Earnings-22 test calls with and without their word timings.
Run: `.venv/bin/python -m tests.benchmarks.eval_runtime [--ways WAY ...] [--data DIR] [--only SET ...]`
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

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
TABLE_GOAL = 0.1
VOCABULARY_GOAL = 0.1
INT8_GOAL = 0.3
WAYS = ("float32_table", "float", "float16_table", "float_whole_vocabulary", "int8")


def _scores(punctuator: Any, sets: dict[str, list]) -> tuple[dict[str, float], float]:
    """Overall F1 per set (Earnings-22 with and without its timings), and the seconds they took."""
    scores: dict[str, float] = {}
    seconds = 0.0
    for name, documents in sets.items():
        timed = name.startswith("earnings22")
        for timings in (True, False) if timed else (True,):
            key = name if timings else f"{name}_without_timings"
            result = score_documents(documents, punctuator, timings=timings, digits=2)
            scores[key] = float(result["scores"]["overall"]["f1"])
            seconds += float(result["seconds"])
            print(key, scores[key], file=sys.stderr)
    return scores, round(seconds, 1)


def float16_table(source: Path, target: Path) -> None:
    """``source``'s graph with its word-embedding table in float16, each row read back to float32."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from app.ml.runtime import data_name

    graph = onnx.load(str(source))
    tables = {t.name: t for t in graph.graph.initializer if t.data_type == TensorProto.FLOAT}
    for position, node in enumerate(graph.graph.node):
        if node.op_type == "Gather" and node.input[0] in tables and node.input[1] == "input_ids":
            table = tables[node.input[0]]
            half = numpy_helper.to_array(table).astype(np.float16)
            graph.graph.initializer.remove(table)
            graph.graph.initializer.append(numpy_helper.from_array(half, f"{table.name}.float16"))
            output = node.output[0]
            node.input[0], node.output[0] = f"{table.name}.float16", f"{output}.float16"
            cast = helper.make_node("Cast", [f"{output}.float16"], [output], to=TensorProto.FLOAT)
            graph.graph.node.insert(position + 1, cast)
            break
    else:
        raise ValueError(f"{source}: no word-embedding table")
    onnx.save_model(graph, str(target), save_as_external_data=True, location=data_name(target.name))


def table_exports(model_dir: Path, scratch: Path) -> dict[str, Path]:
    """Export folders of ``model_dir`` in ``scratch`` like the shipped float one (compact
    vocabulary, fused graph) but for the word-embedding table: float32 (``float32_table``) and
    float16 (``float16_table``)."""
    from app.ml.export import _compact_vocabulary, _export_graph, _fuse_graph, runtime_shape
    from app.ml.packaging import load_model
    from app.ml.runtime import RUNTIME_NAME, TOKENIZER_NAME, graph_name

    network, tokenizer, _ = load_model(model_dir)
    folders = {way: scratch / way for way in ("float32_table", "float16_table")}
    for folder in folders.values():
        folder.mkdir()
    first = folders["float32_table"]
    vocabulary = _compact_vocabulary(network, tokenizer, model_dir, first / TOKENIZER_NAME)
    shape = json.dumps(runtime_shape(network, tokenizer, vocabulary, model_dir))
    _export_graph(network, scratch / "plain.onnx")
    _fuse_graph(network, scratch / "plain.onnx", first / graph_name(False), int8_table=False, float16=False)
    float16_table(first / graph_name(False), folders["float16_table"] / graph_name(False))
    for folder in folders.values():
        (folder / RUNTIME_NAME).write_text(shape)
        if folder != first:
            shutil.copy2(first / TOKENIZER_NAME, folder / TOKENIZER_NAME)
    return folders


def _ready(model: Any) -> Any:
    """A loaded model as ``score_documents`` takes a punctuator."""
    return SimpleNamespace(load=lambda: model)


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
    from app.ml.runtime import OnnxModel

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(SHARED_DATA))
    parser.add_argument("--only", nargs="*", help="set names to run")
    parser.add_argument(
        "--ways", nargs="*", choices=WAYS, default=list(WAYS), help="ways to run (default all)"
    )
    args = parser.parse_args()
    root = Path(args.data)
    if not root.is_dir():
        print(f"eval_runtime: no data folder at {root}", file=sys.stderr)
        return 3
    sets = {k: v for k, v in benchmarks(root).items() if k in TEST_SETS and (not args.only or k in args.only)}
    results: dict[str, dict[str, float]] = {}
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="punctum-eval-runtime-") as scratch:
        tables = {}
        if {"float32_table", "float16_table"} & set(args.ways):
            tables = table_exports(SHIPPED_MODEL, Path(scratch))
        whole = Path(scratch) / "model"
        if "float_whole_vocabulary" in args.ways:
            shutil.copytree(SHIPPED_MODEL, whole, ignore=shutil.ignore_patterns(VOCABULARY_NAME))
        for way in args.ways:
            print(way, file=sys.stderr)
            if way in tables:
                punctuator = _ready(OnnxModel(SHIPPED_MODEL, folder=tables[way]))
            elif way == "float_whole_vocabulary":
                punctuator = Punctuator(whole, quantize=False, log=lambda _: None)
            else:
                punctuator = Punctuator(quantize=way == "int8")
            try:
                results[way], seconds[way] = _scores(punctuator, sets)
            finally:
                if way == "float_whole_vocabulary":
                    forget_export(whole)

    def differences(baseline: str) -> dict[str, dict[str, float]]:
        if baseline not in results:
            return {}
        base = results[baseline]
        return {
            way: {name: round(score - base[name], 2) for name, score in scores.items()}
            for way, scores in results.items()
            if way != baseline
        }

    def within(way: str, baseline: str, goal: float) -> bool | None:
        if way not in results or baseline not in results:
            return None
        return all(abs(d) <= goal for d in differences(baseline)[way].values())

    from_float32_table = differences("float32_table")
    print(
        json.dumps(
            {
                "benchmark": "runtime precision, embedding table and vocabulary",
                "cpu_avx_flags": cpu_flags(),
                "f1_overall": results,
                "difference_from_float32_table": from_float32_table,
                "worst_difference_from_float32_table": {
                    w: min(d.values()) for w, d in from_float32_table.items()
                },
                "difference_from_float_whole_vocabulary": differences("float_whole_vocabulary"),
                "seconds_over_all_sets": seconds,
                "distinct_words_cut_differently_by_the_compact_vocabulary": words_cut_differently(sets),
                "int8_row_table_within_goal": within("float", "float32_table", TABLE_GOAL),
                "float16_table_within_goal": within("float16_table", "float32_table", TABLE_GOAL),
                "compact_vocabulary_within_goal": within("float", "float_whole_vocabulary", VOCABULARY_GOAL),
                "int8_within_goal": (
                    min(from_float32_table["int8"].values()) >= -INT8_GOAL
                    if "int8" in from_float32_table
                    else None
                ),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
