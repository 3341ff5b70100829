"""The recogniser's model stored as it computes: int8 matrices written once, at set-up, rather than
quantized by CTranslate2 at every load. Same numbers, half the bytes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.audio.decode import decode_audio
from app.ml import whisper_model
from app.ml.ctranslate2_file import ModelFileError, read_model, write_model
from tests.conftest import SAMPLE


def _published_float16(folder: Path) -> Path:
    """The model.bin as published (float16), joined from its two pip halves."""
    halves = [part / f"model.bin.part{n}" for n, part in enumerate(whisper_model._part_dirs(), start=1)]
    with (folder / "model.bin").open("wb") as joined:
        for half in halves:
            joined.write(half.read_bytes())
    return folder / "model.bin"


def test_the_stored_int8_model_hears_exactly_what_the_float16_one_did_at_half_the_size(
    tmp_path: Path,
) -> None:
    import ctranslate2
    from faster_whisper.feature_extractor import FeatureExtractor

    stored = Path(whisper_model.whisper_model())
    manifest = json.loads((stored / whisper_model.MANIFEST).read_text(encoding="utf-8"))
    assert manifest["stored"] == "int8"
    float16 = _published_float16(tmp_path)
    assert (stored / "model.bin").stat().st_size < 0.55 * float16.stat().st_size

    # Reading and writing the file again changes no byte: the format is understood whole.
    copy = tmp_path / "copy.bin"
    write_model(read_model(float16), copy)
    assert copy.read_bytes() == float16.read_bytes()

    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        (tmp_path / name).write_bytes((stored / name).read_bytes())
    audio = decode_audio(SAMPLE / "sample.mp4")[: 16_000 * 8]
    features = FeatureExtractor()(audio)[np.newaxis, :, :3000]
    features = np.pad(features, ((0, 0), (0, 0), (0, 3000 - features.shape[2]))).astype(np.float32)
    heard = []
    for folder in (stored, tmp_path):
        model = ctranslate2.models.Whisper(str(folder), device="cpu", compute_type="int8", intra_threads=1)
        view = ctranslate2.StorageView.from_array(features)
        encoded = np.array(model.encode(view))
        prompt = [[50258, 50259, 50359, 50363]]  # start, English, transcribe, no timestamps
        result = model.generate(view, prompt, beam_size=1, return_scores=True)[0]
        heard.append((encoded, result.sequences_ids[0], result.scores[0]))
    (encoded_int8, words_int8, score_int8), (encoded_f16, words_f16, score_f16) = heard
    assert np.array_equal(encoded_int8, encoded_f16)
    assert words_int8 == words_f16 and len(words_int8) > 5
    assert score_int8 == score_f16


def test_a_file_that_is_not_a_whole_model_is_refused_with_a_reason(tmp_path: Path) -> None:
    cut = tmp_path / "model.bin"
    stored = Path(whisper_model.whisper_model()) / "model.bin"
    with stored.open("rb") as whole:
        cut.write_bytes(whole.read(5000))
    with pytest.raises(ModelFileError, match="not a whole CTranslate2 model"):
        read_model(cut)
    cut.write_bytes(b"\xff" * 64)
    with pytest.raises(ModelFileError, match="format"):
        read_model(cut)
