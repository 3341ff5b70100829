"""Build Punctum's wheel with everything it needs inside: the shipped model, the sample, the icon.

The repository keeps them in ``models/`` and ``resources/``; the wheel carries copies in
``app/_bundled``, where ``app.core.bundled`` looks first. Training recipes, tests and the model's
training logs stay out. Usage: ``python packaging/build_wheel.py [OUT_DIR]`` (default ``dist/``).
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
    "resources/sample": ("sample",),
    "resources/icons": ("icons",),
}
#: What the product never reads at run time.
LEFT_OUT = shutil.ignore_patterns("__pycache__", "*.pyc", "recipe", "make_sample.py")


def build(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="punctum-wheel-") as scratch:
        stage = Path(scratch)
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, stage / name)
        shutil.copytree(ROOT / "app", stage / "app", ignore=LEFT_OUT)
        for source, target in BUNDLED.items():
            shutil.copytree(ROOT / source, stage.joinpath("app", "_bundled", *target), ignore=LEFT_OUT)
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
