from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.core.model import Document

# Editor tests run without a display; set before Qt is first imported.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Under pytest-xdist each worker has a core of its own; a second torch thread per worker would only
# contend for it (set before torch is first imported).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def _scratch_cache() -> None:
    """Tests write their tiny models' exports to a cache of their own, which shares the real
    one's base encoder, language identifier and shipped model export (built at set-up) through
    links."""
    import atexit
    import tempfile

    from app.ml.base_encoder import cache_root
    from app.ml.runtime import SHIPPED_MODEL, runtime_key

    real = cache_root()
    scratch = Path(tempfile.mkdtemp(prefix="punctum-test-cache-"))
    (scratch / "runtime").mkdir()
    for shared in ("encoders", "langid"):  # built at set-up, read by every test
        (real / shared).mkdir(parents=True, exist_ok=True)
        (scratch / shared).symlink_to(real / shared, target_is_directory=True)
    for recogniser in real.glob("whisper-base-*"):  # assembled at set-up; read, never written
        if not recogniser.name.endswith(".partial"):
            (scratch / recogniser.name).symlink_to(recogniser, target_is_directory=True)
    shipped = real / "runtime" / runtime_key(SHIPPED_MODEL)
    if shipped.is_dir():
        (scratch / "runtime" / shipped.name).symlink_to(shipped, target_is_directory=True)
    os.environ["PUNCTUM_CACHE"] = str(scratch)
    atexit.register(shutil.rmtree, scratch, True)


def pytest_configure(config: pytest.Config) -> None:
    # Only for a test run: the benchmarks import this module too, and use the real cache.
    _scratch_cache()


ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLE = ROOT / "resources" / "sample"


def run_punctum(*args: str, timeout: float, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """The ``punctum`` command as a user runs it (``python -m app``), in ``cwd``, its output kept
    as text; ``timeout`` (seconds) turns a hang into a failure."""
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def run_punctum_here(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """The ``punctum`` command run inside this test process (``app.cli.main``, in ``cwd``): its
    exit status, and its output as text, as ``run_punctum`` gives them. The process boundary is
    the only thing skipped: the suite starts the command hundreds of times, and each start costs
    the interpreter and the imports again. What needs a process of its own (signals, locks held by
    another process, a crash's traceback at start-up) uses ``run_punctum``."""
    import contextlib
    import io
    import traceback

    from app.cli import main

    out, err = (
        io.TextIOWrapper(io.BytesIO(), encoding="utf-8"),
        io.TextIOWrapper(io.BytesIO(), encoding="utf-8"),
    )
    before = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(list(args))
            except SystemExit as exit:  # argparse's usage errors and --help
                status = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
            except Exception:  # as Python reports an uncaught error: a traceback and status 1
                traceback.print_exc()
                status = 1
    finally:
        os.chdir(before)

    def text(stream: io.TextIOWrapper) -> str:
        stream.flush()
        return stream.buffer.getvalue().decode("utf-8").replace("\r\n", "\n")  # type: ignore[attr-defined]

    return subprocess.CompletedProcess(["punctum", *args], status, text(out), text(err))


#: The shared data folder beside the repository; PUNCTUM_DATA points elsewhere.
SHARED_DATA = Path(os.environ.get("PUNCTUM_DATA", ROOT.parent / "shared" / "data"))


def shared_data(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not present: {path}")
    return path


def cue_words(document: Document) -> tuple[list[str], list[tuple[float, float]], list[int]]:
    """A caption document's words as the listener reads them: each word's text, its cue's times in
    seconds, and its cue's number."""
    words, times, cues = [], [], []
    for number, cue in enumerate(document.cues):
        for word in cue.words:
            words.append(word.text)
            times.append((cue.start / 1000, cue.end / 1000))
            cues.append(number)
    return words, times, cues


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved tiny model that puts a period after every word and proposes no capitals of its
    own, made and prepared for ONNX Runtime once per test process for every test that runs it."""
    from app.services.model import prepare_model
    from tests.ml_fixtures import tiny_model as make_tiny_model

    model = make_tiny_model(tmp_path_factory.mktemp("tiny-model"))
    prepare_model(model, log=lambda _: None)
    return model


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


#: For the tests that still make their media by running the ffmpeg program (set-up installs it where
#: apt allows); Punctum decodes with FFmpeg's libraries in PyAV, and cut_media needs no program.
requires_ffmpeg = pytest.mark.skipif(
    shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None, reason="ffmpeg is not installed"
)


def cut_media(
    source: Path, target: Path, seconds: float | None = None, *, audio: bool = True, video: bool = True
) -> Path:
    """The first ``seconds`` of ``source`` (all of it for None) as ``target``, made with FFmpeg's
    libraries in PyAV, so the tests need no ffmpeg program. Into a container (``.mp4``, ``.mkv``...,
    chosen by the suffix) its audio and/or video streams are copied as they are, as ``ffmpeg -t
    seconds -c copy`` does: each stream's packets up to the first one decoded at ``seconds`` or
    later (by decoding time, so that a frame kept never refers to one left out). A ``.wav`` gets
    the audio as Punctum decodes it, 16 kHz mono 16-bit PCM."""
    import av

    if target.suffix.lower() == ".wav":
        return write_audio(target, decoded_audio(source, seconds))
    with av.open(str(source)) as inside, av.open(str(target), "w") as outside:
        kept = [s for s in inside.streams if (s.type == "audio" and audio) or (s.type == "video" and video)]
        copies = {s.index: outside.add_stream_from_template(s) for s in kept}
        for packet in inside.demux(kept):
            if packet.dts is None:  # the demuxer's empty packet at each stream's end
                continue
            if seconds is not None and packet.dts * packet.time_base >= seconds:
                continue
            packet.stream = copies[packet.stream.index]
            outside.mux(packet)
    return target


def decoded_audio(source: Path, seconds: float | None = None) -> np.ndarray:
    """The first ``seconds`` of ``source``'s audio as Punctum hears it: 16 kHz mono float32."""
    from app.audio.decode import stream_audio
    from app.core.audio_format import SAMPLE_RATE

    wanted = None if seconds is None else round(seconds * SAMPLE_RATE)
    chunks, held = [], 0
    for chunk in stream_audio(source, chunk_seconds=1.0):
        chunks.append(chunk)
        held += chunk.size
        if wanted is not None and held >= wanted:
            break
    return np.concatenate(chunks)[:wanted]


def write_audio(target: Path, samples: np.ndarray, codec: str | None = None, bit_rate: int = 64_000) -> Path:
    """16 kHz mono ``samples`` (float in [-1, 1]) written as ``target``: a ``.wav`` as 16-bit PCM by
    soundfile, or encoded by PyAV with ``codec`` (``"libmp3lame"``, ``"aac"``...) at ``bit_rate``.
    ``write_audio(path, np.zeros(4 * 16_000))`` is 4 s of silence."""
    from app.core.audio_format import SAMPLE_RATE

    if codec is None:
        import soundfile

        soundfile.write(str(target), samples, SAMPLE_RATE, subtype="PCM_16")
        return target
    import av

    with av.open(str(target), "w") as outside:
        stream = outside.add_stream(codec, rate=SAMPLE_RATE, layout="mono")
        stream.bit_rate = bit_rate
        frame = av.AudioFrame.from_ndarray(
            np.asarray(samples, np.float32).reshape(1, -1), format="flt", layout="mono"
        )
        frame.sample_rate = SAMPLE_RATE
        outside.mux(stream.encode(frame))
        outside.mux(stream.encode(None))
    return target


def sample_opening(folder: Path, stem: str = "talk") -> tuple[Path, Path]:
    """The sample's first 8 cues and the 23 s of its video they span, as ``stem``.srt and
    ``stem``.mp4 in ``folder``: one window for the recogniser to listen to, where the whole
    talk is three."""
    captions, media = folder / f"{stem}.srt", folder / f"{stem}.mp4"
    blocks = (SAMPLE / "sample.srt").read_text(encoding="utf-8").strip().split("\n\n")[:8]
    captions.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    cut_media(SAMPLE / "sample.mp4", media, 23)
    return captions, media


@pytest.fixture
def sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bundled sample copied to a scratch folder, with autosaves kept there too."""
    monkeypatch.setenv("PUNCTUM_DATA_DIR", str(tmp_path / "data"))
    folder = tmp_path / "sample"
    shutil.copytree(SAMPLE, folder)
    return folder
