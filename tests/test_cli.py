"""The punctum command as a user runs it: output, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.ml.runtime import INT8_BY_DEFAULT
from tests.conftest import SAMPLE, run_punctum_here

punctum = run_punctum_here


def test_info_describes_the_sample() -> None:
    result = punctum("info", str(SAMPLE / "sample.srt"))
    assert result.returncode == 0, result.stderr
    assert "format:       SRT" in result.stdout
    assert "line endings: LF" in result.stdout
    assert "cues:         24" in result.stdout


def test_info_json(fixtures: Path) -> None:
    result = punctum("info", "--json", str(fixtures / "odd.srt"))
    assert result.returncode == 0
    info = json.loads(result.stdout)
    assert info["format"] == "srt"
    assert info["cues"] == 4
    assert info["duration_ms"] == 5000
    assert any("overlaps" in warning for warning in info["warnings"])


def test_word_timings_are_counted(fixtures: Path) -> None:
    info = json.loads(punctum("info", "--json", str(fixtures / "youtube.vtt")).stdout)
    assert (info["words"], info["timed_words"]) == (9, 5)


def test_bad_input_is_one_line_and_exit_3(tmp_path: Path) -> None:
    broken = tmp_path / "broken.srt"
    broken.write_text("1\n00:00:01,000 --> 00:00:xx,000\nhello\n")
    pipe = tmp_path / "pipe.srt"
    os.mkfifo(pipe)  # nobody writes to it: reading it would wait for ever
    for target in (broken, tmp_path / "missing.srt", tmp_path / "notes.docx", tmp_path, pipe):
        result = punctum("info", str(target))
        assert result.returncode == 3, (target, result.stderr)
        assert result.stderr.count("\n") == 1, result.stderr
        assert "Traceback" not in result.stderr
    assert f"{broken}:2: unreadable timing line" in punctum("info", str(broken)).stderr


def test_bad_training_configs_are_one_line_and_exit_3(tmp_path: Path) -> None:
    (tmp_path / "broken.toml").write_text("[train\n")
    (tmp_path / "typo.toml").write_text('[train]\noutput = "run"\nlearning_rate = 0.1\n')
    source = '[[source]]\nname = "en"\nkind = "text"\npath = "en"\nlanguage = "en"\n'
    (tmp_path / "twice.toml").write_text(f'[train]\nsources_from = "first.toml"\n\n{source}')
    change = '[[source_change]]\nname = "fr"\nweight = 2.0\n'
    (tmp_path / "first.toml").write_text(f'[train]\noutput = "run"\n\n{source}')
    (tmp_path / "unknown.toml").write_text(f'[train]\nsources_from = "first.toml"\n\n{change}')
    (tmp_path / "alone.toml").write_text(f"[train]\n\n{source}\n{change}")
    (tmp_path / "deaf.toml").write_text(f"[train]\ntiming_context = 7\n\n{source}")
    (tmp_path / "loose.toml").write_text(
        f"[train]\ngap_branch = true\ngap_evidence_learns = true\n\n{source}"
    )
    expected = {
        "missing.toml": "cannot read",
        "broken.toml": "is not a valid TOML file",
        "typo.toml": "unknown setting learning_rate",
        "twice.toml": "sources named twice: en",
        "unknown.toml": "source_change names no source of sources_from: 'fr'",
        "alone.toml": "source_change needs sources_from",
        "deaf.toml": "timing_context needs gap_branch",
        "loose.toml": "gap_evidence_learns is for a frozen_gap_branch",
    }
    for name, message in expected.items():
        result = punctum("train", "--config", str(tmp_path / name))
        assert result.returncode == 3, (name, result.stderr)
        assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert not (tmp_path / "run").exists()


def test_a_run_with_a_checkpoint_is_resumed_or_restarted_only_when_asked(tmp_path: Path) -> None:
    source = '[[source]]\nname = "en"\nkind = "text"\npath = "en"\nlanguage = "en"\n'
    (tmp_path / "run.toml").write_text(f'[train]\noutput = "run"\n\n{source}')
    config = str(tmp_path / "run.toml")
    result = punctum("train", "--config", config, "--resume")
    assert result.returncode == 3 and f"no checkpoint to resume in {tmp_path / 'run'}" in result.stderr

    checkpoint = tmp_path / "run" / "checkpoint" / "checkpoint.safetensors"
    checkpoint.parent.mkdir(parents=True)
    checkpoint.write_bytes(b"a stopped run")
    result = punctum("train", "--config", config)
    assert result.returncode == 3 and result.stderr.count("\n") == 1
    assert "holds a checkpoint of this run: --resume continues it, --restart starts over" in result.stderr
    result = punctum("train", "--config", config, "--resume", "--restart")
    assert result.returncode == 3 and "not both" in result.stderr
    assert checkpoint.read_bytes() == b"a stopped run"


def test_graft_refuses_to_write_into_a_folder_that_holds_files(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("keep me")
    result = punctum("graft", "--text", "a", "--timing-from", "b", "--output", str(tmp_path / "out"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "exists and is not empty" in result.stderr
    assert (tmp_path / "out" / "notes.txt").read_text() == "keep me"
    result = punctum(
        "graft",
        "--text",
        str(tmp_path),
        "--timing-from",
        str(tmp_path),
        "--output",
        str(tmp_path / "new"),
    )
    assert (
        result.returncode == 3 and "not a Punctum model" in result.stderr and result.stderr.count("\n") == 1
    )


def test_bad_project_and_batch_arguments_are_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "videos"
    folder.mkdir()
    (folder / "a.srt").write_bytes((SAMPLE / "sample.srt").read_bytes())
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder")
    cases = [
        (("batch", str(folder), "--project", str(folder)), 3, "is a folder, not a project file"),
        (("batch", str(folder), "--project", str(tmp_path / "p.punctum"), "--workers", "-1"), 2, "1 or more"),
        (("status", str(folder)), 3, "is a folder, not a project file"),
        (("export", str(tmp_path / "p.punctum"), "--out", str(a_file)), 2, "--out names a folder"),
    ]
    for args, code, message in cases:
        result = punctum(*args)
        assert result.returncode == code, (args, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert a_file.read_text() == "not a folder"


def test_min_confidence_with_a_policy_that_reads_none_is_refused_not_ignored(tmp_path: Path) -> None:
    text = tmp_path / "ten.txt"
    text.write_text("so this is the sample we talked about is it ready\n")
    folder = tmp_path / "videos"
    folder.mkdir()
    (folder / "a.srt").write_bytes((SAMPLE / "sample.srt").read_bytes())
    out, project = tmp_path / "out.txt", tmp_path / "p.punctum"
    cases = [
        (
            ("punctuate", str(text), "-o", str(out), "--apply", "none"),
            "with --apply none nothing is accepted",
        ),
        (("punctuate", str(text), "-o", str(out), "--apply", "all"), "--apply all accepts every suggestion"),
        (("batch", str(folder), "--project", str(project), "--apply", "all"), "accepts every suggestion"),
        (("batch", str(folder), "--project", str(project)), "with --apply none nothing is accepted"),
    ]
    for args, said in cases:
        result = punctum(*args, "--min-confidence", "0.8")
        assert result.returncode == 2 and result.stderr.count("\n") == 1, (args, result.stderr)
        assert result.stderr.startswith("punctum: --min-confidence is for --apply confident: ")
        assert said in result.stderr, result.stderr
        target = punctum(*args, "--target", "0.95")
        assert target.returncode == 2 and target.stderr.startswith(
            "punctum: --target is for --apply triage: "
        )
    assert not out.exists() and not project.exists()  # refused before any work


def test_usage_errors_exit_2() -> None:
    assert punctum().returncode == 2
    assert punctum("info").returncode == 2
    assert punctum("frobnicate").returncode == 2


def test_show_prints_cues_with_times(fixtures: Path) -> None:
    result = punctum("show", str(fixtures / "styled.srt"))
    assert result.returncode == 0
    assert result.stdout.splitlines()[1].split() == [
        "2", "0:00:03.600", "-->", "0:00:06.000", "tom", "jerry", "were", "there",
    ]  # fmt: skip


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "punctum"
    if not script.exists():
        import pytest

        pytest.skip("not installed as a package")
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=False)
    assert result.returncode == 0
    assert "info" in result.stdout


def test_every_command_and_option_says_what_it_is_for() -> None:
    import argparse

    from app.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    unexplained = [
        f"{name} {' '.join(action.option_strings) or action.dest}"
        for name, command in commands.choices.items()
        for action in command._actions
        if not isinstance(action, argparse._HelpAction) and not action.help
    ]
    assert unexplained == []
    assert all(command.description for command in commands.choices.values())
    assert "JSON lines" in punctum("stream", "--help").stdout
    extra = punctum("--version", "extra")
    assert (
        extra.returncode == 2
        and extra.stderr.count("\n") == 1
        and "--version takes nothing else" in extra.stderr
    )


def test_the_precision_is_chosen_once_and_int8_reads_as_float_does(tmp_path: Path) -> None:
    text = tmp_path / "ten.txt"
    text.write_text("so this is the sample we talked about is it ready\n")
    both = punctum("punctuate", "--int8", "--float", str(text))
    assert both.returncode == 2 and "not allowed with" in both.stderr
    default, chosen_float, chosen_int8 = (
        punctum("punctuate", "--min-confidence", "0.6", *flag, str(text))
        for flag in ([], ["--float"], ["--int8"])
    )
    assert default.returncode == chosen_float.returncode == chosen_int8.returncode == 0, chosen_int8.stderr
    assert default.stdout == (chosen_int8 if INT8_BY_DEFAULT else chosen_float).stdout
    assert chosen_int8.stdout == chosen_float.stdout == "So this is the sample we talked about is it ready?\n"


def test_a_broken_installation_is_not_reported_as_an_interruption() -> None:
    """Only Ctrl+C (or what a library made of it) is "interrupted"; a start-up that cannot import
    the command shows the error to report."""
    broken = (
        "import sys\n"
        "class Missing:\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'app.core.interrupts':\n"
        "            raise ImportError('a file of the installation is missing')\n"
        "sys.meta_path.insert(0, Missing())\n"
        "from app.launch import run\n"
        "run()\n"
    )
    result = subprocess.run([sys.executable, "-c", broken], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "punctum: interrupted" not in result.stderr
    assert "ImportError: a file of the installation is missing" in result.stderr


def test_training_inputs_with_nothing_to_train_on_or_no_readings_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A config holding only `a=1` was an IndexError half way into training, one with no sources a
    torch.cat error in calibrate; readings without their arrays a KeyError, a file that is not an
    npz a pickle error."""
    import numpy as np

    from app.cli import main

    (tmp_path / "stray.toml").write_text("a = 1\n")
    (tmp_path / "empty.toml").write_text('[train]\noutput = "run"\n')
    np.savez(tmp_path / "empty.npz")
    (tmp_path / "text.npz").write_text("not an npz")
    for argv, message in (
        (
            ["train", "--config", str(tmp_path / "stray.toml")],
            "a outside [train], [[source]] and [[source_change]]",
        ),
        (["train", "--config", str(tmp_path / "empty.toml")], "no data to train on"),
        (
            ["fit-confidence", "--readings", str(tmp_path / "empty.npz")],
            "not development readings (no casing",
        ),
        (
            ["fit-confidence", "--readings", str(tmp_path / "text.npz")],
            "not development readings (not an .npz",
        ),
    ):
        assert main(argv) == 3, argv
        said = capsys.readouterr().err.strip().splitlines()
        assert len(said) == 1 and message in said[0], said
    assert not (tmp_path / "run").exists()


def test_captions_a_terminal_cannot_show_are_escaped_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`PYTHONIOENCODING=ascii punctum show zh.srt` was a UnicodeEncodeError."""
    import io

    from app.cli import main

    captions = tmp_path / "zh.srt"
    captions.write_text("1\n00:00:00,000 --> 00:00:02,000\n没有人知道\n", encoding="utf-8")
    terminal = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr("sys.stdout", terminal)
    assert main(["show", str(captions)]) == 0
    terminal.flush()
    assert "\\u6ca1\\u6709\\u4eba" in terminal.buffer.getvalue().decode("ascii")  # type: ignore[attr-defined]
