"""One project file, several processes and a changing folder: one writer at a time, captions
edited after import, read-only commands that change nothing, and where export may write."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.core.model import Source, Status, Suggestion
from app.formats import read_document
from app.services.folder_pairing import FileGroup
from app.services.projects import add_caption_file, load_document
from app.services.review import ReviewSession
from app.store.project import FileResults, Project, ProjectLockedError
from tests.conftest import ROOT, SAMPLE
from tests.test_cli import punctum


def _batch_command(folder: Path, project: Path, model: Path) -> list[str]:
    return [
        sys.executable, "-m", "app", "batch", str(folder), "--project", str(project),
        "--model", str(model), "--workers", "1", "--no-audio",
    ]  # fmt: skip


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def _one_line_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    return result.stderr


def _status(project: Path) -> dict[str, dict[str, object]]:
    result = punctum("status", str(project), "--json")
    assert result.returncode == 0, result.stderr
    return {row["file"]: row for row in json.loads(result.stdout)}


def _processed_project(tmp_path: Path) -> Path:
    """A project with the sample processed (two suggestions, one accepted), made without a model."""
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    shutil.copy(SAMPLE / "sample.srt", folder / "talk.srt")
    path = folder / "work.punctum"
    with Project(path, create=True) as project:
        file_id = add_caption_file(project, FileGroup("talk", folder / "talk.srt"))
        suggestions = [Suggestion(1, 0, ",", 0.9, Source.MODEL), Suggestion(2, 5, ".", 0.7, Source.MODEL)]
        project.finish(file_id, project.start_job(file_id), FileResults(suggestions, {"language": "en"}))
        project.record(file_id, "accept", {"suggestion": 1})
    return path


def test_a_damaged_project_is_refused_in_one_line_and_left_as_it_was(
    tiny_model: Path, tmp_path: Path
) -> None:
    path = _processed_project(tmp_path)
    damaged = bytearray(path.read_bytes())
    middle = len(damaged) // 2 // 4096 * 4096
    damaged[middle : middle + 8192] = bytes(8192)  # 8 KB zeroed, as a disk error leaves them
    path.write_bytes(damaged)
    out = tmp_path / "out"
    for command in (
        ["status", str(path)],
        ["export", str(path), "--out", str(out)],
        _batch_command(path.parent, path, tiny_model)[3:],
    ):
        stderr = _one_line_error(punctum(*command), 3)
        assert f"{path}: the project file is damaged" in stderr, stderr
    assert path.read_bytes() == bytes(damaged)  # nothing written into it
    assert not out.exists()


def test_stored_captions_changed_outside_punctum_are_never_exported(tmp_path: Path) -> None:
    path = _processed_project(tmp_path)
    shutil.copy(SAMPLE / "sample.srt", path.parent / "second.srt")
    with Project(path) as project:
        second = add_caption_file(project, FileGroup("second", path.parent / "second.srt"))
        project.finish(second, project.start_job(second), FileResults([], {"language": "en"}))
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        stored = connection.execute("SELECT captions_bytes FROM files WHERE stem = 'second'").fetchone()[0]
        changed = stored.replace(b"maple", b"mapla").replace(b"00:00:01,", b"00:00:02,")
        connection.execute("UPDATE files SET captions_bytes = ? WHERE stem = 'second'", [changed])
    out = tmp_path / "out"
    stderr = _one_line_error(punctum("export", str(path), "--out", str(out)), 3)
    assert "the stored captions of second do not match their checksum" in stderr
    assert not out.exists()  # not even the intact file: an export is all or nothing


def _states(project: Path) -> dict[str, str]:
    try:
        with contextlib.closing(sqlite3.connect(f"file:{project}?mode=ro", uri=True)) as connection:
            return dict(connection.execute("SELECT stem, state FROM files").fetchall())
    except sqlite3.Error:  # not there yet, or still being made
        return {}


def _holder(project: Path, label: str, running: bool = False) -> subprocess.Popen[str]:
    """Another process that opens ``project`` for writing as ``label`` (and with ``running``, starts
    processing its first file, as a batch does), then waits to be killed."""
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from app.store.project import Project\n"
        f"project = Project(Path({str(project)!r}), holder={label!r})\n"
        f"if {running}:\n"
        "    project.start_job(project.files()[0].id)\n"
        "print('holding', flush=True)\n"
        "time.sleep(120)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "holding"
    return child


# --- 5: one writer at a time ------------------------------------------------------------------


def test_a_second_writer_is_refused_naming_the_holder_and_a_dead_holder_is_taken_over(
    tiny_model: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "talk.srt")
    project = tmp_path / "work.punctum"
    command = _batch_command(folder, project, tiny_model)
    lock = tmp_path / "work.punctum-lock"
    # A batch running (its own process group, so that it and its workers can be frozen and killed).
    first = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
            project.exists() and lock.exists() and b"punctum batch" in lock.read_bytes()
        ):
            if "running" in _states(project).values():  # a batch that takes no lock, on its first file
                break
            time.sleep(0.01)
        os.killpg(first.pid, signal.SIGSTOP)  # held mid-run, for as long as this test needs
        assert first.poll() is None, "the first batch ended before a second could meet it"

        second = _run(command)
        message = _one_line_error(second, 3)
        assert f"work.punctum: in use by punctum batch (pid {first.pid} on " in message
        # The editor is refused too, with the same reason (the window shows it as a dialog).
        with pytest.raises(ProjectLockedError, match=f"in use by punctum batch \\(pid {first.pid} "):
            ReviewSession.open_project(project)
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # kill -9: the batch and its workers
        first.wait()

    # Nobody holds the lock now: the next batch takes it over and does the work.
    third = _run(command)
    assert third.returncode == 0, third.stderr
    assert "1 processed" in third.stdout
    assert _status(project)["talk"]["state"] == "done"

    # A project open in the editor keeps a batch out, named as the editor, until it is closed.
    session = ReviewSession.open_project(project)
    try:
        refused = _run(command)
        assert f"in use by the Punctum editor (pid {os.getpid()} on " in _one_line_error(refused, 3)
    finally:
        session.close()
    assert _run(command).returncode == 0


def test_a_project_held_by_a_batch_opens_in_the_editor_as_a_dialog(qtbot, tmp_path: Path) -> None:
    pytest.importorskip("PySide6.QtWidgets")
    from PySide6.QtCore import QSettings

    from app.ui.window import MainWindow

    project = _processed_project(tmp_path)
    holder = _holder(project, "punctum batch")
    try:
        window = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
        qtbot.addWidget(window)
        window.files.open_project(project)
        qtbot.waitUntil(lambda: window.last_error is not None, timeout=30_000)
        assert "cannot be opened" in window.last_error
        assert f"in use by punctum batch (pid {holder.pid} on " in window.last_error
        assert window.session is None
        window.close()
    finally:
        holder.kill()
        holder.wait()


# --- 6: captions edited after import ---------------------------------------------------------


def test_captions_edited_after_import_are_stale_until_batch_imports_them_again(
    tiny_model: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    captions = folder / "talk.srt"
    shutil.copy(SAMPLE / "sample.srt", captions)
    project = tmp_path / "work.punctum"
    command = _batch_command(folder, project, tiny_model)
    assert _run(command).returncode == 0

    # The editor decides four gaps: two at the start, where the words stay, two in the last cue.
    session = ReviewSession.open_project(project)
    try:
        proposed = (s for s in session.document.suggestions if s.source is not Source.EDITOR)
        marks = sorted((s for s in proposed if s.casing is None), key=lambda s: (s.gap, s.id))
        kept_accept, kept_reject, changed = marks[0], marks[1], marks[-2]
        session.accept(kept_accept.id)
        session.reject(kept_reject.id)
        session.set_mark(2, "?")
        session.accept(changed.id)
        last_words = [w.text for w in session.document.words()][-3:]
    finally:
        session.close()

    # Then the captions are corrected on disk: the last cue's words change.
    old = captions.read_text()
    new = old.replace(" ".join(last_words), " ".join([*last_words[:-2], "two", "seats"]))
    assert new != old
    captions.write_text(new)

    row = _status(project)["talk"]
    assert row["state"] == "stale" and "talk.srt changed on disk" in str(row["reason"])
    out = tmp_path / "out"
    refused = punctum("export", str(project), "--out", str(out))
    message = _one_line_error(refused, 3)
    assert "captions changed on disk" in message and str(captions) in message
    assert not out.exists()  # the old words were not written

    again = _run(command)
    assert again.returncode == 0, again.stderr
    assert "1 processed" in again.stdout
    assert "talk: captions changed on disk; imported again as version 2" in again.stderr
    assert "3 of 4 decisions kept, 1 dropped where the words changed" in again.stderr
    row = _status(project)["talk"]
    assert row["state"] == "done"
    with Project(project, read_only=True) as opened:
        document, _ = load_document(opened, opened.files()[0].id)
    words = list(document.words())
    assert [w.text for w in words][-2:] == ["two", "seats"]
    assert words[0].mark == "." and words[2].mark == "?" and not words[1].mark  # kept decisions
    statuses = {
        s.gap: s.status for s in document.suggestions if s.casing is None and s.source is Source.MODEL
    }
    assert statuses[0] is Status.ACCEPTED and statuses[1] is Status.REJECTED
    assert statuses[len(words) - 2] is Status.PENDING  # its words changed: to be decided again

    exported = punctum("export", str(project), "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    assert read_document(out / "talk.srt").cues[-1].plain_text().lower().endswith("two seats")


# --- 7: read-only commands change nothing --------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_status_and_export_change_nothing_and_refuse_files_that_are_not_projects(tmp_path: Path) -> None:
    foreign = tmp_path / "notes.punctum"
    with contextlib.closing(sqlite3.connect(foreign)) as connection, connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
        connection.execute("INSERT INTO notes VALUES ('keep me')")
    empty = tmp_path / "empty.punctum"
    empty.write_bytes(b"")
    before = {path: _digest(path) for path in (foreign, empty)}
    for path in (foreign, empty):
        for args in (("status", str(path)), ("export", str(path), "--out", str(tmp_path / "out"))):
            assert "not a Punctum project" in _one_line_error(punctum(*args), 3)
    assert {path: _digest(path) for path in (foreign, empty)} == before
    assert foreign.read_bytes()[18:20] == b"\x01\x01"  # still a rollback journal, not WAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.punctum", "notes.punctum"]


def _read_only(folder: Path, mount: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``punctum ARGS`` with ``folder`` on read-only media (a read-only bind mount at ``mount`` for
    root, who may write anywhere; a read-only folder for anyone else)."""
    command = [sys.executable, "-m", "app", *args]
    if os.geteuid() != 0:
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    script = 'mount --bind "$1" "$2" && mount -o remount,bind,ro "$2" && shift 2 && exec "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", str(folder), str(mount), *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_project_on_read_only_media_opens_for_status_and_export(tmp_path: Path) -> None:
    project = _processed_project(tmp_path)
    folder = project.parent
    if os.geteuid() == 0:
        if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"]).returncode:
            pytest.skip("needs unshare to mount a folder read-only")
        mount = tmp_path / "media"
        mount.mkdir()
    else:
        mount = folder
    seen = mount / project.name  # where the commands find the project
    before = sorted(p.name for p in folder.iterdir())
    if mount == folder:
        for path in folder.iterdir():
            path.chmod(0o444)
        folder.chmod(0o555)
    try:
        status = _read_only(folder, mount, "status", str(seen), "--json")
        assert status.returncode == 0, status.stderr
        (row,) = json.loads(status.stdout)
        assert row["state"] == "done" and row["accepted"] == 1 and row["pending"] == 1
        out = tmp_path / "out"
        exported = _read_only(folder, mount, "export", str(seen), "--out", str(out))
        assert exported.returncode == 0, exported.stderr
        assert next(read_document(out / "talk.srt").words()).mark == ","
    finally:
        folder.chmod(0o755)
    assert sorted(p.name for p in folder.iterdir()) == before


def test_files_a_killed_process_left_running_are_interrupted_not_running(tmp_path: Path) -> None:
    project = _processed_project(tmp_path)
    holder = _holder(project, "punctum batch", running=True)
    try:
        assert _status(project)["talk"]["state"] == "running"  # its process is alive: it is
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert _status(project)["talk"]["state"] == "interrupted"
    table = punctum("status", str(project))
    assert table.returncode == 0 and "interrupted" in table.stdout.splitlines()[1]
    # The next writer takes the project over and sets the file going again.
    with Project(project) as reopened:
        assert reopened.reset_interrupted() == 1


# --- 8: export --out ---------------------------------------------------------------------------


def test_export_makes_its_out_folder_but_never_a_tree_of_missing_ones(tmp_path: Path) -> None:
    project = _processed_project(tmp_path)
    typo = tmp_path / "exprots" / "2024" / "out"
    message = _one_line_error(punctum("export", str(project), "--out", str(typo)), 2)
    assert f"the folder {typo.parent} does not exist" in message
    assert not (tmp_path / "exprots").exists()

    fresh = tmp_path / "out"
    exported = punctum("export", str(project), "--out", str(fresh))
    assert exported.returncode == 0, exported.stderr
    assert (fresh / "talk.srt").is_file()


@pytest.fixture(scope="module")
def _measured_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample processed by batch with the captions' timings (so its gaps' measures are kept)
    and re-cut for every export."""
    folder = tmp_path_factory.mktemp("measured") / "in"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "talk.srt")
    project = folder.parent / "p.punctum"
    made = punctum("batch", str(folder), "--project", str(project), "--audio", "timings", "--resegment")
    assert made.returncode == 0, made.stderr
    return project


_DECISION = "INSERT INTO decisions (file_id, action, arguments, decided_by, decided_at, version) VALUES"


@pytest.mark.parametrize(
    ("damage", "command", "said"),
    [
        (f"{_DECISION} (1, 'recut', '{{\"times\": [[1]]}}', 'editor', 0, 1)", "status", "cannot be read"),
        (f"{_DECISION} (1, 'recut', '{{\"times\": [[1e400, 0]]}}', 'editor', 0, 1)", "status", "infinity"),
        (f"{_DECISION} (1, 'accept', 'not json', 'editor', 0, 1)", "status", "accept decision"),
        ("UPDATE files SET report = 'not json'", "status", "analysis report"),
        ("UPDATE files SET gap_measures = 'not json'", "export", "gap measures"),
        ("UPDATE files SET gap_measures = '[[1, 2, 3, 4, 5, 6, 7]]'", "export", "5 values at most"),
    ],
    ids=[
        "recut times cut short",
        "recut time past any number",
        "arguments not JSON",
        "report not JSON",
        "measures not JSON",
        "a measure of 7 values",
    ],
)
def test_a_damaged_row_is_one_line_naming_the_project_and_the_file(
    _measured_project: Path, tmp_path: Path, damage: str, command: str, said: str
) -> None:
    project = tmp_path / "p.punctum"
    shutil.copy(_measured_project, project)
    with contextlib.closing(sqlite3.connect(project)) as connection, connection:
        connection.execute(damage)
    out = tmp_path / "out"
    result = punctum(command, str(project), *(["--out", str(out)] if command == "export" else []))
    stderr = _one_line_error(result, 3)
    assert stderr.startswith(f"punctum: {project}: ") and "'talk'" in stderr and said in stderr, stderr
    assert not out.exists()  # nothing half exported


def test_a_lock_file_deleted_by_hand_still_keeps_a_second_writer_out(tmp_path: Path) -> None:
    """Deleting ``P.punctum-lock`` while the editor held the project let ``style --reset`` in: the
    holder's lock is found under its second name, and once the holder has gone, the next writer
    takes the project over as before."""
    project = _processed_project(tmp_path)
    holder = _holder(project, "the Punctum editor")
    try:
        (project.parent / f"{project.name}-lock").unlink()
        refused = _run([sys.executable, "-m", "app", "style", str(project), "--reset"])
        assert f"in use by the Punctum editor (pid {holder.pid} on " in _one_line_error(refused, 3)
    finally:
        holder.kill()
        holder.wait()
    taken = _run([sys.executable, "-m", "app", "style", str(project), "--reset"])
    assert taken.returncode == 0, taken.stderr
    assert sorted(p.name for p in project.parent.iterdir() if "lock" in p.name) == []
