"""Where the files that travel with Punctum are: the shipped model, the sample, the icon.

In a clone they are the repository's own ``models/`` and ``resources/`` folders. A wheel or a
desktop bundle carries copies inside the package (``app/_bundled``, put there by
``packaging/build_wheel.py``), found through ``importlib.resources``, so nothing depends on where
the repository was.
"""

from __future__ import annotations

from importlib import metadata, resources
from pathlib import Path

_REPOSITORY = Path(__file__).resolve().parents[2]
#: Inside the package, as a wheel or a bundle installs it.
PACKAGED = "_bundled"


def _bundled(*parts: str, repository: tuple[str, ...]) -> Path:
    packaged = resources.files("app").joinpath(PACKAGED, *parts)
    if packaged.is_dir() or packaged.is_file():
        return Path(str(packaged))
    return _REPOSITORY.joinpath(*repository)


def shipped_model_dir() -> Path:
    """The default punctuation model's folder."""
    return _bundled("models", "punctum-base", repository=("models", "punctum-base"))


def listener_dir() -> Path:
    """The listener's settings: how its reading and the text model's are combined."""
    return _bundled("models", "listener", repository=("models", "listener"))


def confidence_dir() -> Path:
    """How sure a suggestion is: the calibration fitted on the development sets."""
    return _bundled("models", "confidence", repository=("models", "confidence"))


def sample_dir() -> Path:
    """The bundled sample: a short video, its ASR captions and a reference transcript."""
    return _bundled("sample", repository=("resources", "sample"))


def icon_dir() -> Path:
    """The application icon, as SVG and PNGs of the usual sizes."""
    return _bundled("icons", repository=("resources", "icons"))


def packaged_speech_model() -> Path | None:
    """Silero's speech-activity model as a wheel or a bundle carries it (copied from the
    ``silero-vad`` package at package time, which needs torch); None in a clone."""
    packaged = resources.files("app").joinpath(PACKAGED, "vad", "silero_vad.onnx")
    return Path(str(packaged)) if packaged.is_file() else None


def packaged_whisper_model() -> Path | None:
    """The speech recogniser's model as the desktop bundle carries it (Whisper base, stored int8);
    None in a clone or a wheel, which join it from its pip packages into the cache."""
    packaged = resources.files("app").joinpath(PACKAGED, "whisper-base")
    return Path(str(packaged)) if packaged.joinpath("model.bin").is_file() else None


def packaged_language_identifier(name: str) -> Path | None:
    """py3langid's model uncompressed (``name``), as the desktop bundle carries it so that its first
    run need not decompress it; None in a clone or a wheel, which write it into the cache."""
    packaged = resources.files("app").joinpath(PACKAGED, "langid", name)
    return Path(str(packaged)) if packaged.is_file() else None


def version() -> str:
    """Punctum's version, as installed."""
    try:
        return metadata.version("punctum")
    except metadata.PackageNotFoundError:
        return "unknown"
