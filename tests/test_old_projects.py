"""Projects written by earlier versions of Punctum, read by the commands that only read."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from app.core.decisions import Accept, encode
from app.services.batch import NO_READINGS_WARNING
from app.store.schema import MIGRATIONS, SCHEMA_VERSION
from tests.conftest import SAMPLE, run_punctum_here


def old_project(path: Path, version: int) -> Path:
    """A project as Punctum wrote it at schema ``version``: its tables made by the migrations up to
    that version, one processed file of the sample with two suggestions and one accepted."""
    captions = path.parent / "talk.srt"
    shutil.copy(SAMPLE / "sample.srt", captions)
    data = captions.read_bytes()
    connection = sqlite3.connect(path)
    for target in range(1, version + 1):
        connection.executescript(MIGRATIONS[target])
    connection.execute(f"PRAGMA user_version = {version}")
    columns = {row[1] for row in connection.execute("PRAGMA table_info(files)")}
    row = {
        "stem": "talk",
        "captions_path": "talk.srt",
        "captions_format": "srt",
        "captions_bytes": data,
        "state": "done",
        "added_at": time.time(),
        "processed_at": time.time(),
        "report": json.dumps({"language": "en"}),
    }
    if "captions_sha256" in columns:
        row |= {"captions_size": len(data), "captions_sha256": hashlib.sha256(data).hexdigest()}
    connection.execute(
        f"INSERT INTO files ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values())
    )
    for number, gap in enumerate((3, 9)):
        connection.execute(
            "INSERT INTO suggestions (file_id, id, gap, mark, confidence, source, evidence, casing,"
            " probabilities) VALUES (1, ?, ?, ',', 0.9, 'model', 'model', NULL, '{}')",
            [number, gap],
        )
    action, arguments = encode(Accept(0))
    connection.execute(
        "INSERT INTO decisions (file_id, action, arguments, decided_by, decided_at)"
        " VALUES (1, ?, ?, 'editor', ?)",
        [action, json.dumps(arguments), time.time()],
    )
    connection.commit()
    connection.close()
    return path


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_status_and_export_read_a_project_of_every_older_schema_without_writing_to_it(
    tmp_path: Path, version: int
) -> None:
    project = old_project(tmp_path / "old.punctum", version)
    before = project.read_bytes()
    status = run_punctum_here("status", str(project), "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout) == [
        {"file": "talk", "state": "done", "gaps_to_review": 1, "pending": 1, "accepted": 1, "rejected": 0,
         "settled": 0, "decided_by_you": 1, "may_be_wrong": 0, "review_minutes": 0.1,
         "warnings": [NO_READINGS_WARNING],  # no gap readings before schema 9: nothing learnt, and said
         "house_style": {"decisions": 0, "learnt": []}}
    ]  # fmt: skip
    out = tmp_path / "out"
    exported = run_punctum_here("export", str(project), "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.startswith(f"1 files written to {out}")
    text = (out / "talk.srt").read_text(encoding="utf-8")
    assert "Hello and welcome to, the" in text and "every Saturday" in text  # accepted in, pending not
    assert project.read_bytes() == before  # read, never migrated
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.punctum", "out", "talk.srt"]
