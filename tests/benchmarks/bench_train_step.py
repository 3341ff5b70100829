"""Training speed on this CPU: steps and tokens per second of real training steps (forward,
backward, optimizer) of the shipped model, continued with its LoRA adapters learning or with the
encoder's matrices learning themselves (``full_layers``), with float32 or bfloat16 matrix products
(autocast). The four are timed in alternating rounds in this one run, so their ratios hold on a
busy machine; absolute figures do not. Prints JSON, with the CPU's AVX flags (a CPU without
AVX-512 BF16 emulates bfloat16).

Text: the bundled sample's reference transcript, repeated; speed does not depend on the words.
Run: `.venv/bin/python -m tests.benchmarks.bench_train_step [--steps 10] [--rounds 3]`
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from app.core.bundled import sample_dir, shipped_model_dir
from app.ml.windows import encode_words
from app.training import data as corpora
from app.training.config import TrainConfig
from app.training.optimisation import Stepper, parameter_groups, run_model
from app.training.sampling import EncodedDocument, Sampler
from tests.benchmarks import cpu_flags

MODES = {
    "lora_float32": {"full_layers": False, "bf16": False},
    "lora_bfloat16": {"full_layers": False, "bf16": True},
    "full_float32": {"full_layers": True, "bf16": False},
    "full_bfloat16": {"full_layers": True, "bf16": True},
}


def stepper(mode: dict[str, bool], text: corpora.LabelledText) -> Stepper:
    config = TrainConfig(
        output=Path("unused"),
        data_root=Path("unused"),
        init_from=shipped_model_dir(),
        frozen_layers=3,
        gap_branch=True,
        gap_context=7,
        lr_adapters=2.5e-4,
        lr_encoder=3e-5,
        **mode,
    )
    model, tokenizer, _ = run_model(config, False, lambda _: None)
    document = EncodedDocument(text, encode_words(tokenizer, text.words), casing=text.casing)
    sampler = Sampler([(1.0, [document])], config.window_tokens - 2, seed=1)
    layers = int(model.encoder.config.num_hidden_layers)
    optimizer = torch.optim.AdamW(parameter_groups(model, config, layers), weight_decay=config.weight_decay)
    model.train()
    return Stepper(model, tokenizer, optimizer, sampler, config)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10, help="timed steps per mode and round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    reference = (sample_dir() / "reference.txt").read_text(encoding="utf-8")
    text = corpora.from_punctuated_text(" ".join([reference] * 20), "en", "sample")
    steppers = {name: stepper(mode, text) for name, mode in MODES.items()}
    for step_once in steppers.values():  # warm-up: first steps allocate and pick kernels
        for step in range(2):
            step_once(step, 0.0)
    seconds: dict[str, list[float]] = {name: [] for name in MODES}
    for _ in range(args.rounds):
        for name, step_once in steppers.items():
            started = time.perf_counter()
            for step in range(args.steps):
                step_once(step + 100, 0.0)
            seconds[name].append((time.perf_counter() - started) / args.steps)
    # Every step draws batch_size windows of the whole window (the text is longer than one).
    tokens = TrainConfig(output=Path("x"), data_root=Path("x")).batch_size * 192
    result: dict[str, object] = {
        "cpu_avx_flags": cpu_flags(),
        "threads": torch.get_num_threads(),
        "tokens_per_step": tokens,
    }
    for name, times in seconds.items():
        median = statistics.median(times)
        result[name] = {"seconds_per_step": round(median, 3), "tokens_per_second": round(tokens / median)}
    lora = statistics.median(seconds["lora_float32"])
    result["ratios_to_lora_float32"] = {
        name: round(lora / statistics.median(times), 2) for name, times in seconds.items()
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
