"""What is not media or not a file, given to ``relink`` or met by folder pairing, is told as what
it is, never taken for media and never skipped without a word."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.services.folder_pairing import pair_folder
from tests.conftest import ROOT, SAMPLE, cut_media, run_punctum_here
from tests.test_batch_reruns import first_cues

#: Runs a command as nobody: root reads and writes any file, so these tests drop to nobody as root.
_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
_CAN_RUN = (
    "import os, sys; import app.cli;"
    "shut = [p for p in sys.argv[1:] if not os.access(p, os.R_OK | os.X_OK)];"
    "sys.exit(f'cannot reach {shut[0]}' if shut else 0)"
)


def _as_nobody(command: list[str], *reaches: Path) -> list[str]:
    """``command`` as nobody runs it; the test is skipped where nobody cannot run Punctum from this
    checkout (one that other users cannot read: in a 0700 home, a ``mktemp -d`` folder) or cannot
    reach the folders ``reaches``."""
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv to run as nobody")
    probe = [*_NOBODY, sys.executable, "-c", _CAN_RUN, *map(str, reaches)]
    tried = subprocess.run(probe, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    if tried.returncode != 0:
        why = (tried.stderr.strip().splitlines() or ["no reason given"])[-1]
        pytest.skip(f"nobody cannot run Punctum from this checkout here: {why}")
    return [*_NOBODY, *command]


def _media_of(project: Path) -> str | None:
    from app.store.project import Project

    with Project(project, read_only=True) as opened:
        media = opened.files()[0].media_path
    return None if media is None else media.name


def test_relink_refuses_what_is_not_media_and_says_what_it_is(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    captions = first_cues(folder / "a.srt")
    project = tmp_path / "p.punctum"
    assert run_punctum_here("batch", str(folder), "--project", str(project), "--no-audio").returncode == 0
    (tmp_path / "clips.mp4").mkdir()
    os.mkfifo(tmp_path / "pipe.mp4")
    (tmp_path / "empty.mp4").write_bytes(b"")
    for media, said in (
        (tmp_path / "clips.mp4", "is a folder"),
        (tmp_path / "pipe.mp4", "not a regular file"),
        (Path("/dev/zero"), "not a regular file"),
        (captions, "captions, not media"),
        (tmp_path / "empty.mp4", "the file is empty"),
        (tmp_path / "gone.mp4", "no such file"),
    ):
        refused = run_punctum_here("relink", str(project), "a", str(media))
        assert refused.returncode == 3, (media, refused.stderr)
        (line,) = refused.stderr.splitlines()
        assert line.startswith(f"punctum: {media}: ") and said in line, line
    assert _media_of(project) is None  # nothing was linked
    cut_media(SAMPLE / "sample.mp4", tmp_path / "talk.mp4", 5)
    relinked = run_punctum_here("relink", str(project), "a", str(tmp_path / "talk.mp4"))
    assert relinked.returncode == 0, relinked.stderr
    assert _media_of(project) == "talk.mp4"


def test_pairing_tells_of_a_pipe_or_folder_with_a_media_name(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    first_cues(folder / "x.srt")
    os.mkfifo(folder / "x.mp4")
    (folder / "y.mkv").mkdir()
    first_cues(folder / "y.srt")
    (folder / "z.fifo").touch()  # not a name Punctum uses: not its business
    pairing = pair_folder(folder)
    assert {p.name: why for p, why in pairing.skipped.items()} == {
        "x.mp4": "not a regular file (a pipe, device or socket)",
        "y.mkv": "a folder, not media",
    }
    groups = {g.stem: g for g in pairing.groups}
    assert groups["x"].media is None and groups["y"].media is None
    batch = run_punctum_here("batch", str(folder), "--project", str(tmp_path / "p.punctum"), "--no-audio")
    assert f"punctum: skipped {folder / 'x.mp4'}: not a regular file" in batch.stderr, batch.stderr


def test_pairing_tells_of_a_subfolder_it_cannot_read(tmp_path: Path) -> None:
    import tempfile

    as_root = os.geteuid() == 0
    # Root reads any folder: the pairing runs as nobody then, in a folder nobody can reach.
    base = Path(tempfile.mkdtemp(prefix="punctum-locked-")) if as_root else tmp_path
    base.chmod(0o755)
    folder = base / "in"
    (folder / "locked").mkdir(parents=True)
    first_cues(folder / "locked" / "talk.srt")
    first_cues(folder / "open.srt")
    (folder / "locked").chmod(0)
    try:
        code = (
            "import sys; from pathlib import Path; from app.services.folder_pairing import pair_folder;"
            "p = pair_folder(Path(sys.argv[1]));"
            "print(sorted(g.stem for g in p.groups)); print({q.name: w for q, w in p.skipped.items()})"
        )
        command = [sys.executable, "-c", code, str(folder)]
        if as_root:
            command = _as_nobody(command, folder)
        found = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
        assert found.returncode == 0, found.stderr
        assert found.stdout.splitlines() == [
            "['open']",
            "{'locked': 'a folder that cannot be read (Permission denied)'}",
        ]
    finally:
        (folder / "locked").chmod(0o755)
        if as_root:
            shutil.rmtree(base)


def test_a_project_that_cannot_be_written_is_told_so_not_as_unreadable(tmp_path: Path) -> None:
    import tempfile

    from app.services.folder_pairing import FileGroup
    from app.services.projects import add_caption_file
    from app.store.project import Project

    as_root = os.geteuid() == 0
    # Root writes any file: the command runs as nobody then, in a folder nobody can reach.
    base = Path(tempfile.mkdtemp(prefix="punctum-readonly-")) if as_root else tmp_path
    base.chmod(0o777)
    try:
        captions = first_cues(base / "a.srt")
        project = base / "p.punctum"
        with Project(project, create=True) as opened:
            add_caption_file(opened, FileGroup("a", captions))
        project.chmod(0o444)  # the folder stays writable: the lock is taken, then the file refuses
        cut_media(SAMPLE / "sample.mp4", base / "a.mp4", 5)
        command = [sys.executable, "-m", "app", "relink", str(project), "a", str(base / "a.mp4")]
        if as_root:
            command = _as_nobody(command, base)
        run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
        assert run.returncode == 3, run.stderr
        (line,) = run.stderr.splitlines()
        assert "cannot be written (attempt to write a readonly database)" in line, line
    finally:
        shutil.rmtree(base) if as_root else None


def test_a_project_on_a_full_disk_is_told_as_not_writable(tmp_path: Path) -> None:
    from app.services.folder_pairing import FileGroup
    from app.services.projects import add_caption_file
    from app.store.project import Project

    if (
        os.geteuid() != 0
        or shutil.which("unshare") is None
        or subprocess.run(["unshare", "-m", "true"]).returncode
    ):
        pytest.skip("needs root and unshare to mount a small disk")
    captions = first_cues(tmp_path / "a.srt")
    with Project(tmp_path / "p.punctum", create=True) as opened:
        add_caption_file(opened, FileGroup("a", captions))
    disk = tmp_path / "disk"
    disk.mkdir()
    # A 256 KB disk, filled but for two pages: room for the lock, none for the write-ahead log.
    script = (
        'mount -t tmpfs -o size=256k tmpfs "$1" && cp "$2/p.punctum" "$2/a.srt" "$1/" &&'
        ' (dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null; truncate -s -8k "$1/fill") && shift 2 && exec "$@"'
    )
    command = [
        sys.executable,
        "-m",
        "app",
        "batch",
        str(disk),
        "--project",
        str(disk / "p.punctum"),
        "--no-audio",
    ]
    run = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", str(disk), str(tmp_path), *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 3, run.stderr
    (line,) = run.stderr.splitlines()
    assert line.startswith(f"punctum: {disk / 'p.punctum'}: cannot be written ("), line
    assert "readable" not in line
