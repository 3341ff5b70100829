"""Folders, the project file and batch runs: pairing, resume after SIGKILL, durable decisions, export."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.core.model import Status
from app.formats import read_document
from app.services.folder_pairing import FileGroup, pair_folder
from app.services.projects import add_caption_file, load_document
from app.store.project import FileResults, Project, ProjectError
from tests.conftest import ROOT, SAMPLE, requires_ffmpeg
from tests.test_cli import punctum


def test_folder_pairing(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    for name in [
        "a/talk.mp4", "a/talk.en.srt", "a/talk.ref.txt", "a/talk.ctm",
        "b/other.vtt", "b/other.transcript.txt", "b/other.words.json",
        "c/dup.srt", "c/dup.vtt",
        "lonely.mp4", ".hidden.srt", "notes.srt~", "draft.srt.part", ".git/x.srt",
    ]:  # fmt: skip
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("x")
    outside = tmp_path / "outside.srt"
    outside.write_text("x")
    (folder / "linked.srt").symlink_to(outside)
    (folder / "self.srt").symlink_to("self.srt")  # links that loop, alone or in a pair
    (folder / "one.srt").symlink_to("two.srt")
    (folder / "two.srt").symlink_to("one.srt")
    (folder / "gone.srt").symlink_to("nowhere.srt")
    pairing = pair_folder(folder)
    assert {p.name: why for p, why in pairing.skipped.items()} == {
        "linked.srt": "a link out of the folder",
        "self.srt": "a link that loops",
        "one.srt": "a link that loops",
        "two.srt": "a link that loops",
        "gone.srt": "a link to nothing",
    }
    groups = {g.stem: g for g in pairing.groups}
    assert set(groups) == {"a/talk", "b/other"}
    talk, other = groups["a/talk"], groups["b/other"]
    assert talk.language == "en"
    assert talk.media and talk.media.name == "talk.mp4"
    assert talk.reference and talk.reference.name == "talk.ref.txt"
    assert talk.timings and talk.timings.name == "talk.ctm"
    assert other.timings and other.timings.name == "other.words.json"
    assert other.media is None and other.reference and other.reference.name == "other.transcript.txt"
    assert list(pairing.ambiguous) == ["c/dup"]
    assert [p.name for p in pairing.unpaired] == ["lonely.mp4"]


def test_the_editor_and_folder_pairing_agree_on_what_each_file_is(tmp_path: Path) -> None:
    from app.ui.file_controller import sort_paths

    names = ["talk.en.srt", "talk.ref.srt", "talk.mp4", "talk.words.json"]
    for name in names:
        (tmp_path / name).write_text("x")
    dropped = sort_paths([tmp_path / name for name in names])
    group = pair_folder(tmp_path).groups[0]
    for kind in ("captions", "media", "reference", "timings"):
        assert dropped[kind] == getattr(group, kind), kind
    assert dropped["reference"].name == "talk.ref.srt"  # a reference may be captions too


def test_the_summary_counts_files_that_fail_at_import_and_workers_are_capped(
    tiny_model: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "good.srt")
    (folder / "garbage.srt").write_bytes(bytes(range(256)) * 12)
    (folder / "loop.srt").symlink_to("loop.srt")
    project = tmp_path / "work.punctum"
    result = punctum(
        "batch", str(folder), "--project", str(project), "--model", str(tiny_model), "--workers", "1000",
        "--no-audio",
    )  # fmt: skip
    assert result.returncode == 3, result.stderr  # a file failed
    assert f"{project}: 1 processed, 1 failed, 0 already done" in result.stdout
    lines = result.stderr.strip().splitlines()
    assert any(line.startswith("punctum: garbage: ") and "garbage.srt" in line for line in lines), lines
    assert f"punctum: skipped {folder / 'loop.srt'}: a link that loops" in lines
    # A worker per file to do at most (each loads a model): one here, and the run says so.
    assert any(line.startswith("punctum: --workers 1000 lowered to 1: one per CPU") for line in lines), lines
    assert "Traceback" not in result.stderr
    assert _states(project) == {"good": "done", "garbage": "failed"}


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "good1.srt")
    shutil.copy(SAMPLE / "sample.mp4", folder / "good1.mp4")
    shutil.copy(SAMPLE / "reference.txt", folder / "good1.ref.txt")
    shutil.copy(SAMPLE / "sample.vtt", folder / "good2.vtt")
    shutil.copy(SAMPLE / "sample.mp4", folder / "good2.mp4")
    shutil.copy(SAMPLE / "sample.srt", folder / "good3.en.srt")
    (folder / "brokencaptions.srt").write_bytes(b"1\n00:00:01,000 --> nonsense\n\x00\x01\x02binary\n")
    shutil.copy(SAMPLE / "sample.srt", folder / "brokenmedia.srt")
    data = (SAMPLE / "sample.mp4").read_bytes()
    (folder / "brokenmedia.mp4").write_bytes(data[: len(data) // 3])
    return folder


def _states(project_path: Path) -> dict[str, str]:
    with sqlite3.connect(project_path) as connection:
        try:
            return dict(connection.execute("SELECT stem, state FROM files").fetchall())
        except sqlite3.OperationalError:  # the batch is still creating the project
            return {}


def _jobs(project_path: Path) -> int:
    with sqlite3.connect(project_path) as connection:
        return int(connection.execute("SELECT COUNT(*) FROM jobs").fetchone()[0])


@requires_ffmpeg
def test_batch_resumes_after_sigkill_and_exports_exact_timings(tiny_model: Path, tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    project = tmp_path / "work.punctum"
    command = [
        sys.executable, "-m", "app", "batch", str(folder), "--project", str(project),
        "--model", str(tiny_model), "--workers", "1", "--apply", "confident", "--min-confidence", "0.8",
        "--no-listen",  # resuming is the point here; listening is tested on its own
    ]  # fmt: skip
    first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if project.exists() and "done" in _states(project).values():
            break
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()
    interrupted = _states(project)
    assert "done" in interrupted.values()
    assert sum(state == "done" for state in interrupted.values()) < 3, "killed too late to test resuming"

    # Ctrl+C in the next run, once it is on a file: the workers stop at once, the run says so in
    # one line, and the file goes back to pending.
    jobs_before = _jobs(project)
    ctrl_c = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell that starts the tests in the background leaves SIGINT ignored; a terminal does not.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and _jobs(project) == jobs_before:
        time.sleep(0.02)
    time.sleep(0.2)
    ctrl_c.send_signal(signal.SIGINT)
    _, stderr = ctrl_c.communicate(timeout=60)
    assert ctrl_c.returncode == 130 and "interrupted" in stderr and "Traceback" not in stderr
    assert "running" not in _states(project).values()

    second = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert second.returncode == 3, second.stderr
    assert "Traceback" not in second.stderr and "Warning" not in second.stderr, second.stderr
    states = _states(project)
    assert states == {
        "good1": "done", "good2": "done", "good3": "done", "brokencaptions": "failed", "brokenmedia": "failed",
    }  # fmt: skip
    with sqlite3.connect(project) as connection:
        done_jobs = dict(
            connection.execute(
                "SELECT f.stem, COUNT(*) FROM jobs j JOIN files f ON f.id = j.file_id"
                " WHERE j.state = 'done' GROUP BY f.stem"
            ).fetchall()
        )
        reasons = dict(connection.execute("SELECT stem, reason FROM files WHERE state = 'failed'").fetchall())
    assert done_jobs == {"good1": 1, "good2": 1, "good3": 1}  # each good file processed exactly once
    assert "truncated" in reasons["brokenmedia"] or "decoded" in reasons["brokenmedia"]
    assert "brokencaptions.srt" in reasons["brokencaptions"]

    status = punctum("status", str(project), "--json")
    assert status.returncode == 0, status.stderr
    assert "review_minutes" in status.stdout

    out = tmp_path / "out"
    exported = punctum("export", str(project), "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    for name, source in (
        ("good1.srt", "good1.srt"),
        ("good2.vtt", "good2.vtt"),
        ("good3.en.srt", "good3.en.srt"),
    ):
        before, after = read_document(folder / source), read_document(out / name)
        assert [(c.start, c.end) for c in after.cues] == [(c.start, c.end) for c in before.cues]
        assert [w.text.lower() for w in after.words()] == [w.text.lower() for w in before.words()]
    # "--apply confident" accepted the suggestions of at least 0.8; the others wait for review.
    rows = {row["file"]: row for row in json.loads(status.stdout)}
    assert rows["good3"]["accepted"] > 0 and rows["good3"]["pending"] > 0
    marks = sum(1 for w in read_document(out / "good3.en.srt").words() if w.mark)
    assert marks == rows["good3"]["accepted"]
    refused = punctum("export", str(project), "--out", str(folder))
    assert refused.returncode == 3 and "input file" in refused.stderr


def _busy_workers(parent: int) -> list[int]:
    """Pool workers of ``parent`` that have loaded the model's runtime: they are inside a file, not
    starting up."""
    found = []
    try:
        children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    except OSError:  # the batch has ended
        return []
    for child in children:
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
            maps = Path(f"/proc/{child}/maps").read_text()
        except OSError:
            continue
        if b"spawn_main" in command and b"resource_tracker" not in command and "onnxruntime" in maps:
            found.append(int(child))
    return found


def long_captions(folder: Path) -> Path:
    """``folder`` with one long caption file, talk.srt: 5,000 cues, 50,000 words, long enough that
    a worker is still on it seconds later."""

    def stamp(ms: int) -> str:
        return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"

    folder.mkdir()
    cues = [
        f"{n + 1}\n{stamp(n * 3000)} --> {stamp(n * 3000 + 2500)}\nso this is what we call a long file now\n"
        for n in range(5000)
    ]
    (folder / "talk.srt").write_text("\n".join(cues))
    return folder


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the worker through /proc")
def test_a_worker_killed_mid_file_fails_that_file_instead_of_hanging(
    tiny_model: Path, tmp_path: Path
) -> None:
    folder = long_captions(tmp_path / "in")  # the worker is still on it when it is killed
    project = tmp_path / "work.punctum"
    command = [
        sys.executable, "-m", "app", "batch", str(folder), "--project", str(project),
        "--model", str(tiny_model), "--workers", "1",
    ]  # fmt: skip
    run = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and run.poll() is None and not _busy_workers(run.pid):
            time.sleep(0.02)
        workers = _busy_workers(run.pid)
        assert workers, "the worker finished before it could be killed"
        os.kill(workers[0], signal.SIGKILL)  # as the kernel's out-of-memory killer would
        _, stderr = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 3 and "Traceback" not in stderr, stderr
    assert "talk: processing stopped: its worker process died" in stderr
    assert _states(project) == {"talk": "failed"}


def test_a_decision_survives_sigkill_a_millisecond_later(tmp_path: Path) -> None:
    path = tmp_path / "p.punctum"
    with Project(path, create=True) as project:
        file_id = add_caption_file(project, FileGroup("sample", SAMPLE / "sample.srt"))
        from app.core.model import Source, Suggestion

        project.finish(
            file_id, project.start_job(file_id), FileResults([Suggestion(1, 3, ",", 0.8, Source.MODEL)], {})
        )
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from app.store.project import Project\n"
        f"project = Project(Path({str(path)!r}))\n"
        f"project.record({file_id}, 'accept', {{'suggestion': 1}})\n"
        "print('recorded', flush=True)\n"
        "time.sleep(30)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "recorded"
    time.sleep(0.001)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    with Project(path) as project:
        document, _ = load_document(project, file_id)
    assert document.suggestion(1).status is Status.ACCEPTED
    assert document.word(3).mark == ","


def test_decisions_replay_like_the_editor_made_them(tmp_path: Path) -> None:
    from app.core.model import Source, Suggestion

    with Project(tmp_path / "p.punctum", create=True) as project:
        file_id = add_caption_file(project, FileGroup("sample", SAMPLE / "sample.srt"))
        suggestions = [Suggestion(1, 0, ",", 0.9, Source.MODEL), Suggestion(2, 5, ".", 0.7, Source.MODEL)]
        project.finish(file_id, project.start_job(file_id), FileResults(suggestions, {}))
        for action, arguments in [
            ("accept", {"suggestion": 1}),
            ("reject", {"suggestion": 2}),
            ("undo", {}),
            ("set_mark", {"word": 7, "mark": "?"}),
            ("edit_word", {"word": 2, "text": "Welcome"}),
            ("undo", {}),
            ("redo", {}),
        ]:
            project.record(file_id, action, arguments)
        document, history = load_document(project, file_id)
    assert document.word(0).mark == ","
    assert document.suggestion(2).status is Status.PENDING  # the rejection was undone
    assert document.word(7).mark == "?" and document.word(2).text == "Welcome"
    assert history.can_undo
    # The project keeps the captions' bytes: it opens after the original file is gone.
    copy = tmp_path / "elsewhere" / "p.punctum"
    copy.parent.mkdir()
    shutil.copy(tmp_path / "p.punctum", copy)
    with Project(copy) as moved:
        assert load_document(moved, file_id)[0].word(0).mark == ","
    relinked = punctum("relink", str(copy), "sample", str(SAMPLE / "sample.mp4"))
    assert relinked.returncode == 0, relinked.stderr
    with Project(copy) as moved:
        assert moved.files()[0].media_path == (SAMPLE / "sample.mp4").resolve()
    assert punctum("relink", str(copy), "nope", str(SAMPLE / "sample.mp4")).returncode == 2


def test_bad_project_files(tmp_path: Path) -> None:
    not_a_project = tmp_path / "notes.punctum"
    not_a_project.write_text("my notes")
    with pytest.raises(ProjectError, match="not overwriting"):
        Project(not_a_project, create=True)
    assert not_a_project.read_text() == "my notes"
    with pytest.raises(ProjectError, match="no such project"):
        Project(tmp_path / "missing.punctum")
    result = punctum("status", str(not_a_project))
    assert result.returncode == 3 and "Traceback" not in result.stderr


@requires_ffmpeg
def test_batch_triage_leaves_the_editor_the_same_queue_and_its_evidence(tmp_path: Path) -> None:
    """`batch --apply triage` settles as the editor's rule does (recorded as the rule's, so a policy
    changed in the editor reopens it), and keeps what was measured at each gap for the review."""
    from app.core.triage import TriagePolicy, gaps_of
    from app.services.analysis import AudioUse
    from app.services.model import Punctuator
    from app.services.review import ReviewSession
    from tests.benchmarks.review_effort import bundled_sample

    folder = tmp_path / "in"
    shutil.copytree(SAMPLE, folder)
    (folder / "README.md").unlink()
    (folder / "sample.vtt").unlink()  # one captions file per stem
    (folder / "reference.txt").rename(folder / "sample.ref.txt")  # paired by name
    project = tmp_path / "p.punctum"
    # The text model's and the reference's rule; the readers' agreement is test_triage's and
    # test_listener's (listening would double this test's time for no other check).
    command = ("batch", str(folder), "--project", str(project), "--apply", "triage", "--workers", "1")
    result = punctum(*command, "--no-listen")
    assert result.returncode == 0, result.stderr
    session = ReviewSession.open_project(project)
    try:
        assert (
            sum(g.pending for g in session.queue())
            == bundled_sample(Punctuator(), SAMPLE, AudioUse.TIMINGS)["queue"]
        )
        settled = session.settled_by_rule()
        assert settled
        # Settled where the reference and the model agree, counted in gaps as status counts them.
        told = re.search(r"(\d+) gaps settled by triage \(about (\d+) may be wrong\)", result.stdout)
        assert told is not None, result.stdout
        # status says the same: how many the rule settled that still stand, about how many wrong
        (row,) = json.loads(punctum("status", str(project), "--json").stdout)
        gaps = len(gaps_of(s for s in session.document.suggestions if s.id in settled))
        assert row["settled"] == int(told.group(1)) == gaps and 0 < gaps <= len(settled)
        assert row["may_be_wrong"] > 0  # agreement is right 97.3% of the time, not always
        wrong = told.group(2)
        assert (
            f"settled by triage: {gaps} gaps (about {wrong} may be wrong)"
            in punctum("status", str(project)).stdout
        )
        measure = session.gap_measure(8)  # "cafe", before the sentence's end
        assert measure is not None and measure.pause_ms is not None and measure.end_ms is not None
        session.settle(TriagePolicy(agreement=False, precision_target=None))
        assert session.settled_by_rule() == set()
        assert all(session.document.suggestion(i).status is Status.PENDING for i in settled)
    finally:
        session.close()
    (row,) = json.loads(punctum("status", str(project), "--json").stdout)
    assert row["settled"] == 0  # reopened by the editor's policy: nothing settled stands


def test_batch_and_status_count_the_same_gaps_settled_by_agreement_and_that_some_may_be_wrong(
    tmp_path: Path,
) -> None:
    """Where the reference and the model propose the same mark the gap settles, and about 2.7 in
    100 such gaps are wrong (the README's measured rate): batch's summary and status say how many
    gaps, the same number, and that some of them may be wrong."""
    folder = tmp_path / "f"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "b.srt")
    shutil.copy(SAMPLE / "reference.txt", folder / "b.ref.txt")
    project = tmp_path / "f.punctum"
    result = punctum("batch", str(folder), "--project", str(project), "--apply", "triage", "--no-audio")
    assert result.returncode == 0, result.stderr
    told = re.search(r", (\d+) gaps settled by triage \(about (\d+) may be wrong\)$", result.stdout.strip())
    assert told is not None, result.stdout
    settled, wrong = int(told.group(1)), int(told.group(2))
    (row,) = json.loads(punctum("status", str(project), "--json").stdout)
    assert row["settled"] == settled > 0
    # Every gap settled here is an agreement (with a reference the model alone settles nothing),
    # and agreements are 97.3% right as measured (the README's review-effort table).
    assert 0 < row["may_be_wrong"] <= round(settled * (1 - 0.973), 1)
    assert wrong == round(row["may_be_wrong"]) >= 1
    listed = punctum("status", str(project)).stdout
    assert f"settled by triage: {settled} gaps (about {wrong} may be wrong)" in listed, listed


def test_a_worker_makes_its_model_once_and_again_only_for_other_settings() -> None:
    from app.services.model import ModelCache

    models = ModelCache()
    first = models.punctuator(None, threads=1)
    assert models.punctuator(None, threads=1) is first and models.loads == 1
    int8 = models.punctuator(None, quantize=True, threads=1)
    assert int8 is not first and int8.int8 and models.loads == 2


def test_a_project_named_like_captions_inside_the_folder_is_not_read_as_captions(tmp_path: Path) -> None:
    """`batch F --project F/proj.srt` read its own project as captions: "1 failed", exit 3, on
    every run."""
    folder = tmp_path / "talks"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "talk.srt")
    project = folder / "proj.srt"
    for _ in range(2):
        result = punctum("batch", str(folder), "--project", str(project), "--no-audio", "--workers", "1")
        assert result.returncode == 0, result.stderr
        assert "0 failed" in result.stdout and "proj" not in result.stderr, result.stderr
    with Project(project, read_only=True) as reader:
        assert [entry.stem for entry in reader.files()] == ["talk"]
