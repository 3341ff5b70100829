"""The recogniser's decoder as two ONNX graphs without weights, for the listener's one-pass scoring.

CTranslate2 decodes a forced text a token at a time, reading every weight and the audio's keys and
values again at each step. The listener knows the whole text beforehand, so one pass over every
position gives every position's distribution (teacher forcing), and the cross-attention of the
alignment heads in the same pass places the words. Two graphs:

- ``memory``: the encoder's output (frames x width) -> each layer's cross-attention keys
  (``keys_<layer>``: heads x head width x frames, transposed for the product) and values
  (``values_<layer>``: heads x frames x head width), once per window;
- ``decoder``: the tokens' embeddings, those keys and values -> the final hidden state at every
  position, and the alignment heads' attention scores before their softmax. The output
  projection (the token embeddings, tied) is applied outside, to the columns that are read.

The graphs hold no weight: each weight is an input, which ``app.ml.forced_decoder`` gives
ONNX Runtime with every run, taken from the CTranslate2 ``model.bin`` the
recogniser loads anyway (no second copy of the model on disk). The layout is CTranslate2's
WhisperSpec: pre-norm layers, fused query-key-value projections, GELU.

Built by ``python -m app.ml.whisper_graph`` (needs the ``onnx`` package of the train extra) into
``models/listener/``, for the default recogniser's dimensions.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import onnx

    from app.ml.ctranslate2_file import ModelFile

#: The ONNX operator set the graphs use (``Gelu`` arrived in 20).
OPSET = 20
IR_VERSION = 10
LAYER_NORM_EPSILON = 1e-5
MEMORY_GRAPH = "whisper-memory.onnx"
DECODER_GRAPH = "whisper-decoder.onnx"
#: The token embeddings, which are also the output projection: kept out of the graphs, as stored
#: (int8 rows), where only the rows and columns read are made float.
EMBEDDINGS = "decoder/embeddings/weight"


@dataclass(frozen=True)
class Dimensions:
    """What the graphs are built for: a CTranslate2 Whisper decoder's shape."""

    layers: int
    heads: int
    width: int
    vocabulary: int
    positions: int
    alignment_heads: tuple[tuple[int, int], ...]  # (layer, head)

    @staticmethod
    def of_json(data: dict[str, Any]) -> Dimensions:
        """The dimensions ``build`` wrote into ``whisper-graphs.json``."""
        layers, heads, width, vocabulary, positions = (
            int(data[name]) for name in ("layers", "heads", "width", "vocabulary", "positions")
        )
        alignment = tuple((int(layer), int(head)) for layer, head in data["alignment_heads"])
        return Dimensions(layers, heads, width, vocabulary, positions, alignment)


def linear_names(layer: int) -> dict[str, str]:
    """The CTranslate2 variables of one decoder layer, by their role in the graph."""
    prefix = f"decoder/layer_{layer}"
    return {
        "self_norm": f"{prefix}/self_attention/layer_norm",
        "self_qkv": f"{prefix}/self_attention/linear_0",
        "self_out": f"{prefix}/self_attention/linear_1",
        "cross_norm": f"{prefix}/attention/layer_norm",
        "cross_query": f"{prefix}/attention/linear_0",
        "cross_kv": f"{prefix}/attention/linear_1",
        "cross_out": f"{prefix}/attention/linear_2",
        "ffn_norm": f"{prefix}/ffn/layer_norm",
        "ffn_in": f"{prefix}/ffn/linear_0",
        "ffn_out": f"{prefix}/ffn/linear_1",
    }


def weight_shapes(dims: Dimensions) -> dict[str, tuple[int, ...]]:
    """Every weight the graphs take, by its CTranslate2 name (linear weights stay
    [out, in] as stored: the graphs multiply by their transpose)."""
    width, ffn = dims.width, 4 * dims.width
    shapes: dict[str, tuple[int, ...]] = {
        EMBEDDINGS: (dims.vocabulary, width),
        "decoder/position_encodings/encodings": (dims.positions, width),
        "decoder/layer_norm/gamma": (width,),
        "decoder/layer_norm/beta": (width,),
    }
    outs = {"self_qkv": 3 * width, "self_out": width, "cross_query": width, "cross_kv": 2 * width}
    outs |= {"cross_out": width, "ffn_in": ffn, "ffn_out": width}
    for layer in range(dims.layers):
        names = linear_names(layer)
        for role in ("self_norm", "cross_norm", "ffn_norm"):
            shapes[names[role] + "/gamma"] = (width,)
            shapes[names[role] + "/beta"] = (width,)
        for role, out in outs.items():
            shapes[names[role] + "/weight"] = (out, ffn if role == "ffn_out" else width)
            shapes[names[role] + "/bias"] = (out,)
    return shapes


def memory_names(dims: Dimensions) -> list[str]:
    """The audio's keys and values, per layer: the memory graph's outputs, the decoder's inputs."""
    return [f"{kind}_{layer}" for layer in range(dims.layers) for kind in ("keys", "values")]


def memory_shapes(dims: Dimensions, layer: int) -> list[Any]:
    from onnx import TensorProto, helper

    head_width = dims.width // dims.heads
    return [
        helper.make_tensor_value_info(f"keys_{layer}", TensorProto.FLOAT, [dims.heads, head_width, "frames"]),
        helper.make_tensor_value_info(
            f"values_{layer}", TensorProto.FLOAT, [dims.heads, "frames", head_width]
        ),
    ]


def graph_weights(dims: Dimensions) -> dict[str, list[str]]:
    """The weights each graph names: the audio's keys and values are the memory graph's."""
    memory = [name for name in weight_shapes(dims) if "/attention/linear_1/" in name]
    rest = [name for name in weight_shapes(dims) if name not in memory and name != EMBEDDINGS]
    return {MEMORY_GRAPH: memory, DECODER_GRAPH: rest}


class _Graph:
    """A graph under construction: its nodes, constants and the weights it names (ONNX's
    ``helper`` makes each piece; ``onnx`` is needed only to build the graphs)."""

    def __init__(self, dims: Dimensions) -> None:
        from onnx import helper

        self.helper = helper
        self.dims = dims
        self.head_width = dims.width // dims.heads
        self.nodes: list[onnx.NodeProto] = []
        self.constants: list[onnx.TensorProto] = []
        self.used: set[str] = set()
        self.count = 0

    def op(self, kind: str, inputs: Sequence[str], output: str | None = None, **attributes: Any) -> str:
        """One node, its output named ``output`` (a graph's output) or numbered."""
        self.count += 1
        name = output or f"{kind.lower()}_{self.count}"
        self.nodes.append(self.helper.make_node(kind, list(inputs), [name], **attributes))
        return name

    def ops(self, kind: str, inputs: Sequence[str], outputs: int, **attributes: Any) -> list[str]:
        self.count += 1
        names = [f"{kind.lower()}_{self.count}_{k}" for k in range(outputs)]
        self.nodes.append(self.helper.make_node(kind, list(inputs), names, **attributes))
        return names

    def weight(self, name: str) -> str:
        self.used.add(name)
        return name

    def ints(self, values: Sequence[int]) -> str:
        from onnx import TensorProto

        self.count += 1
        name = f"ints_{self.count}"
        self.constants.append(self.helper.make_tensor(name, TensorProto.INT64, [len(values)], list(values)))
        return name

    def scalar(self, value: float) -> str:
        from onnx import TensorProto

        self.count += 1
        name = f"scalar_{self.count}"
        self.constants.append(self.helper.make_tensor(name, TensorProto.FLOAT, [], [value]))
        return name

    def linear(self, x: str, name: str) -> str:
        return self.op("Gemm", [x, self.weight(name + "/weight"), self.weight(name + "/bias")], transB=1)

    def norm(self, x: str, name: str, output: str | None = None) -> str:
        gamma, beta = self.weight(name + "/gamma"), self.weight(name + "/beta")
        return self.op("LayerNormalization", [x, gamma, beta], output, axis=-1, epsilon=LAYER_NORM_EPSILON)

    def heads(self, x: str, output: str | None = None, keys: bool = False) -> str:
        """[T, width] -> [heads, T, head width], or for ``keys`` [heads, head width, T]: keys
        transposed for the product with queries."""
        split = self.op("Reshape", [x, self.ints([0, self.dims.heads, self.head_width])])
        return self.op("Transpose", [split], output, perm=[1, 2, 0] if keys else [1, 0, 2])

    def merged(self, x: str) -> str:
        """[heads, T, head width] -> [T, width]."""
        joined = self.op("Transpose", [x], perm=[1, 0, 2])
        return self.op("Reshape", [joined, self.ints([0, self.dims.width])])

    def model(
        self, inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto], name: str
    ) -> onnx.ModelProto:
        from onnx import TensorProto

        shapes = weight_shapes(self.dims)
        helper = self.helper
        weights = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shapes[n]) for n in sorted(self.used)]
        graph = helper.make_graph(self.nodes, name, inputs + weights, outputs, initializer=self.constants)
        model: onnx.ModelProto = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION
        )
        return model


def _memory_graph(dims: Dimensions) -> tuple[_Graph, onnx.ModelProto]:
    """The memory graph: keys (transposed) and values of the audio, per layer."""
    from onnx import TensorProto, helper

    memory = _Graph(dims)
    frames = helper.make_tensor_value_info("encoded", TensorProto.FLOAT, ["frames", dims.width])
    memory_outputs = []
    for layer in range(dims.layers):
        names = linear_names(layer)
        keys, values = memory.ops(
            "Split", [memory.linear("encoded", names["cross_kv"]), memory.ints([dims.width] * 2)], 2, axis=-1
        )
        # Each layer's its own output: stacked, they would be copied once more (37 MB a window).
        memory.heads(keys, f"keys_{layer}", keys=True)
        memory.heads(values, f"values_{layer}")
        memory_outputs += memory_shapes(dims, layer)
    return memory, memory.model([frames], memory_outputs, "whisper_memory")


def _decoder_layer(decoder: _Graph, x: str, layer: int, mask: str, alignment: list[str]) -> str:
    """One decoder layer on ``x``: attention to the positions before, to the audio (the alignment
    heads' scores kept in ``alignment``), and the feed-forward block."""
    dims, names = decoder.dims, linear_names(layer)
    scale = 1.0 / float(decoder.head_width) ** 0.5
    h = decoder.norm(x, names["self_norm"])
    q, k, v = decoder.ops(
        "Split", [decoder.linear(h, names["self_qkv"]), decoder.ints([dims.width] * 3)], 3, axis=-1
    )
    q = decoder.op("Mul", [decoder.heads(q), decoder.scalar(scale)])
    scores = decoder.op("Add", [decoder.op("MatMul", [q, decoder.heads(k, keys=True)]), mask])
    attended = decoder.op("MatMul", [decoder.op("Softmax", [scores], axis=-1), decoder.heads(v)])
    x = decoder.op("Add", [x, decoder.linear(decoder.merged(attended), names["self_out"])])

    h = decoder.norm(x, names["cross_norm"])
    q = decoder.op("Mul", [decoder.heads(decoder.linear(h, names["cross_query"])), decoder.scalar(scale)])
    scores = decoder.op("MatMul", [q, f"keys_{layer}"])
    heads_here = [head for at, head in dims.alignment_heads if at == layer]
    if heads_here:
        alignment.append(decoder.op("Gather", [scores, decoder.ints(heads_here)], axis=0))
    attended = decoder.op("MatMul", [decoder.op("Softmax", [scores], axis=-1), f"values_{layer}"])
    x = decoder.op("Add", [x, decoder.linear(decoder.merged(attended), names["cross_out"])])

    h = decoder.norm(x, names["ffn_norm"])
    inner = decoder.op("Gelu", [decoder.linear(h, names["ffn_in"])])
    return decoder.op("Add", [x, decoder.linear(inner, names["ffn_out"])])


def _decoder_graph(dims: Dimensions) -> tuple[_Graph, onnx.ModelProto]:
    """The decoder graph: every position at once."""
    from onnx import TensorProto, helper

    decoder = _Graph(dims)
    inputs = [
        helper.make_tensor_value_info("embedded", TensorProto.FLOAT, ["positions", dims.width]),
        *(info for layer in range(dims.layers) for info in memory_shapes(dims, layer)),
    ]
    count = decoder.op("Slice", [decoder.op("Shape", ["embedded"]), decoder.ints([0]), decoder.ints([1])])
    zero = decoder.ints([0])
    placed = decoder.op("Slice", [decoder.weight("decoder/position_encodings/encodings"), zero, count])
    x = decoder.op("Add", ["embedded", placed])
    # The causal mask: a position sees itself and those before it.
    square = decoder.op("Concat", [count, count], axis=0)
    ones = decoder.op(
        "ConstantOfShape", [square], value=helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    )
    seen = decoder.op("Trilu", [ones], upper=0)
    mask = decoder.op("Mul", [decoder.op("Sub", [seen, decoder.scalar(1.0)]), decoder.scalar(1e9)])
    alignment: list[str] = []
    for layer in range(dims.layers):
        x = _decoder_layer(decoder, x, layer, mask, alignment)
    decoder.norm(x, "decoder/layer_norm", "hidden")
    decoder.op("Concat", alignment, "alignment_scores", axis=0)
    outputs = [
        helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["positions", dims.width]),
        helper.make_tensor_value_info(
            "alignment_scores", TensorProto.FLOAT, [len(dims.alignment_heads), "positions", "frames"]
        ),
    ]
    return decoder, decoder.model(inputs, outputs, "whisper_decoder")


def build(dims: Dimensions, folder: Path) -> None:
    """Write both graphs into ``folder``, with a ``whisper-graphs.json`` naming their dimensions."""
    import onnx

    memory, memory_model = _memory_graph(dims)
    decoder, decoder_model = _decoder_graph(dims)
    expected = graph_weights(dims)
    assert memory.used == set(expected[MEMORY_GRAPH]) and decoder.used == set(expected[DECODER_GRAPH])
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save_model(memory_model, folder / MEMORY_GRAPH)
    onnx.save_model(decoder_model, folder / DECODER_GRAPH)
    (folder / "whisper-graphs.json").write_text(json.dumps(asdict(dims), indent=1) + "\n", encoding="utf-8")


def dimensions_of(model_folder: Path, model: ModelFile | None = None) -> Dimensions:
    """The decoder's dimensions read from a CTranslate2 Whisper folder (its model.bin, unless
    ``model`` is that file already read, and its config)."""
    from app.ml.ctranslate2_file import mapped_model

    model = model or mapped_model(model_folder / "model.bin")
    shapes = {v.name: v.shape for v in model.variables}
    layers = sum(
        1 for name in shapes if name.startswith("decoder/layer_") and name.endswith("/ffn/linear_1/bias")
    )
    heads = next(int.from_bytes(v.data, "little") for v in model.variables if v.name == "decoder/num_heads")
    vocabulary, width = shapes["decoder/embeddings/weight"]
    positions = shapes["decoder/position_encodings/encodings"][0]
    config = json.loads((model_folder / "config.json").read_text(encoding="utf-8"))
    alignment = tuple((int(layer), int(head)) for layer, head in config["alignment_heads"])
    return Dimensions(layers, heads, width, vocabulary, positions, alignment)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("models/listener"))
    arguments = parser.parse_args()
    from app.ml.whisper_model import whisper_model

    build(dimensions_of(Path(whisper_model())), arguments.out)
    print(arguments.out / DECODER_GRAPH)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
