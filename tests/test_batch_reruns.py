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


def _person_accepts_the_first(project: Path) -> None:
    """A person accepts the first suggestion of the project's one file, as the editor records it."""
    from app.core.model import Status
    from app.services.review import ReviewSession
    from app.store.project import Project

    with Project(project) as opened:
        session = ReviewSession(opened, opened.files()[0].id)
        session.accept(next(s for s in session.review_order() if s.status is Status.PENDING).id)


def test_a_file_processed_without_audio_is_heard_once_its_video_is_added(
    tiny_model: Path, tmp_path: Path
) -> None:
    import shutil

    from app.store.project import Project

    folder = tmp_path / "f"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "sample.srt")
    project = tmp_path / "p.punctum"
    batch = ("batch", str(folder), "--project", str(project), "--model", str(tiny_model))
    first = run_punctum_here(*batch, "--no-audio")
    assert first.returncode == 0 and f"{project}: 1 processed" in first.stdout, first.stderr
    _person_accepts_the_first(project)  # "hello." (this model puts a period after every word)

    shutil.copy(SAMPLE / "sample.mp4", folder / "sample.mp4")
    heard = run_punctum_here(*batch, "--listen")
    assert heard.returncode == 0, heard.stderr
    assert f"{project}: 1 processed, 0 failed, 0 already done" in heard.stdout
    assert (
        "punctum: sample: analysed again with its media (processed without audio before;"
        " 1 of 1 decisions kept)"
    ) in heard.stderr.splitlines(), heard.stderr
    with Project(project, read_only=True) as opened:
        entry = opened.files()[0]
        assert entry.media_path == (folder / "sample.mp4").resolve()
        assert opened.report(entry.id)["evidence"] != "text"  # heard this time
    exported = run_punctum_here("export", str(project), "--out", str(tmp_path / "out"))
    assert exported.returncode == 0, exported.stderr
    text = (tmp_path / "out" / "sample.srt").read_text(encoding="utf-8")
    assert text.splitlines()[2].startswith("Hello. And"), text[:200]  # the person's decision stands

    again = run_punctum_here(*batch, "--listen")  # nothing new: done, not heard again
    assert f"{project}: 0 processed, 0 failed, 1 already done" in again.stdout, again.stderr


def test_media_relinked_after_a_file_was_done_is_heard_and_media_that_fails_keeps_its_results(
    tiny_model: Path, tmp_path: Path
) -> None:
    import shutil

    folder = tmp_path / "f"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "sample.srt")
    project = tmp_path / "p.punctum"
    batch = ("batch", str(folder), "--project", str(project), "--model", str(tiny_model), "--no-listen")
    assert f"{project}: 1 processed" in run_punctum_here(*batch).stdout  # no media to measure yet
    video = tmp_path / "elsewhere" / "talk.mp4"
    video.parent.mkdir()
    shutil.copy(SAMPLE / "sample.mp4", video)
    assert run_punctum_here("relink", str(project), "sample", str(video)).returncode == 0
    video.write_bytes(b"not a video any more" * 100)  # spoilt after the relink

    spoilt = run_punctum_here(*batch)
    assert spoilt.returncode == 0, spoilt.stderr
    assert f"{project}: 0 processed, 0 failed, 1 already done" in spoilt.stdout
    told = [line for line in spoilt.stderr.splitlines() if line.startswith("punctum: sample: warning: ")]
    assert len(told) == 1 and "not analysed again with its media (added or relinked since" in told[0]
    assert "its earlier results stand" in told[0] and "Traceback" not in spoilt.stderr
    assert _states(project) == {"sample": "done"}
    exported = run_punctum_here("export", str(project), "--out", str(tmp_path / "out"))
    assert exported.returncode == 0 and "1 files written" in exported.stdout, exported.stderr

    shutil.copy(SAMPLE / "sample.mp4", video)  # mended
    mended = run_punctum_here(*batch)
    assert mended.returncode == 0, mended.stderr
    assert f"{project}: 1 processed, 0 failed, 0 already done" in mended.stdout
    assert (
        "punctum: sample: analysed again with its media (added or relinked since it was processed;"
        " no decisions to keep)"
    ) in mended.stderr.splitlines(), mended.stderr
