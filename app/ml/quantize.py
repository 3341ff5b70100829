"""The int8 graph of an export (``app.ml.export``), made from its fused float graph: what the
runtime runs when asked for int8 (``--int8``; see ``app.ml.runtime.INT8_BY_DEFAULT``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np


def int8_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A float table as int8 rows and one float32 scale per row (its largest value / 127)."""
    table = table.astype(np.float32)
    scales = np.abs(table).max(axis=1, keepdims=True) / np.float32(127.0)
    scales[scales == 0] = 1.0
    return np.clip(np.round(table / scales), -127, 127).astype(np.int8), scales


def _lookups(graph: Any) -> list[Any]:
    """The graph's word-embedding lookups: Gathers of an initializer by ``input_ids``."""
    return [n for n in graph.graph.node if n.op_type == "Gather" and n.input[1] == "input_ids"]


def int8_embeddings(graph: Any) -> None:
    """The word-embedding table (the Gather of a float initializer by ``input_ids``) as int8 rows
    with one scale each (``int8_rows``), turned back into float rows as they are read: a quarter
    of the bytes, and rounding of 1/254 of each row's largest value. The table is a lookup, not
    arithmetic, so the float graph keeps it this way too (``app.ml.export``); a table already in
    int8 is left as it is. ONNX Runtime's own int8 form of the table has one scale for all of
    it, which cost up to 0.4 F1."""
    from onnx import TensorProto, helper, numpy_helper

    lookups = _lookups(graph)
    kinds = {t.name: t.data_type for t in graph.graph.initializer}
    if any(kinds.get(n.input[0]) == TensorProto.INT8 for n in lookups):
        return  # done already (its row scales are a float table read by input_ids too)
    tables = {t.name: t for t in graph.graph.initializer if t.data_type == TensorProto.FLOAT}
    for position, node in enumerate(graph.graph.node):
        if node.op_type != "Gather" or node.input[0] not in tables or node.input[1] != "input_ids":
            continue
        rows, scales = int8_rows(numpy_helper.to_array(tables[node.input[0]]))
        name, output = node.input[0], node.output[0]
        graph.graph.initializer.remove(tables[name])
        graph.graph.initializer.extend(
            [numpy_helper.from_array(rows, f"{name}.int8"), numpy_helper.from_array(scales, f"{name}.scale")]
        )
        graph.graph.node.remove(node)
        replacement = [
            helper.make_node(
                "Gather", [f"{name}.int8", "input_ids"], [f"{output}.int8"], name=f"{node.name}.int8"
            ),
            helper.make_node("Cast", [f"{output}.int8"], [f"{output}.float"], to=TensorProto.FLOAT),
            helper.make_node(
                "Gather", [f"{name}.scale", "input_ids"], [f"{output}.scale"], name=f"{node.name}.scale"
            ),
            helper.make_node(
                "Mul", [f"{output}.float", f"{output}.scale"], [output], name=f"{node.name}.rows"
            ),
        ]
        for offset, added in enumerate(replacement):
            graph.graph.node.insert(position + offset, added)
        return


#: The suffix of a matrix stored in float16 (``float16_matrices``), beside the name it is read as.
FLOAT16_SUFFIX = ".float16"


def storable_in_float16(array: np.ndarray) -> bool:
    """A weight matrix (two or more axes) whose values float16 holds: not a constant of the traced
    graph such as a mask of the lowest float, which float16 would make infinite."""
    return array.ndim >= 2 and array.dtype == np.float32 and bool(np.abs(array).max(initial=0.0) < 60000.0)


def float16_matrices(graph: Any) -> None:
    """Every float32 weight matrix stored in float16 and cast back to float32 as it is read: half
    the bytes on disk. ONNX Runtime folds each cast into a float32 weight when the session starts,
    so the arithmetic is float32 as before, on weights rounded to float16's 11 bits (the export
    check and ``tests/benchmarks/eval_runtime.py`` measure what that costs)."""
    from onnx import TensorProto, helper, numpy_helper

    # The word-embedding table's row scales are a lookup like the table (``int8_embeddings``).
    lookups = {n.input[0] for n in _lookups(graph)}
    casts = []
    for initializer in list(graph.graph.initializer):
        if initializer.data_type != TensorProto.FLOAT or initializer.name in lookups:
            continue
        array = numpy_helper.to_array(initializer)
        if not storable_in_float16(array):
            continue
        name = initializer.name
        graph.graph.initializer.remove(initializer)
        graph.graph.initializer.append(
            numpy_helper.from_array(array.astype(np.float16), name + FLOAT16_SUFFIX)
        )
        casts.append(
            helper.make_node(
                "Cast", [name + FLOAT16_SUFFIX], [name], name=name + ".cast", to=TensorProto.FLOAT
            )
        )
    for position, cast in enumerate(casts):
        graph.graph.node.insert(position, cast)


def float32_matrices(graph: Any) -> None:
    """Undo ``float16_matrices``: each float16-stored matrix as a float32 initializer under the name
    it is read as (for the quantizer, which looks for weights as initializers)."""
    from onnx import TensorProto, numpy_helper

    stored = {t.name: t for t in graph.graph.initializer if t.data_type == TensorProto.FLOAT16}
    for node in list(graph.graph.node):
        if node.op_type == "Cast" and node.input[0] in stored and node.input[0].endswith(FLOAT16_SUFFIX):
            half = stored.pop(node.input[0])
            graph.graph.initializer.remove(half)
            array = numpy_helper.to_array(half).astype(np.float32)
            graph.graph.initializer.append(numpy_helper.from_array(array, node.output[0]))
            graph.graph.node.remove(node)


def quantize_graph(source: Path, target: Path) -> None:
    """int8 weights for the encoder's attention (fused or not) and matrices, but for the
    feed-forward output projections (see ``app.ml.packaging.quantized_layers`` for why those stay
    float). The embedding table has int8 rows of its own (``int8_embeddings``), as in the float graph. The small heads
    and branches stay float: they cost little and lose most from rounding.

    Unsigned weights with unsigned activations (u8u8): x86 CPUs without VNNI (AVX2, and AVX-512
    without it) multiply u8 activations by s8 weights in pairs whose 16-bit sums saturate (a test
    model's probabilities moved by up to 0.10 on an AVX2-only CPU); u8u8 products do not, so
    the full 8 bits are kept on every CPU, the same numbers on each."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(source))
    float32_matrices(graph)  # the float graph stores its matrices in float16
    int8_embeddings(graph)  # already so in an export's float graph
    chosen = [
        node.name
        for node in graph.graph.node
        if node.op_type == "Attention"
        or (
            node.op_type == "MatMul"
            and node.name.startswith("/encoder/")
            and not ("/output/dense/" in node.name and "/attention/" not in node.name)
        )
    ]
    # ONNX Runtime advises graph pre-processing on the root logger at every run; a user of
    # ``--int8`` can do nothing with that line, so it is kept off their terminal.
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        quantize_dynamic(
            graph,
            str(target),
            use_external_data_format=True,
            weight_type=QuantType.QUInt8,
            per_channel=True,
            nodes_to_quantize=chosen,
            # Shape inference cannot type the outputs of ONNX Runtime's fused operators.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        logging.disable(previous)
