"""Bad model folders and bad outputs, as a user meets them through the `punctum` command: each is
refused before any work (no export, no model run, nothing written), with one line on stderr and
the right exit status (2 for a usage error, 3 for a bad input)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.ml.runtime import SHIPPED_MODEL
from tests.conftest import SAMPLE, run_punctum_here

#: A refusal comes before the model loads: well under the seconds a model run takes.
QUICK_SECONDS = 15


#: The command, run in ``cwd`` (a scratch folder where an output named '-' might land).
punctum = run_punctum_here


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr


# --------------------------------------------------------------------------- 9: malformed models

Settings = dict[str, Any]


def _settings(change: Callable[[Settings], Any]) -> Callable[[Path], str]:
    """A damage that rewrites punctum-model.json with ``change`` (which edits the settings in
    place, or returns what to write instead)."""

    def damage(model: Path) -> str:
        path = model / "punctum-model.json"
        settings = json.loads(path.read_text())
        replaced = change(settings)
        path.write_text(json.dumps(settings if replaced is None else replaced))
        return str(path)

    return damage


def _weights(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], str]:
    def damage(model: Path) -> str:
        from safetensors.numpy import load_file, save_file

        path = model / "weights.safetensors"
        weights = load_file(str(path))
        change(weights)
        path.unlink()  # a copy; never write through to the shipped file
        save_file(weights, str(path))
        return str(path)

    return damage


def _encoder_folder(model: Path, files: dict[str, bytes]) -> str:
    encoder = model.parent / "encoder"
    encoder.mkdir()
    for name, content in files.items():
        (encoder / name).write_bytes(content)
    _settings(lambda s: s.update(encoder=str(encoder)))(model)
    return str(encoder)


def _nan(weights: dict[str, Any]) -> None:
    weights["mark_head.weight"][0, 0] = float("nan")


def _narrow(weights: dict[str, Any]) -> None:
    weights["mark_head.weight"] = weights["mark_head.weight"][:5].copy()


def _no_encoder(settings: Settings) -> None:
    del settings["encoder"]


MALFORMED_MODELS: dict[str, tuple[Callable[[Path], str], str]] = {
    # name: (damage, returning the path the message names; what the message says)
    "settings are a list": (_settings(lambda s: [s]), "a JSON list, not an object"),
    "lora is a string": (_settings(lambda s: s.update(lora="x")), "lora"),
    "lora rank is not a number": (_settings(lambda s: s["lora"].update(rank="abc")), "lora.rank"),
    "no encoder": (_settings(_no_encoder), "encoder"),
    "encoder folder missing": (
        _settings(lambda s: s.update(encoder="/nonexistent/punctum-encoder")),
        "/nonexistent/punctum-encoder",
    ),
    "encoder folder holds only a pickle": (
        lambda model: _encoder_folder(model, {"config.json": b"{}", "pytorch_model.bin": b"\x80\x04pickle"}),
        "pickle",
    ),
    "weights of the wrong shape": (_weights(_narrow), "mark_head.weight"),
    "NaN weights": (_weights(_nan), "not finite"),
    "temperature 0": (_settings(lambda s: s.update(temperature=0)), "temperature"),
    "window_tokens 0": (_settings(lambda s: s.update(window_tokens=0)), "window_tokens"),
    "wrong marks list": (_settings(lambda s: s.update(marks=["", ",", ".", "?"])), "marks"),
    "marks in another order": (_settings(lambda s: s.update(marks=["", ".", ",", "?", "!", ":"])), "marks"),
    "stride above 1": (_settings(lambda s: s.update(stride=2)), "stride"),
    "mark bias of the wrong length": (_settings(lambda s: s.update(mark_bias=[0.0])), "mark_bias"),
}


def _exports() -> set[str]:
    runtime = Path(os.environ["PUNCTUM_CACHE"]) / "runtime"
    return {p.name for p in runtime.iterdir()} if runtime.is_dir() else set()


@pytest.mark.skipif(not (SHIPPED_MODEL / "weights.safetensors").exists(), reason="no shipped model")
@pytest.mark.parametrize("case", list(MALFORMED_MODELS))
def test_a_malformed_model_folder_is_refused_at_once_in_one_line(case: str, tmp_path: Path) -> None:
    damage, problem = MALFORMED_MODELS[case]
    model = tmp_path / "model"
    shutil.copytree(SHIPPED_MODEL, model, ignore=shutil.ignore_patterns("recipe", "README.md"))
    named = damage(model)
    out, suggestions = tmp_path / "out.srt", tmp_path / "suggestions.json"
    exports = _exports()
    started = time.perf_counter()
    result = punctum(
        "punctuate", str(SAMPLE / "sample.srt"), "--model", str(model), "--no-audio",
        "-o", str(out), "--suggestions", str(suggestions),
    )  # fmt: skip
    seconds = time.perf_counter() - started
    assert result.returncode == 3, result.stderr
    line = _one_line(result)
    assert str(model) in line and named in line and problem in line, line
    assert seconds < QUICK_SECONDS, f"refused only after {seconds:.0f} s"
    assert not out.exists() and not suggestions.exists()
    assert _exports() == exports  # nothing was exported from it


@pytest.mark.skipif(not (SHIPPED_MODEL / "weights.safetensors").exists(), reason="no shipped model")
@pytest.mark.parametrize("engine", ["onnx", "torch"])
def test_eval_refuses_a_malformed_model_with_either_engine(engine: str, tmp_path: Path) -> None:
    model = tmp_path / "model"
    shutil.copytree(SHIPPED_MODEL, model, ignore=shutil.ignore_patterns("recipe", "README.md"))
    _settings(lambda s: s.update(window_tokens=-4))(model)
    data = tmp_path / "data.txt"
    data.write_text("So, this is a test. Is it?\n")
    result = punctum("eval", str(data), "--format", "text", "--model", str(model), "--engine", engine)
    assert result.returncode == 3, result.stderr
    assert "window_tokens" in _one_line(result)


# --------------------------------------------------------------------------- 10: outputs


def _writable(folder: Path) -> bool:
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def _read_only_folder(tmp_path: Path) -> Path:
    """A folder nobody may write in: a read-only one here, or (for root, who may write in any
    folder of a writable file system) one of the kernel's."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    if not _writable(folder):
        return folder
    for candidate in (Path("/sys/kernel"), Path("/proc")):
        if candidate.is_dir() and not _writable(candidate):
            return candidate
    pytest.skip("no read-only folder here")


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.srt"
    os.mkfifo(path)
    return path


def _device(tmp_path: Path) -> Path:
    path = tmp_path / "null.srt"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is
    except PermissionError:
        pytest.skip("making a device needs root")
    return path


def _socket(tmp_path: Path) -> Path:
    path = tmp_path / "s.srt"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
    return path


BAD_OUTPUTS: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    # name: (the options that name the outputs, given the scratch folder; what the message says)
    "read-only folder": (lambda t: ["-o", str(_read_only_folder(t) / "out.srt")], "not writable"),
    "suggestions in a read-only folder": (
        lambda t: ["--suggestions", str(_read_only_folder(t) / "s.json")],
        "not writable",
    ),
    "a Word document": (lambda t: ["-o", str(t / "x.docx")], ".docx"),
    "no extension": (lambda t: ["-o", str(t / "captions")], "extension"),
    "dash": (lambda t: ["-o", "-"], "'-'"),
    "empty name": (lambda t: ["-o", ""], "''"),
    "a FIFO": (lambda t: ["-o", str(_fifo(t))], "not a regular file"),
    "a device": (lambda t: ["-o", str(_device(t))], "not a regular file"),
    "a socket": (lambda t: ["-o", str(_socket(t))], "not a regular file"),
    "suggestions as text": (lambda t: ["--suggestions", str(t / "s.txt")], ".json"),
    "suggestions as captions": (lambda t: ["--suggestions", str(t / "s.srt")], ".json"),
}


@pytest.mark.parametrize("case", list(BAD_OUTPUTS))
def test_punctuate_checks_every_output_before_any_work(case: str, tmp_path: Path) -> None:
    options, problem = BAD_OUTPUTS[case]
    named = options(tmp_path)
    made = {p.name for p in tmp_path.iterdir()}
    specials = {p: p.lstat().st_mode for p in tmp_path.iterdir() if not p.is_dir() and not p.is_file()}
    others = ["--suggestions", str(tmp_path / "good.json")] if "--suggestions" not in named else []
    others += ["-o", str(tmp_path / "good.srt")] if "-o" not in named else []
    started = time.perf_counter()
    result = punctum("punctuate", str(SAMPLE / "sample.srt"), "--no-audio", *named, *others, cwd=tmp_path)
    seconds = time.perf_counter() - started
    assert result.returncode == 2, result.stderr
    assert problem in _one_line(result), result.stderr
    assert result.stdout == ""
    assert seconds < QUICK_SECONDS, f"refused only after {seconds:.0f} s"
    assert not (tmp_path / "good.json").exists() and not (tmp_path / "good.srt").exists()
    assert {p: p.lstat().st_mode for p in specials} == specials  # a pipe is still a pipe
    assert {p.name for p in tmp_path.iterdir()} == made  # nothing written, not even "-"


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (["-o", "{t}/x.json"], ".json"),
        (["-o", "{t}/x.docx"], ".docx"),
        (["-o", "{t}/out.srt", "--report", "{t}/report.txt"], ".txt"),
        (["-o", "{t}/out.srt", "--report", "-"], "'-'"),
        (["-o", "{t}/out.srt", "--language", "zz-notalang"], "zz-notalang"),
    ],
)
def test_transfer_refuses_bad_outputs_and_languages_as_usage_errors(
    options: list[str], problem: str, tmp_path: Path
) -> None:
    args = [o.replace("{t}", str(tmp_path)) for o in options]
    result = punctum(
        "transfer", str(SAMPLE / "reference.txt"), str(SAMPLE / "sample.srt"), *args, cwd=tmp_path
    )
    assert result.returncode == 2, result.stderr
    assert problem in _one_line(result)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("code", ["zz-notalang", "zz", "english", "e", "en_notaregion", "123"])
def test_punctuate_refuses_a_language_that_is_no_language_code(code: str, tmp_path: Path) -> None:
    out = tmp_path / "out.srt"
    started = time.perf_counter()
    result = punctum(
        "punctuate", str(SAMPLE / "sample.srt"), "--no-audio", "--language", code, "-o", str(out)
    )
    assert result.returncode == 2, result.stderr
    line = _one_line(result)
    assert repr(code) in line and "ISO 639-1" in line and " en, " in line, line
    assert time.perf_counter() - started < QUICK_SECONDS
    assert not out.exists()


def test_a_language_code_with_a_region_or_capitals_is_accepted(tmp_path: Path) -> None:
    out = tmp_path / "out.srt"
    for code in ("EN", "pt-BR", "fr_CA"):
        result = punctum(
            "transfer", str(SAMPLE / "reference.txt"), str(SAMPLE / "sample.srt"), "-o", str(out),
            "--language", code,
        )  # fmt: skip
        assert result.returncode == 0, (code, result.stderr)


@pytest.mark.parametrize("content", ["hello there this is text\nsecond line\n", "one line only"])
def test_check_refuses_plain_text_which_has_no_timings(content: str, tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text(content)
    result = punctum("check", str(text))
    assert result.returncode == 3, result.stderr
    line = _one_line(result)
    assert str(text) in line and "no timings" in line, line
    assert "inf" not in result.stdout + line


def test_check_names_a_cue_shown_for_no_time_instead_of_an_infinite_rate(tmp_path: Path) -> None:
    captions = tmp_path / "zero.srt"
    captions.write_text("1\n00:00:01,000 --> 00:00:01,000\nhello there\n", encoding="utf-8")
    result = punctum("check", str(captions))
    assert result.returncode == 1
    assert "11 characters shown for no time" in result.stdout
    assert "inf" not in result.stdout


def _said_here(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``punctum ARGV`` run here: its exit status and what it said on stderr, which must be one line."""
    from app.cli import main

    status = main(argv)
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1, said
    return status, said[0]


def test_a_device_a_pipe_or_a_symlink_loop_named_as_a_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every file argument is read only when it is a regular file: /dev/zero was read until the
    kernel killed the run at 21 GB, a pipe hung, and a symlink loop was a traceback."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    captions, out = str(SAMPLE / "sample.srt"), str(tmp_path / "out.srt")
    for given in ("/dev/zero", str(pipe)):
        for argv in (
            ["punctuate", captions, "--no-audio", "--style", given, "-o", out],
            ["punctuate", captions, "--audio", "timings", "--timings", given, "-o", out],
            ["train", "--config", given],
        ):
            status, said = _said_here(argv, capsys)
            assert status in (2, 3) and "not a regular file" in said, (argv, said)
    loop = str(tmp_path / "a")
    for argv in (
        ["punctuate", loop, "--no-audio"],
        ["punctuate", captions, "--no-audio", "-o", loop],
        ["punctuate", captions, "--no-audio", "--style", loop, "-o", out],
        ["status", loop],
        ["transcribe", loop],
    ):
        status, said = _said_here(argv, capsys)
        assert status in (2, 3) and "symlink loop" in said, (argv, said)
    assert not Path(out).exists()


def test_a_model_that_is_neither_a_folder_nor_on_the_hub_is_refused_in_one_line(tmp_path: Path) -> None:
    """The hub's refusal (no network here) ran over two lines."""
    result = run_punctum_here(
        "punctuate", str(SAMPLE / "sample.srt"), "--no-audio", "--model", "no-such-model",
        "-o", str(tmp_path / "out.srt"),
    )  # fmt: skip
    assert result.returncode == 3
    assert _one_line(result).startswith("punctum: model 'no-such-model': not a folder here")
    assert not (tmp_path / "out.srt").exists()
