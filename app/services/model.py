"""Finding, checking and loading a punctuation model: the shipped one, a folder or a Hugging Face id.

A model runs as its ONNX export on ONNX Runtime (made once per model, at set-up for the shipped
one, or packaged with it), so neither torch nor Transformers loads unless asked for
(``engine="torch"``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from app.core.errors import PunctumError
from app.ml.confidence import READERS_DISAGREE_CAP as READERS_DISAGREE_CAP  # re-exported for the editor
from app.ml.runtime import INT8_BY_DEFAULT as INT8_BY_DEFAULT  # re-exported for the command line
from app.ml.runtime import SHIPPED_MODEL
from app.ml.validation import ModelError

if TYPE_CHECKING:
    from app.ml.inference import LoadedModel
    from app.ml.listener import Listener
    from app.services.gap_evidence import GapEvidence


DEFAULT_MODEL = SHIPPED_MODEL


#: How a model runs: its ONNX export on ONNX Runtime, or the torch model itself.
ENGINES = ("onnx", "torch")


class ModelNotFoundError(PunctumError):
    pass


def _to_stderr(message: str) -> None:
    print(f"punctum: {message}", file=sys.stderr)


@dataclass
class Punctuator:
    """A loaded punctuation model. ``location``: a model folder (default: the shipped one).

    ``engine`` "onnx" runs the model's export, made on first use when the cache lacks it (with a
    message to ``log``); "torch" runs the torch model, adapters merged at load."""

    location: Path | str | None = None
    quantize: bool | None = None  # int8 (True) or float (False); None: the engine's default
    threads: int | None = None  # CPU threads for the model; the library's default when None
    engine: str = "onnx"
    log: Callable[[str], None] = _to_stderr
    #: Whether the text model is let go while the recogniser listens (``release_text_model``):
    #: for a process that reads one file, whose peak is then the larger of the two, not their sum.
    one_file: bool = False
    _loaded: LoadedModel | None = field(default=None, init=False, repr=False)
    _listener: Listener | None = field(default=None, init=False, repr=False)
    _directory: Path | None = field(default=None, init=False, repr=False)

    @property
    def int8(self) -> bool:
        """Whether the model runs in int8: by default on ONNX Runtime (``INT8_BY_DEFAULT``), never
        by default on torch, whose int8 is a different and less exact rounding."""
        if self.quantize is None:
            return INT8_BY_DEFAULT and self.engine == "onnx"
        return self.quantize

    def check(self) -> Path:
        """The model's folder, found and checked (settings, encoder, weights) without loading it:
        a malformed model is refused before any work."""
        if self._directory is None:
            if self.engine not in ENGINES:
                raise PunctumError(f"unknown engine {self.engine!r}: use one of {', '.join(ENGINES)}")
            self._directory = resolve_model(self.location, exported_ok=self.engine == "onnx")
        return self._directory

    def load(self) -> LoadedModel:
        if self._loaded is None:
            directory = self.check()
            if self.engine == "torch":
                from app.ml.packaging import load_torch_model, use_threads

                if self.threads:
                    use_threads(self.threads)
                self._loaded = load_torch_model(directory, quantize=self.int8)
            else:
                self._loaded = self._load_export(directory)
        return self._loaded

    def _load_export(self, directory: Path) -> LoadedModel:
        from app.ml.runtime import export_dir, forget_export, open_export

        # ``directory`` was checked by ``check``: only the export may be missing.
        _export_if_missing(directory, self.int8, self.log)
        try:
            return open_export(directory, int8=self.int8, threads=self.threads)
        except Exception as error:  # ONNX Runtime has no error type of its own for a damaged file
            if export_dir(directory, self.int8).parent == directory:
                raise ModelError(
                    f"{directory}: the model's packaged copy is damaged ({str(error)[:80]}); install Punctum again"
                ) from None
            self.log(f"the model's prepared copy is damaged ({str(error)[:80]}); preparing it again")
            forget_export(directory, self.int8)
            _export_if_missing(directory, self.int8, self.log)
            return open_export(directory, int8=self.int8, threads=self.threads)

    def release_text_model(self) -> None:
        """Let go of the text model (loaded again when next asked): while the recogniser listens
        it is idle, and on a 10-minute file it held 390 MB of the listening run's peak."""
        from app.ml.runtime import close_exports

        self._loaded = None
        close_exports()

    def listener(self) -> Listener:
        """The recogniser that listens along the words, loaded on first use and kept with the model
        (one per worker)."""
        if self._listener is None:
            from app.ml.listener import Listener

            self._listener = Listener(threads=self.threads or 0)
        return self._listener

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages the model was trained on, as its settings list them (none: unknown)."""
        return self.load().settings.languages

    @property
    def reads_timings(self) -> bool:
        """Whether the model has a gap branch, which reads the captions' timings."""
        return bool(self.load().settings.gap_features)

    def probabilities(
        self,
        words: list[str],
        language: str | None = None,
        evidence: GapEvidence | None = None,
    ) -> tuple[list[list[float]], list[list[float]]]:
        """Mark and casing probabilities per word; ``evidence`` (from ``gap_evidence``) for models
        that read timings."""
        from app.core.gap_features import restrict
        from app.ml.inference import predict_probabilities

        model = self.load()
        config = model.settings
        gaps = evidence.vectors if evidence is not None else None
        marks, casing = predict_probabilities(
            model, words, config.inference_options(language), restrict(gaps, config.gap_inputs)
        )
        return marks.tolist(), casing.tolist()


@dataclass
class ModelCache:
    """A worker's model (batch's pool, a Ray worker, the editor's background process): made for
    its first file and kept for the later ones; made again only for another model, precision or
    thread count."""

    loads: int = 0  # models made so far
    _key: tuple[str | None, bool | None, int | None] | None = field(default=None, repr=False)
    _punctuator: Punctuator | None = field(default=None, repr=False)

    def punctuator(
        self,
        location: Path | str | None,
        quantize: bool | None = None,
        threads: int | None = None,
        log: Callable[[str], None] = _to_stderr,
    ) -> Punctuator:
        key = (None if location is None else str(location), quantize, threads)
        if self._punctuator is None or key != self._key:
            self._punctuator = Punctuator(location, quantize=quantize, threads=threads, log=log)
            self._key = key
            self.loads += 1
        return self._punctuator


def prepare_model(
    location: Path | str | None, int8: bool | None = None, log: Callable[[str], None] = _to_stderr
) -> Path:
    """The model's folder, its ONNX export made first if the cache lacks it (once per model)."""
    directory = resolve_model(location, exported_ok=True)
    _export_if_missing(directory, INT8_BY_DEFAULT if int8 is None else int8, log)
    return directory


def _export_if_missing(directory: Path, int8: bool, log: Callable[[str], None]) -> None:
    """Make the ONNX export of an already checked model folder unless the cache has it."""
    from app.ml.runtime import is_exported

    if not is_exported(directory, int8):
        try:
            from app.ml.export import export_model
        except ImportError as error:  # an installation without the training packages (torch)
            raise ModelError(
                f"{directory}: this model has no prepared {'int8 ' if int8 else ''}copy, and preparing one needs"
                f" torch ({error.name} is not installed): pip install 'punctum[train]'"
            ) from None
        export_model(directory, int8=int8, log=log)


def resolve_model(location: Path | str | None, exported_ok: bool = False) -> Path:
    """A local model folder, or a Hugging Face repository id fetched on request; checked
    (``app.ml.validation``: settings, encoder and weights) before anything runs it. With
    ``exported_ok``, weights and vocabulary list with an export in the cache are not read again:
    the export was made from them after they were checked, and its name is their hash."""
    from app.ml.runtime import is_exported
    from app.ml.validation import check_encoder, check_settings, check_vocabulary, check_weights

    directory = _find_model(location)
    settings = check_settings(directory)
    encoder = check_encoder(directory, settings)
    if not (exported_ok and is_exported(directory)):  # every export has its float graph
        check_weights(directory, settings, encoder)
        check_vocabulary(directory, encoder)
    return directory


def _find_model(location: Path | str | None) -> Path:
    if location is None:
        if not DEFAULT_MODEL.is_dir():
            raise ModelNotFoundError(f"the default model is missing from {DEFAULT_MODEL}")
        return DEFAULT_MODEL
    path = Path(location).expanduser()
    if path.exists():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(str(location), allow_patterns=["*.json", "*.safetensors", "*.txt"]))
    except Exception as error:  # hub errors come in many types; the user needs one line
        said = " ".join(str(error).split())  # the hub's message runs over several lines
        raise ModelNotFoundError(f"model {location!r}: not a folder here, and the hub gave: {said}") from None
