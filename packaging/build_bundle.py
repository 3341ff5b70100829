"""Build the desktop bundle: ``dist/Punctum-<version>-<platform>.tar.gz`` (``make package``).

PyInstaller makes a one-folder build of the ``punctum`` program (editor and command line) with
Python, Qt and its multimedia plugins, ONNX Runtime, the shipped model with its ONNX export made
here (float, the one precision shipped: ``--int8`` needs a clone or the wheel's ``train`` extra to
make its graph), Silero's speech-activity model and the sample (``packaging/punctum.spec``).
torch and Transformers stay out: the bundle never exports; training needs a clone or the wheel's
``train`` extra.
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
    shutil.copytree(ROOT / "resources" / "icons", stage / "icons")
    (stage / "VERSION").write_text(version() + "\n", encoding="utf-8")
    out.mkdir(parents=True, exist_ok=True)
    if sys.platform.startswith("linux"):
        for file in LINUX_FILES:
            shutil.copy2(ROOT / "packaging" / "linux" / file, stage / file)
        archive = out / f"{name}.tar.gz"
        with tarfile.open(archive, "w:gz", compresslevel=6) as tar:
            tar.add(stage, arcname=name)
    else:
        archive = Path(shutil.make_archive(str(out / name), "zip", work, name))
    report: dict[str, object] = {
        "archive": str(archive),
        "packed_mb": round(archive.stat().st_size / 1e6, 1),
        "unpacked_mb": round(folder_size(stage) / 1e6, 1),
    }
    addon = build_transcribe_addon(out, work, name)
    if addon is not None:
        report["transcribe_addon"] = addon
    report["build_seconds"] = round(time.perf_counter() - started)
    return report


#: What ``punctum transcribe`` needs beyond the bundle: faster-whisper, CTranslate2 and PyAV with
#: their shared libraries (the bundle has ONNX Runtime, tokenizers, huggingface_hub and tqdm).
ADDON_PACKAGES = ("faster_whisper", "ctranslate2", "av")


def build_transcribe_addon(out: Path, work: Path, name: str) -> dict[str, object] | None:
    """``<name>-transcribe.tar.gz``: unpacked over the bundle's folder it adds
    ``punctum/addons/transcribe/`` (the packages and the Whisper model, some 300 MB), which the
    bundle's program puts on its path at start; install.sh then copies it along. Kept apart so the main archive stays small."""
    import importlib.util
    from importlib import metadata

    from app.ml.whisper_model import WhisperModelError, assemble_default

    try:
        model = assemble_default()
    except WhisperModelError as error:
        print(f"build_bundle: no transcribe add-on ({error})", file=sys.stderr)
        return None
    stage = work / f"{name}-transcribe"
    shutil.rmtree(stage, ignore_errors=True)
    site = stage / name / "punctum" / "addons" / "transcribe" / "site"
    site.mkdir(parents=True)
    for package in ADDON_PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            print(f"build_bundle: no transcribe add-on ({package} is not installed)", file=sys.stderr)
            return None
        folder = Path(next(iter(spec.submodule_search_locations)))
        shutil.copytree(folder, site / package, ignore=shutil.ignore_patterns("__pycache__", "tests"))
        libraries = folder.parent / f"{package}.libs"  # auditwheel's vendored shared libraries
        if libraries.is_dir():
            shutil.copytree(libraries, site / libraries.name)
        distribution = metadata.distribution(package.replace("_", "-"))
        info = Path(str(distribution.locate_file(""))) / f"{distribution.metadata['Name'].replace('-', '_')}-{distribution.version}.dist-info"
        if info.is_dir():
            shutil.copytree(info, site / info.name)
    shutil.copytree(model, stage / name / "punctum" / "addons" / "transcribe" / "whisper-base")
    archive = out / f"{name}-transcribe.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=6) as tar:
        tar.add(stage / name, arcname=name)
    return {
        "archive": str(archive),
        "packed_mb": round(archive.stat().st_size / 1e6, 1),
        "unpacked_mb": round(folder_size(stage) / 1e6, 1),
    }


if __name__ == "__main__":
    sys.path[:0] = [str(ROOT), str(ROOT / "packaging")]
    report = build(ROOT / "dist", ROOT / "build" / "bundle")
    print(json.dumps(report))
