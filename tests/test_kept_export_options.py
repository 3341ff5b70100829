"""``--rebreak`` and ``--resegment`` kept in a project by batch for every export of it, left out of
one export with ``--no-…``, and turned off in the project by ``batch --no-…``."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from app.formats import read_document
from tests.conftest import SAMPLE, run_punctum_here


def _same_text_words(one: Path, other: Path) -> bool:
    """The same text between the timing lines, however the lines break."""
    return one.read_text(encoding="utf-8").split() == other.read_text(encoding="utf-8").split()


def _same_words(one: Path, other: Path) -> bool:
    """The same words, marks and capitals in order, however the cues are cut."""
    return [w.rendered() for w in read_document(one).words()] == [
        w.rendered() for w in read_document(other).words()
    ]


@pytest.mark.parametrize(
    ("option", "told", "said_when_on", "same"),
    [
        ("rebreak", "lines re-broken", ("lines re-broken",), _same_text_words),
        ("recut", "cues re-cut", ("cues re-cut 24 ->", "times estimated"), _same_words),
    ],
)
def test_an_option_batch_keeps_holds_for_every_export_until_turned_off(
    tiny_model: Path,
    tmp_path: Path,
    option: str,
    told: str,
    said_when_on: tuple[str, ...],
    same: Callable[[Path, Path], bool],
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "talk.srt")
    project = tmp_path / "p.punctum"
    batch = ("batch", str(folder), "--project", str(project), "--model", str(tiny_model), "--no-audio")
    batch = (*batch, "--apply", "all")

    def export(name: str, *asked: str) -> tuple[str, Path]:
        exported = run_punctum_here("export", str(project), "--out", str(tmp_path / name), *asked)
        assert exported.returncode == 0, exported.stderr
        return exported.stdout, tmp_path / name / "talk.srt"

    assert run_punctum_here(*batch).returncode == 0
    said, plain = export("plain")
    assert told not in said
    assert run_punctum_here(*batch, f"--{option}").returncode == 0
    said, kept = export("kept")
    assert all(phrase in said for phrase in said_when_on), said
    assert same(kept, plain) and kept.read_bytes() != plain.read_bytes()
    # This once, without; the project still asks for it.
    said, once = export("once", f"--no-{option}")
    assert told not in said and once.read_bytes() == plain.read_bytes()
    assert export("again")[1].read_bytes() == kept.read_bytes()
    # Turned off in the project: every export is as the cues and lines were.
    assert run_punctum_here(*batch, f"--no-{option}").returncode == 0
    said, after = export("off")
    assert told not in said and after.read_bytes() == plain.read_bytes()
    assert (folder / "talk.srt").read_bytes() == (SAMPLE / "sample.srt").read_bytes()  # input untouched


def test_the_re_cut_is_asked_for_by_the_name_the_editor_gives_it_and_by_its_earlier_one() -> None:
    from app.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["punctuate", "talk.srt", "--recut"]).recut is True
    assert parser.parse_args(["punctuate", "talk.srt", "--resegment"]).recut is True
    batch = ["batch", "in", "--project", "p.punctum"]
    assert parser.parse_args([*batch, "--no-resegment"]).recut is False
    assert parser.parse_args(["export", "p.punctum", "--out", "out"]).recut is None
