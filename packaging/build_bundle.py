"""Build the desktop bundle: ``dist/Punctum-<version>-<platform>.tar.gz`` (``make package``).

PyInstaller makes a one-folder build of the ``punctum`` program (editor and command line) with
Python, Qt and its multimedia plugins, ONNX Runtime, the shipped model with its ONNX export made
here (float, the one precision shipped: ``--int8`` needs a clone or the wheel's ``train`` extra to
make its graph), Silero's speech-activity model, the sample, and the recogniser: faster-whisper,
CTranslate2 and PyAV (whose FFmpeg libraries decode all media) with Whisper base stored int8 as it
runs (``packaging/punctum.spec``). torch and Transformers stay out: the bundle never exports;
training needs a clone or the wheel's ``train`` extra. Debugging information some libraries
carry (CTranslate2's Python module: 68 MB of its 69) is stripped; the archive is xz-packed.
On Linux the archive adds ``install.sh`` and ``uninstall.sh`` (XDG: a menu entry, the icon, a
``punctum`` command and the .srt/.vtt/.punctum file types under ``~/.local``). Windows and macOS
builds run the same script on their own runners (``.github/workflows/bundle.yml``); there the
archive is a zip of the folder, and signing is a separate, documented step.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINUX_FILES = ("install.sh", "uninstall.sh", "punctum.desktop", "punctum-mime.xml")


def platform_tag() -> str:
    system = {"linux": "linux", "darwin": "macos", "win32": "windows"}.get(sys.platform, sys.platform)
    machine = platform.machine().lower().replace("amd64", "x86_64").replace("arm64", "aarch64")
    return f"{system}-{machine}"


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def build(out: Path, work: Path) -> dict[str, object]:
    from app.core.bundled import version

    from build_wheel import add_runtime_files

    started = time.perf_counter()
    shutil.rmtree(work / "_bundled", ignore_errors=True)
    add_runtime_files(work / "_bundled")  # where punctum.spec looks for them
    add_recogniser_model(work / "_bundled" / "whisper-base")
    add_language_identifier(work / "_bundled" / "langid")
    subprocess.run(
        [sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
         "--distpath", str(work / "dist"), "--workpath", str(work / "build"),
         str(ROOT / "packaging" / "punctum.spec")],
        check=True,
    )  # fmt: skip
    name = f"Punctum-{version()}-{platform_tag()}"
    stage = work / name
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    shutil.move(str(work / "dist" / "punctum"), stage / "punctum")
    stripped = strip_debug_information(stage / "punctum")
    shutil.copytree(ROOT / "resources" / "icons", stage / "icons")
    (stage / "VERSION").write_text(version() + "\n", encoding="utf-8")
    out.mkdir(parents=True, exist_ok=True)
    if sys.platform.startswith("linux"):
        for file in LINUX_FILES:
            shutil.copy2(ROOT / "packaging" / "linux" / file, stage / file)
        for old in out.glob(f"{name}*.tar.*"):  # an earlier build's archive (and add-on) would be found instead
            old.unlink()
        archive = out / f"{name}.tar.xz"
        with tarfile.open(archive, "w:xz", preset=6) as tar:
            tar.add(stage, arcname=name)
    else:
        archive = Path(shutil.make_archive(str(out / name), "zip", work, name))
    report: dict[str, object] = {
        "archive": str(archive),
        "packed_mb": round(archive.stat().st_size / 1e6, 1),
        "unpacked_mb": round(folder_size(stage) / 1e6, 1),
    }
    report["debug_information_stripped_mb"] = round(stripped / 1e6, 1)
    report["build_seconds"] = round(time.perf_counter() - started)
    return report


def add_recogniser_model(target: Path) -> None:
    """Whisper base as Punctum runs it (int8, the tokenizer repaired), joined from its pip halves."""
    from app.ml.whisper_model import assemble_default

    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(assemble_default(), target)


def add_language_identifier(folder: Path) -> None:
    """py3langid's model uncompressed, which a clone's set-up writes into the cache: a fresh
    install's first run would otherwise spend 0.4 s writing it (packed, it is as small as the
    package's own LZMA file, which the bundle then leaves out)."""
    from app.services.languages import identifier_copy_name, prepare

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    prepare(folder / identifier_copy_name())


def _has_debug_information(path: Path) -> bool:
    try:
        with path.open("rb") as file:
            if file.read(4) != b"\x7fELF":
                return False
    except OSError:
        return False
    sections = subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True, text=True, check=False)
    return ".debug_info" in sections.stdout


def strip_debug_information(folder: Path) -> int:
    """Remove the debugging sections of the shared libraries that carry them (only those, and only
    the debugging sections: symbols stay); how many bytes went. Without binutils, nothing."""
    if sys.platform != "linux" or shutil.which("strip") is None or shutil.which("readelf") is None:
        return 0
    saved = 0
    for path in sorted(folder.rglob("*.so*")):
        if path.is_file() and not path.is_symlink() and _has_debug_information(path):
            before = path.stat().st_size
            subprocess.run(["strip", "--strip-debug", str(path)], check=True)
            saved += before - path.stat().st_size
    return saved


if __name__ == "__main__":
    sys.path[:0] = [str(ROOT), str(ROOT / "packaging")]
    report = build(ROOT / "dist", ROOT / "build" / "bundle")
    print(json.dumps(report))
