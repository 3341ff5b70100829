"""``--rebreak`` kept in a project by batch, and ``--no-rebreak`` to turn it off again."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import SAMPLE, run_punctum_here


def test_no_rebreak_turns_off_what_batch_rebreak_kept_in_the_project(
    tiny_model: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "talk.srt")
    project = tmp_path / "p.punctum"
    batch = ("batch", str(folder), "--project", str(project), "--model", str(tiny_model), "--no-audio")
    batch = (*batch, "--apply", "all")

    def export(name: str, *asked: str) -> tuple[str, str]:
        exported = run_punctum_here("export", str(project), "--out", str(tmp_path / name), *asked)
        assert exported.returncode == 0, exported.stderr
        return exported.stdout, (tmp_path / name / "talk.srt").read_text(encoding="utf-8")

    assert run_punctum_here(*batch).returncode == 0
    _, plain = export("plain")
    assert run_punctum_here(*batch, "--rebreak").returncode == 0
    said, rebroken = export("kept")
    assert "lines re-broken" in said and rebroken != plain and rebroken.split() == plain.split()
    # This once, without; the project still asks for it.
    said, once = export("once", "--no-rebreak")
    assert "lines re-broken" not in said and once == plain
    assert export("again")[1] == rebroken
    # Turned off in the project: every export is as the lines were.
    assert run_punctum_here(*batch, "--no-rebreak").returncode == 0
    said, after = export("off")
    assert "lines re-broken" not in said and after == plain
