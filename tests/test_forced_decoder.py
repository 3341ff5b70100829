"""The listener's one-pass decoder: the recogniser's own distributions at every forced position, and
the time warping that places its words."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from app.audio.decode import decode_audio
from app.core.bundled import listener_dir
from app.ml.forced_decoder import DecoderGraphError, ForcedDecoder
from app.ml.whisper_model import load_tokenizer, whisper_model
from app.ml.word_alignment import negative_dtw
from tests.conftest import SAMPLE


def test_one_pass_reads_what_the_recogniser_reads_token_by_token() -> None:
    """Every forced position's log-probabilities, from one ONNX Runtime pass, equal CTranslate2's
    own float32 decoding of the same text, step by step (the weights are the shipped int8 model's)."""
    ctranslate2 = pytest.importorskip("ctranslate2")
    from faster_whisper.feature_extractor import FeatureExtractor

    folder = Path(whisper_model())
    recogniser = ctranslate2.models.Whisper(str(folder), device="cpu", compute_type="float32")
    tokenizer = load_tokenizer(folder)
    audio = decode_audio(SAMPLE / "sample.mp4")[: 16_000 * 12]
    features = FeatureExtractor(feature_size=80)(audio)[:, :3000]
    features = np.pad(features, ((0, 0), (0, 3000 - features.shape[1])))
    encoded = recogniser.encode(
        ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None])), to_cpu=True
    )
    start = [
        tokenizer.token_to_id(t)
        for t in ("<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>")
    ]
    forced = tokenizer.encode(
        " Welcome to the Repair Cafe. Every Saturday, a few neighbors", add_special_tokens=False
    ).ids
    rows = len(forced) + 1
    stepped = recogniser.generate(
        encoded, [start + forced], beam_size=1, max_length=2 * rows + len(start),
        return_logits_vocab=True, suppress_blank=False, suppress_tokens=[],
    )[0].logits[0][:rows]  # fmt: skip
    expected = np.stack([np.asarray(row, dtype=np.float64) for row in stepped])
    expected -= np.log(
        np.exp(expected - expected.max(1, keepdims=True)).sum(1, keepdims=True)
    ) + expected.max(1, keepdims=True)

    decoder = ForcedDecoder(folder)
    columns = sorted(set(forced) | set(range(0, 51_865, 97)))
    first = len(start) - 1
    scores = decoder.scores(
        decoder.memory(np.asarray(encoded)[0]), start + forced, columns, list(range(first, first + rows))
    )
    ours = scores.logits[first : first + rows] - scores.log_normalisers[:, None]
    assert np.abs(ours - expected[:, columns]).max() < 2e-3
    assert scores.alignment.shape == (
        8,
        len(start) + len(forced),
        1500,
    )  # Whisper base's eight alignment heads


def test_a_model_of_another_shape_is_refused_in_one_line(tmp_path: Path) -> None:
    graphs = tmp_path / "graphs"
    shutil.copytree(listener_dir(), graphs)
    shape = json.loads((graphs / "whisper-graphs.json").read_text(encoding="utf-8"))
    shape["layers"] = 4
    (graphs / "whisper-graphs.json").write_text(json.dumps(shape), encoding="utf-8")
    with pytest.raises(DecoderGraphError) as refused:
        ForcedDecoder(Path(whisper_model()), graphs=graphs)
    assert "4 layers" in str(refused.value) and "\n" not in str(refused.value)


def test_the_shipped_graphs_are_what_their_builder_makes(tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    from app.ml.whisper_graph import build, dimensions_of

    build(dimensions_of(Path(whisper_model())), tmp_path)
    for made in tmp_path.iterdir():
        assert made.read_bytes() == (listener_dir() / made.name).read_bytes(), made.name


def _plain_dtw(matrix: np.ndarray) -> list[tuple[int, int]]:
    """Dynamic time warping on the negated matrix, cell by cell, ties going along a frame."""
    rows, frames = matrix.shape
    cost = np.full((rows + 1, frames + 1), np.inf)
    cost[0, 0] = 0
    trace = np.full((rows + 1, frames + 1), -1)
    for j in range(1, frames + 1):
        for i in range(1, rows + 1):
            c0, c1, c2 = cost[i - 1, j - 1], cost[i - 1, j], cost[i, j - 1]
            if c0 < c1 and c0 < c2:
                best, step = c0, 0
            elif c1 < c0 and c1 < c2:
                best, step = c1, 1
            else:
                best, step = c2, 2
            cost[i, j] = -matrix[i - 1, j - 1] + best
            trace[i, j] = step
    trace[0, :], trace[:, 0] = 2, 1
    path, i, j = [], rows, frames
    while i > 0 or j > 0:
        path.append((i - 1, j - 1))
        i, j = (i - 1, j - 1) if trace[i, j] == 0 else (i - 1, j) if trace[i, j] == 1 else (i, j - 1)
    return path[::-1]


@pytest.mark.parametrize("shape", [(1, 1), (3, 40), (12, 30), (25, 25)])
def test_time_warping_takes_the_path_a_cell_by_cell_search_takes(shape: tuple[int, int]) -> None:
    matrix = np.random.default_rng(sum(shape)).normal(size=shape)
    assert negative_dtw(matrix) == _plain_dtw(matrix)


def test_time_warping_gives_each_token_the_frames_it_attends_to() -> None:
    matrix = np.zeros((4, 12))
    attended = (1, 4, 7, 10)
    for row, frame in enumerate(attended):
        matrix[row, frame : frame + 2] = 1.0
    path = negative_dtw(matrix)
    for row, frame in enumerate(attended):
        assert {(row, frame), (row, frame + 1)} <= set(path)
