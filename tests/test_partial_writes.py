"""A write that fails part way (a full disk, a folder in the way): the command says which files
it wrote and which it did not, and prints no summary of a write that did not happen."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tests.conftest import run_punctum_here
from tests.test_batch_reruns import first_cues


def _five_files_done(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    for name in "abcde":
        first_cues(folder / f"{name}.srt")
    project = tmp_path / "p.punctum"
    made = run_punctum_here("batch", str(folder), "--project", str(project), "--no-audio", "--rebreak")
    assert made.returncode == 0, made.stderr
    return project


def _disk_full_after(monkeypatch: pytest.MonkeyPatch, files: int) -> None:
    """The disk fills up once ``files`` files have been written (each is flushed to disk once)."""
    flushed = [0]
    fsync = os.fsync

    def full(fd: int) -> None:
        flushed[0] += 1
        if flushed[0] > files:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        fsync(fd)

    monkeypatch.setattr(os, "fsync", full)


def test_an_export_stopped_part_way_says_which_files_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _five_files_done(tmp_path)
    out = tmp_path / "out"
    (out / "c.srt").mkdir(parents=True)  # in the way of the third

    stopped = run_punctum_here("export", str(project), "--out", str(out))
    assert stopped.returncode == 3 and len(stopped.stderr.splitlines()) == 1, stopped.stderr
    assert stopped.stderr.startswith(f"punctum: {out / 'c.srt'}: ")
    assert stopped.stderr.rstrip().endswith(
        f"; 2 of 5 files written in {out} before it (a.srt, b.srt), 3 not (c.srt, d.srt, e.srt)"
    ), stopped.stderr
    assert stopped.stdout == ""  # no "files written", no summary of the lines re-broken
    assert sorted(p.name for p in out.iterdir() if p.is_file()) == ["a.srt", "b.srt"]

    full = tmp_path / "full"
    _disk_full_after(monkeypatch, 3)
    stopped = run_punctum_here("export", str(project), "--out", str(full))
    assert stopped.returncode == 3 and len(stopped.stderr.splitlines()) == 1, stopped.stderr
    assert "No space left on device" in stopped.stderr and stopped.stdout == ""
    assert stopped.stderr.rstrip().endswith(
        f"; 3 of 5 files written in {full} before it (a.srt, b.srt, c.srt), 2 not (d.srt, e.srt)"
    ), stopped.stderr
    assert sorted(p.name for p in full.iterdir()) == ["a.srt", "b.srt", "c.srt"]  # no half file


def test_a_style_file_that_cannot_be_written_is_not_described_as_if_it_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _five_files_done(tmp_path)
    target = tmp_path / "style.json"
    _disk_full_after(monkeypatch, 0)
    failed = run_punctum_here("style", str(project), "--write", str(target))
    assert failed.returncode == 3 and len(failed.stderr.splitlines()) == 1, failed.stderr
    assert "No space left on device" in failed.stderr
    assert failed.stdout == "" and not target.exists()  # the style's summary only once it is written
    monkeypatch.undo()
    written = run_punctum_here("style", str(project), "--write", str(target))
    assert written.returncode == 0 and written.stdout.splitlines()[-1] == f"{target}: written"


def test_a_write_that_fails_says_so_in_a_whole_sentence(tmp_path: Path) -> None:
    """One file that cannot be written was told "...; neither was", a sentence that stopped."""
    from app.formats import WriteError, write_files

    missing = tmp_path / "no such folder"
    with pytest.raises(WriteError) as one:
        write_files([(missing / "style.json", b"{}")])
    assert str(one.value).endswith(")") and "neither" not in str(one.value)
    with pytest.raises(WriteError) as two:
        write_files([(missing / "a.srt", b"1"), (missing / "a.words.json", b"[]")])
    assert str(two.value).endswith("; neither was written")
