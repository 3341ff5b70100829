"""Export a punctuation model for ONNX Runtime, once per model (see ``app.ml.runtime``).

The adapters are merged into the encoder and the whole forward pass (encoder, layer mix, heads,
gap and timing branches) becomes one graph. Each export is checked against the torch model on
inputs of other sizes than it was traced with.

``python -m app.ml.export [MODEL_DIR] [--int8]`` exports the shipped model (set-up does this): the
float graph (the default precision, and all a package ships) and, with ``--int8``, the int8 one
(``app.ml.quantize``) beside it.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from app.ml.base_encoder import publish, staging_folder
from app.ml.model import PunctuationModel, batch_tensors
from app.ml.packaging import ModelError, load_model
from app.ml.quantize import float16_matrices, int8_embeddings, int8_rows, quantize_graph, storable_in_float16
from app.ml.runtime import (
    EXPORT_FORMAT,
    PACKAGED_EXPORT,
    RUNTIME_NAME,
    SHIPPED_MODEL,
    TOKENIZER_NAME,
    data_name,
    graph_name,
    has_export,
    model_digest,
    open_export,
    runtime_dir,
)
from app.ml.vocabulary import VOCABULARY_NAME, VocabularyError, compact_tokenizer, read_vocabulary
from app.ml.windows import GAP_INPUTS, MODEL_INPUTS, SpecialTokens, WindowBatch

#: The largest difference in logits an export may show against the torch model.
TOLERANCE = 1e-3
_OPSET = 17


def _example(network: PunctuationModel, rows: int, tokens: int, words: int, seed: int) -> WindowBatch:
    """Random inputs of the given sizes, with about half the gaps present and a row shorter than
    the others."""
    generator = np.random.default_rng(seed)
    last = np.sort(generator.integers(1, tokens - 2, (rows, words)), axis=1)
    batch = WindowBatch(
        input_ids=generator.integers(5, 1000, (rows, tokens)).astype(np.int64),
        attention_mask=np.ones((rows, tokens), dtype=np.int64),
        first_index=last.copy(),
        last_index=last,
        next_index=last + 1,
        word_mask=np.ones((rows, words), dtype=bool),
    )
    batch.attention_mask[-1, tokens - 3 :] = 0
    if network.gap_branch is not None:
        batch.gap_features = generator.normal(size=(rows, words, network.gap_branch.features)).astype(
            np.float32
        )
        batch.gap_present = generator.random((rows, words)) < 0.5
    return batch


def _graph_inputs(network: PunctuationModel, batch: WindowBatch) -> dict[str, torch.Tensor]:
    names = (*MODEL_INPUTS, *GAP_INPUTS) if network.gap_branch is not None else MODEL_INPUTS
    return {name: torch.from_numpy(getattr(batch, name)) for name in names}


_DYNAMIC_AXES = {
    **{name: {0: "rows", 1: "tokens"} for name in ("input_ids", "attention_mask")},
    **{name: {0: "rows", 1: "words"} for name in (*MODEL_INPUTS[2:], *GAP_INPUTS, "marks", "casing")},
}


def _export_graph(network: PunctuationModel, path: Path, attention: str = "eager") -> None:
    # Written-out attention: ONNX Runtime's optimiser fuses it into its Attention kernel, which
    # it does not do with the traced scaled-dot-product form (NaN guards: IsNaN, Where).
    encoder: Any = network.encoder
    encoder.set_attn_implementation(attention)
    inputs = _graph_inputs(network, _example(network, rows=2, tokens=24, words=7, seed=1))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on Python values it keeps constant
        export: Any = torch.onnx.export
        export(
            network,  # traced in eval mode (the exporter's default), where dropout exports as nothing
            tuple(inputs.values()),
            str(path),
            input_names=list(inputs),
            output_names=["marks", "casing"],
            dynamic_axes={name: _DYNAMIC_AXES[name] for name in [*inputs, "marks", "casing"]},
            opset_version=_OPSET,
            dynamo=False,
        )


_PLAIN_NAME = "model-plain.onnx"


def _fuse_graph(
    network: PunctuationModel, source: Path, target: Path, int8_table: bool = True, float16: bool = True
) -> None:
    """The graph with ONNX Runtime's transformer fusions (attention, skip layer norms, bias with
    GELU), made once here rather than looked for at every start, and its weights in a file of
    their own (``data_name``), which ONNX Runtime maps into memory rather than copying: a session
    starts in 0.1 s instead of 0.5 s and holds only the pages it reads (of the embedding table,
    the rows of the words it met). With both, float runs 1.21x as fast as the traced graph did
    (``tests/benchmarks/bench_punctuate.py``). Where the optimiser fails (an encoder it does not
    know), the plain graph is kept, its weights beside it all the same.

    ``int8_table``: the word-embedding table, 73% of the float weights, as int8 rows with a
    scale each (``app.ml.quantize.int8_embeddings``). A lookup loses nothing to speak of by it
    (``tests/benchmarks/eval_runtime.py``: F1 within 0.1 on every set) and the export is a third
    of the size. ``float16``: every other weight matrix stored in float16, computed in float32
    (``app.ml.quantize.float16_matrices``): 87 -> 43 MB more."""
    import onnx

    encoder: Any = network.encoder
    config = encoder.config
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)  # the optimiser's notes on each fusion it tried
    try:
        from onnxruntime.transformers import optimizer
        from onnxruntime.transformers.fusion_options import FusionOptions

        options = FusionOptions("bert")
        # The word-embedding table stays a plain Gather, so that it can be held as int8 rows
        # (``int8_table``); fusing it saves under 1% of a run.
        options.enable_embed_layer_norm = False
        # Without its symbolic shape inference the fusions are the same, a few shape computations
        # (Reshape, Concat, Slice) are left unfolded, and the shipped model's outputs are equal to
        # the last bit on 3,000 words and as fast; preparing it takes 18 s instead of 32 s.
        options.enable_shape_inference = False
        fused = optimizer.optimize_model(
            str(source),
            model_type="bert",
            num_heads=int(config.num_attention_heads),
            hidden_size=int(config.hidden_size),
            opt_level=1,
            optimization_options=options,
        )
    except Exception:  # an optional speed-up: the plain graph is as right
        fused = None
    finally:
        logging.disable(previous)
    graph = onnx.load(str(source)) if fused is None else fused.model
    if int8_table:
        int8_embeddings(graph)
    if float16:
        float16_matrices(graph)
    if fused is None:
        onnx.save_model(graph, str(target), save_as_external_data=True, location=data_name(target.name))
    else:
        fused.save_model_to_file(str(target), use_external_data_format=True)


def round_weights_as_exported(network: PunctuationModel) -> None:
    """Give the torch model the weights the float graph holds (``_fuse_graph``): the word-embedding
    table's int8 rows times their scales, every other matrix rounded to float16."""
    encoder: Any = network.encoder
    table = encoder.get_input_embeddings().weight
    rows, scales = int8_rows(table.detach().numpy())
    with torch.no_grad():
        table.copy_(torch.from_numpy(rows.astype(np.float32) * scales))
        for parameter in network.parameters():
            if parameter is not table and storable_in_float16(parameter.detach().numpy()):
                parameter.copy_(parameter.to(torch.float16).to(torch.float32))


def _check_export(network: PunctuationModel, model_dir: Path, int8: bool) -> float:
    """The largest logit difference between the cache's export and the torch model, on sizes unlike
    the traced ones."""
    runtime = open_export(model_dir, int8=int8, folder=runtime_dir(model_dir))
    worst = 0.0
    for rows, tokens, words, seed in ((3, 31, 9, 2), (1, 12, 4, 3)):
        batch = _example(network, rows, tokens, words, seed)
        with torch.inference_mode():
            expected = network(**batch_tensors(batch))
        got = runtime.run(batch)
        for want, have in zip(expected, got, strict=True):
            worst = max(worst, float(np.abs(want.numpy() - have).max()))
    return worst


def _compact_vocabulary(network: PunctuationModel, tokenizer: Any, model_dir: Path, target: Path) -> int:
    """Write the export's tokenizer to ``target``, cut to the model's vocabulary list when it has
    one (``app.ml.vocabulary``), and cut the encoder's word embeddings to match; the pieces kept."""
    if not (model_dir / VOCABULARY_NAME).is_file():
        tokenizer.backend_tokenizer.save(str(target))
        return int(tokenizer.backend_tokenizer.get_vocab_size())
    full = json.loads(tokenizer.backend_tokenizer.to_str())
    try:
        kept = read_vocabulary(model_dir / VOCABULARY_NAME)
        compact = compact_tokenizer(full, kept)
    except (VocabularyError, OSError, KeyError) as error:
        raise ModelError(f"{model_dir / VOCABULARY_NAME}: {error}") from None
    encoder: Any = network.encoder
    embeddings: Any = encoder.get_input_embeddings()
    rows = embeddings.weight.detach()[torch.tensor(kept)]
    cut = nn.Embedding(len(kept), rows.shape[1], padding_idx=embeddings.padding_idx)
    cut.weight.data.copy_(rows)
    encoder.set_input_embeddings(cut)
    target.write_text(json.dumps(compact, ensure_ascii=False), encoding="utf-8")
    return len(kept)


def runtime_shape(
    network: PunctuationModel, tokenizer: Any, vocabulary: int, model_dir: Path
) -> dict[str, Any]:
    """What ``runtime.json`` tells the runner about an export of ``model_dir``."""
    return {
        "format": EXPORT_FORMAT,
        "special": SpecialTokens.of(tokenizer).__dict__,
        "marks": network.mark_head.out_features,
        "casings": network.casing_head.out_features,
        "gap_features": network.gap_branch.features if network.gap_branch is not None else 0,
        "vocabulary": vocabulary,
        "source": str(model_dir.resolve()),
        "model": model_digest(model_dir),
    }


def export_model(model_dir: Path, int8: bool = False, log: Any = None) -> Path:
    """Export ``model_dir`` into the runtime cache unless it is there; its folder."""
    target = runtime_dir(model_dir)
    if has_export(target, int8):
        return target
    started = time.perf_counter()
    if log:
        log(f"preparing the model for fast starts (once): {model_dir}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Transformers' notes on deprecated names are for developers
        network, tokenizer, _ = load_model(model_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_folder(target)
    if target.is_dir():
        shutil.copytree(target, staging)  # an int8 graph joins an existing export
    else:
        staging.mkdir()
    try:
        vocabulary = _compact_vocabulary(network, tokenizer, model_dir, staging / TOKENIZER_NAME)
        if not (staging / graph_name(False)).is_file():
            _export_graph(network, staging / _PLAIN_NAME)
            _fuse_graph(network, staging / _PLAIN_NAME, staging / graph_name(False))
            (staging / _PLAIN_NAME).unlink()
        if int8:
            quantize_graph(staging / graph_name(False), staging / graph_name(True))
        shape = runtime_shape(network, tokenizer, vocabulary, model_dir)
        (staging / RUNTIME_NAME).write_text(json.dumps(shape, indent=2) + "\n")
        publish(staging, target, Path.is_dir)  # a concurrent export that won is kept
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    # The check is that the graph computes what the model does, so the model gets the graph's
    # rounded weights: the table's rounding alone moves logits by up to 0.06 on these random inputs, above
    # TOLERANCE, and what it costs is measured in F1 (``tests/benchmarks/eval_runtime.py``).
    round_weights_as_exported(network)
    difference = _check_export(network, model_dir, False)
    if difference > TOLERANCE:
        shutil.rmtree(target, ignore_errors=True)
        raise ModelError(f"{model_dir}: the ONNX export differs from the model by {difference:.2g}")
    _remove_replaced(target)
    if log:
        log(f"model ready in {time.perf_counter() - started:.0f} s ({target})")
    return target


def _remove_replaced(target: Path) -> None:
    """Exports made earlier from the same model folder: that folder now holds other weights, and
    each export takes hundreds of megabytes."""
    source = json.loads((target / RUNTIME_NAME).read_text(encoding="utf-8")).get("source")
    for other in target.parent.iterdir():
        if other == target or other.name.startswith(".") or not (other / RUNTIME_NAME).is_file():
            continue
        try:
            if json.loads((other / RUNTIME_NAME).read_text(encoding="utf-8")).get("source") == source:
                shutil.rmtree(other, ignore_errors=True)
        except (OSError, ValueError):
            continue


def package_export(model_dir: Path, into: Path) -> Path:
    """A copy of ``model_dir``'s float export as ``into/export``: what a wheel or a bundle ships in
    the model's folder, so that it never exports at run time (and needs no torch). One precision
    only, the default: the int8 graph would add 104 MB for a rarely asked-for option, which the
    user's cache gets on request (``--int8``, with torch installed)."""
    folder = export_model(model_dir)
    target = into / PACKAGED_EXPORT
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    float_graph = graph_name(False)
    for name in (float_graph, data_name(float_graph), TOKENIZER_NAME, RUNTIME_NAME):
        shutil.copy2(folder / name, target / name)
    shape = json.loads((target / RUNTIME_NAME).read_text(encoding="utf-8"))
    shape["source"] = "packaged"  # not the build machine's path
    (target / RUNTIME_NAME).write_text(json.dumps(shape, indent=2) + "\n")
    return target


def main(argv: list[str] | None = None) -> int:
    """Export a model (the shipped one by default) into the runtime cache."""
    from app.core.errors import PunctumError

    args = sys.argv[1:] if argv is None else argv
    folders = [Path(a) for a in args if not a.startswith("--")]
    model_dir = folders[0] if folders else SHIPPED_MODEL
    if not (model_dir / "punctum-model.json").is_file():
        print(f"punctum: {model_dir}: not a Punctum model folder", file=sys.stderr)
        return 1
    try:
        path = export_model(model_dir, int8="--int8" in args, log=print)
    except PunctumError as error:
        print(f"punctum: {error}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
