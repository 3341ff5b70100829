"""Build Punctum's wheel with everything it needs inside: the shipped model, the sample, the icon.

The repository keeps them in ``models/`` and ``resources/``; the wheel carries copies in
``app/_bundled``, where ``app.core.bundled`` looks first. The model goes in ready to run: its ONNX
export (float only, made here with torch) in ``export/`` beside its weights, and Silero's
speech-activity model file with its licence in ``vad/``, so the wheel runs without torch (its
``train`` extra brings torch for exporting other models, and the int8 graph that ``--int8`` asks
for). Training code (``app/training``), recipes, tests and the model's training logs stay out:
training runs from a clone. Usage: ``python packaging/build_wheel.py [OUT_DIR]`` (default ``dist/``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = {
    "models/punctum-base": ("models", "punctum-base"),
    "models/listener": ("models", "listener"),
    "models/confidence": ("models", "confidence"),
    "resources/sample": ("sample",),
    "resources/icons": ("icons",),
}
#: What the product never reads at run time.
LEFT_OUT = shutil.ignore_patterns("__pycache__", "*.pyc", "recipe", "make_sample.py", "training")


def add_runtime_files(bundled: Path) -> None:
    """The shipped model's export and the speech-activity model, into a package's ``_bundled``."""
    import importlib.metadata
    import importlib.util

    from app.ml.export import package_export

    package_export(ROOT / "models" / "punctum-base", bundled / "models" / "punctum-base")
    spec = importlib.util.find_spec("silero_vad")
    assert spec is not None and spec.submodule_search_locations, "make setup installs silero-vad"
    vad = bundled / "vad"
    vad.mkdir(parents=True, exist_ok=True)
    shutil.copy2(Path(next(iter(spec.submodule_search_locations))) / "data" / "silero_vad.onnx", vad)
    licence = importlib.metadata.distribution("silero-vad").read_text("licenses/LICENSE")
    (vad / "LICENSE").write_text(licence or "MIT (silero-vad)\n", encoding="utf-8")


def build(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="punctum-wheel-") as scratch:
        stage = Path(scratch)
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, stage / name)
        shutil.copytree(ROOT / "app", stage / "app", ignore=LEFT_OUT)
        for source, target in BUNDLED.items():
            shutil.copytree(ROOT / source, stage.joinpath("app", "_bundled", *target), ignore=LEFT_OUT)
        add_runtime_files(stage / "app" / "_bundled")
        before = set(out.glob("punctum-*.whl"))
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
             "--wheel-dir", str(out), str(stage)],
            check=True,
        )  # fmt: skip
    made = sorted(set(out.glob("punctum-*.whl")) - before) or sorted(out.glob("punctum-*.whl"))
    return made[-1]


if __name__ == "__main__":
    wheel = build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "dist")
    print(wheel)
