"""Punctuation speed on a laptop-class CPU: words per second over a 10,000-word document with the
shipped model (its ONNX export as Punctum runs it, and the torch model; float32 and int8), peak memory, and the same pipeline with encoders the size of
xlm-roberta-base and xlm-roberta-large (random weights: speed does not depend on them), as
ratios measured in this one run. Each measurement runs in its own process. Prints JSON.

Goal: >= 1,500 words/s; peak memory <= 1.5 GB.
Run: `.venv/bin/python -m tests.benchmarks.bench_punctuate [--model DIR] [--baseline DIR] [--tables]` (a
model other than the shipped one; with --baseline, that model too, alternating with the first in
this one run, and the ratios of their speed and peak memory; with --tables, the shipped float
export, whose word-embedding table is int8 rows, against the same graph with the table in float32
and in float16, alternating the same way)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from tests.benchmarks import cpu_flags

WORDS = 10_000
COMPARE_WORDS = 2_000  # the big encoders are slow; they and the shipped one are timed on this many
SIZES = {
    "xlm-roberta-base-sized": {
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
    },
    "xlm-roberta-large-sized": {
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
    },
}


def document(count: int, seed: int = 5) -> list[str]:
    """Lowercase running text drawn from the bundled sample's vocabulary."""
    sample = Path(__file__).resolve().parents[2] / "resources" / "sample" / "reference.txt"
    vocabulary = [w.strip(".,?!:;\"'").lower() for w in sample.read_text(encoding="utf-8").split()]
    rng = random.Random(seed)
    return [rng.choice(vocabulary) for _ in range(count)]


#: The shipped model's ways of running: the ONNX export (what Punctum runs) and the torch model,
#: each in float32 and int8; and "before", float32 as the export was before the compact vocabulary
#: and the fused graph (the whole vocabulary, the graph as traced), made in a scratch folder.
SHIPPED_KINDS = {
    "shipped-before": ("onnx", False),
    "shipped": ("onnx", False),
    "shipped-int8": ("onnx", True),
    "shipped-torch": ("torch", False),
    "shipped-torch-int8": ("torch", True),
}


def measure(
    kind: str, count: int, model_dir: str | None = None, folder: str | None = None
) -> dict[str, object]:
    from app.ml.inference import predict_probabilities

    if folder:  # an export made elsewhere (``tables``)
        from app.ml.runtime import SHIPPED_MODEL, OnnxModel

        model = OnnxModel(Path(model_dir) if model_dir else SHIPPED_MODEL, threads=2, folder=Path(folder))
        options = model.settings.inference_options()
    elif kind in SHIPPED_KINDS:
        from app.services.model import Punctuator

        engine, int8 = SHIPPED_KINDS[kind]
        if kind == "shipped-before":
            model = _export_before(Path(model_dir) if model_dir else None)
        else:
            model = Punctuator(model_dir, quantize=int8, threads=2, engine=engine).load()
        options = model.settings.inference_options()
    else:
        import torch
        from transformers import AutoTokenizer, BertConfig, BertModel

        from app.ml.base_encoder import resolve_encoder
        from app.ml.model import PunctuationModel
        from app.ml.packaging import TorchModel
        from app.ml.validation import check_model
        from app.services.model import DEFAULT_MODEL

        torch.set_num_threads(2)
        tokenizer = AutoTokenizer.from_pretrained(resolve_encoder(None))
        encoder = BertModel(BertConfig(vocab_size=len(tokenizer), **SIZES[kind]), add_pooling_layer=False)
        model = TorchModel(PunctuationModel(encoder, 6).eval(), tokenizer)
        # The same windows as the shipped model, so only the encoder differs.
        options = check_model(Path(model_dir or DEFAULT_MODEL)).inference_options()
        options = dataclasses.replace(options, temperature=1.0, mark_bias=None)
    words = document(count)
    predict_probabilities(model, words[:300], options)  # warm-up
    began = time.perf_counter()
    predict_probabilities(model, words, options)
    seconds = time.perf_counter() - began
    return {
        "model": kind,
        "words": count,
        "window_tokens": options["window_tokens"],
        "stride": options["stride"],
        "window_merge": options["merge"],
        "seconds": round(seconds, 2),
        "words_per_second": round(count / seconds),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def _export_before(model_dir: Path | None) -> object:
    """The float export as it was made before this model's compact vocabulary and fused graph."""
    import atexit
    import shutil
    import tempfile

    from app.ml.export import _export_graph, runtime_shape
    from app.ml.packaging import load_model
    from app.ml.runtime import RUNTIME_NAME, SHIPPED_MODEL, TOKENIZER_NAME, OnnxModel

    model_dir = model_dir or SHIPPED_MODEL
    network, tokenizer, _ = load_model(model_dir)
    folder = Path(tempfile.mkdtemp(prefix="punctum-before-"))
    atexit.register(shutil.rmtree, folder, True)
    _export_graph(network, folder / "model.onnx", attention="sdpa")  # Transformers' default
    tokenizer.backend_tokenizer.save(str(folder / TOKENIZER_NAME))
    shape = runtime_shape(network, tokenizer, tokenizer.backend_tokenizer.get_vocab_size(), model_dir)
    (folder / RUNTIME_NAME).write_text(json.dumps(shape))
    del network
    return OnnxModel(model_dir, threads=2, folder=folder)


def run(kind: str, count: int, model_dir: str | None, folder: str | None = None) -> dict[str, object]:
    chosen = ["--model", model_dir] if model_dir else []
    if folder:
        chosen += ["--folder", folder]
    output = subprocess.run(
        [sys.executable, "-m", "tests.benchmarks.bench_punctuate", *chosen, "--one", kind, str(count)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def compare(model_dir: str | None, baseline_dir: str) -> dict[str, object]:
    """Speed and peak memory of two models, three times each, alternating so that both see the
    same machine; the medians and their ratios."""
    pairs = [(run("shipped", WORDS, model_dir), run("shipped", WORDS, baseline_dir)) for _ in range(3)]
    speed = [median([float(p[i]["words_per_second"]) for p in pairs]) for i in (0, 1)]  # type: ignore[arg-type]
    memory = [median([float(p[i]["peak_rss_mb"]) for p in pairs]) for i in (0, 1)]  # type: ignore[arg-type]
    return {
        "benchmark": "punctuate, two models",
        "model": model_dir or "shipped default",
        "baseline": baseline_dir,
        "document_words": WORDS,
        "words_per_second": {"model": speed[0], "baseline": speed[1], "ratio": round(speed[0] / speed[1], 3)},
        "peak_rss_mb": {"model": memory[0], "baseline": memory[1], "ratio": round(memory[0] / memory[1], 3)},
        "runs": [{"model": a, "baseline": b} for a, b in pairs],
    }


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def tables() -> dict[str, object]:
    """Speed and peak memory of the shipped float export (word-embedding table in int8 rows) and
    of the same graph with the table in float32 (the export before format 5) and float16, three
    times each, alternating; the medians and their ratios to float32."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="punctum-tables-") as scratch:
        # Made in a process of its own: a child started from this one would inherit its peak
        # memory (torch and the model) as its own.
        made = [sys.executable, "-m", "tests.benchmarks.bench_punctuate", "--make-tables", scratch]
        folders = json.loads(
            subprocess.run(made, capture_output=True, text=True, check=True).stdout.splitlines()[-1]
        )
        ways = {"float32_table": folders["float32_table"], "int8_rows_table": None, **folders}
        runs: dict[str, list[dict[str, object]]] = {way: [] for way in ways}
        for _ in range(3):
            for way, folder in ways.items():
                runs[way].append(run("shipped", WORDS, None, folder))
    speed = {w: median([float(r["words_per_second"]) for r in rs]) for w, rs in runs.items()}  # type: ignore[arg-type]
    memory = {w: median([float(r["peak_rss_mb"]) for r in rs]) for w, rs in runs.items()}  # type: ignore[arg-type]
    return {
        "benchmark": "punctuate, the float export's word-embedding table",
        "document_words": WORDS,
        "cpu_avx_flags": cpu_flags(),
        "words_per_second": speed,
        "speed_ratio_to_float32_table": {w: round(v / speed["float32_table"], 3) for w, v in speed.items()},
        "peak_rss_mb": memory,
        "runs": runs,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", help="a model folder other than the shipped one")
    parser.add_argument("--baseline", help="a model folder to compare speed and memory with, in this run")
    parser.add_argument(
        "--tables",
        action="store_true",
        help="the float export's embedding table: int8 rows, float32, float16",
    )
    parser.add_argument("--one", nargs=2, metavar=("KIND", "WORDS"), help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--make-tables", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make_tables:
        from app.ml.runtime import SHIPPED_MODEL
        from tests.benchmarks.eval_runtime import table_exports

        print(
            json.dumps({w: str(f) for w, f in table_exports(SHIPPED_MODEL, Path(args.make_tables)).items()})
        )
        return 0
    if args.one:
        print(json.dumps(measure(args.one[0], int(args.one[1]), args.model, args.folder)))
        return 0
    if args.tables:
        print(json.dumps(tables(), indent=2))
        return 0
    if args.baseline:
        print(json.dumps(compare(args.model, args.baseline), indent=2))
        return 0
    full = [run(kind, WORDS, args.model) for kind in SHIPPED_KINDS]
    small = run("shipped", COMPARE_WORDS, args.model)
    bigger = [run(kind, COMPARE_WORDS, args.model) for kind in SIZES]
    result = {
        "benchmark": "punctuate",
        "model": args.model or "shipped default",
        "document_words": WORDS,
        "cpu_avx_flags": cpu_flags(),
        "results": full,
        # This run's speed-ups over the float export as it was before (goal: the default >= 2x).
        "speedup_over_before": {
            r["model"]: round(float(r["words_per_second"]) / float(full[0]["words_per_second"]), 2)  # type: ignore[arg-type]
            for r in full[1:]
        },
        "goal_words_per_second": 1500,
        "goal_peak_rss_mb": 1536,
        "encoder_size_comparison": {
            "words": COMPARE_WORDS,
            "shipped": small,
            **{b["model"]: b for b in bigger},
            "speedup_over": {
                b["model"]: round(small["words_per_second"] / b["words_per_second"], 1) for b in bigger
            },  # type: ignore[operator]
        },
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
