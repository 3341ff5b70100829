"""Batch run again on a folder: what failed is retried, what failed is named, and the run's
exit status says whether every file is done."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import SAMPLE, cut_media, run_punctum_here


def first_cues(target: Path, count: int = 10) -> Path:
    blocks = (SAMPLE / "sample.srt").read_text(encoding="utf-8").strip().split("\n\n")[:count]
    target.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return target


def _states(project: Path) -> dict[str, str]:
    status = run_punctum_here("status", str(project), "--json")
    assert status.returncode == 0, status.stderr
    return {row["file"]: row["state"] for row in json.loads(status.stdout)}


def test_a_failed_file_is_named_and_retried_once_its_media_is_mended(
    tiny_model: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "b"
    folder.mkdir()
    first_cues(folder / "e.srt")
    (folder / "e.mp4").write_bytes(b"")  # media that cannot be decoded
    first_cues(folder / "ok.srt")
    project = tmp_path / "e.punctum"
    batch = ("batch", str(folder), "--project", str(project), "--model", str(tiny_model), "--no-listen")

    broken = run_punctum_here(*batch)
    assert broken.returncode == 3, broken.stderr  # not every file is done
    assert f"{project}: 1 processed, 1 failed, 0 already done" in broken.stdout
    assert any(line.startswith("punctum: e: ") for line in broken.stderr.splitlines()), broken.stderr
    assert "Traceback" not in broken.stderr

    exported = run_punctum_here("export", str(project), "--out", str(tmp_path / "out"))
    assert exported.returncode == 0, exported.stderr
    assert "1 files written" in exported.stdout
    assert any(line.startswith("punctum: e: not exported (failed: ") for line in exported.stderr.splitlines())

    # Run again unchanged: still failed, and said so (tried again, as its media may be mended).
    again = run_punctum_here(*batch)
    assert again.returncode == 3
    assert f"{project}: 0 processed, 1 failed, 1 already done" in again.stdout
    assert any(line.startswith("punctum: e: ") for line in again.stderr.splitlines()), again.stderr

    cut_media(SAMPLE / "sample.mp4", folder / "e.mp4", 30)
    mended = run_punctum_here(*batch)
    assert mended.returncode == 0, mended.stderr
    assert f"{project}: 1 processed, 0 failed, 1 already done" in mended.stdout
    assert _states(project) == {"e": "done", "ok": "done"}
    exported = run_punctum_here("export", str(project), "--out", str(tmp_path / "out"))
    assert "2 files written" in exported.stdout and exported.stderr == ""


def test_export_into_the_input_folder_in_the_other_format_is_refused(
    tiny_model: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "b5"
    folder.mkdir()
    captions = first_cues(folder / "a.srt")
    project = tmp_path / "b5.punctum"
    batch = ("batch", str(folder), "--project", str(project), "--model", str(tiny_model), "--no-audio")
    assert run_punctum_here(*batch).returncode == 0

    refused = run_punctum_here("export", str(project), "--out", str(folder), "--format", "vtt")
    assert refused.returncode == 3 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert "a.vtt" in refused.stderr and "another folder" in refused.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["a.srt"]  # nothing written beside the input

    # So the captions changed on disk are imported again, not locked out as ambiguous.
    captions.write_text(captions.read_text(encoding="utf-8").replace("maple", "cedar"), encoding="utf-8")
    again = run_punctum_here(*batch)
    assert again.returncode == 0 and "ambiguous" not in again.stderr, again.stderr
    exported = run_punctum_here("export", str(project), "--out", str(tmp_path / "out"), "--format", "vtt")
    assert exported.returncode == 0, exported.stderr
    assert "cedar street" in (tmp_path / "out" / "a.vtt").read_text(encoding="utf-8")


def test_export_inside_the_batch_folder_is_refused_so_no_later_batch_takes_it_for_new_captions(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "f9"
    (folder / "season").mkdir(parents=True)
    first_cues(folder / "t.srt")
    first_cues(folder / "season" / "u.srt")
    project = tmp_path / "f9.punctum"
    batch = ("batch", str(folder), "--project", str(project), "--no-audio")
    assert run_punctum_here(*batch).returncode == 0

    for inside in (folder / "out", folder / "season" / "out", folder / "season"):
        refused = run_punctum_here("export", str(project), "--out", str(inside))
        assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
        assert refused.stderr.startswith(f"punctum: {inside}: inside {folder.resolve()}")
        assert "outside it" in refused.stderr and refused.stdout == ""
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == [
        "season",
        "season/u.srt",
        "t.srt",
    ]  # nothing written, no folder made

    # Beside the batch folder it is written, and the next batch finds nothing new to review.
    exported = run_punctum_here("export", str(project), "--out", str(tmp_path / "out"))
    assert exported.returncode == 0 and "2 files written" in exported.stdout, exported.stderr
    again = run_punctum_here(*batch)
    assert again.returncode == 0, again.stderr
    assert f"{project}: 0 processed, 0 failed, 2 already done" in again.stdout
    assert _states(project) == {"t": "done", "season/u": "done"}


def test_the_listener_s_warnings_reach_the_batch_summary_and_status(tiny_model: Path, tmp_path: Path) -> None:
    import numpy as np

    from tests.conftest import write_audio

    folder = tmp_path / "in"
    folder.mkdir()
    first_cues(folder / "quiet.srt")
    write_audio(folder / "quiet.wav", np.zeros(30 * 16_000))  # silence where the captions speak
    first_cues(folder / "plain.srt")
    project = tmp_path / "p.punctum"
    batch = run_punctum_here("batch", str(folder), "--project", str(project), "--model", str(tiny_model))
    assert batch.returncode == 0, batch.stderr
    told = [line for line in batch.stderr.splitlines() if "speech found in only 0%" in line]
    assert len(told) == 1 and told[0].startswith("punctum: quiet: warning: speech found"), batch.stderr

    status = run_punctum_here("status", str(project), "--json")
    rows = {row["file"]: row for row in json.loads(status.stdout)}
    assert any("speech found in only 0%" in warning for warning in rows["quiet"]["warnings"]), rows
    assert "warnings" not in rows["plain"]
    table = run_punctum_here("status", str(project)).stdout.splitlines()
    quiet = next(i for i, line in enumerate(table) if line.startswith("quiet "))
    assert any("warning: speech found in only 0%" in line for line in table[quiet + 1 : quiet + 3]), table
