"""Damaged caption files: whatever the damage, reading raises FormatError or nothing at all."""

from __future__ import annotations

import random
import re
from pathlib import Path

from app.formats import FormatError, format_of, parse_document, render_document
from app.formats.encoding import encode
from tests.conftest import FIXTURES, SAMPLE

CASES = 10_000
#: The formats read since the fuzzing began, each with a fixture of its odd corners.
NEW_FORMATS = (".sbv", ".ass", ".ssa", ".ttml", ".dfxp", ".scc")
SEEDS = [p for p in sorted(FIXTURES.iterdir()) if p.suffix in (".srt", ".vtt", ".txt", *NEW_FORMATS)] + [
    SAMPLE / "sample.srt",
    SAMPLE / "sample.vtt",
]
_TIME = re.compile(rb"\d{1,2}:\d{2}(?::\d{2})?[,.]\d{3}")


def _flip_bytes(data: bytes, rng: random.Random) -> bytes:
    buffer = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if buffer:
            buffer[rng.randrange(len(buffer))] = rng.randrange(256)
    return bytes(buffer)


def _cut_lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.splitlines(keepends=True)
    for _ in range(rng.randint(1, 4)):
        if lines:
            del lines[rng.randrange(len(lines))]
    if lines and rng.random() < 0.5:
        cut = rng.randrange(len(lines))
        lines[cut] = lines[cut][: rng.randrange(len(lines[cut]) + 1)]
    return b"".join(lines)


def _scramble_times(data: bytes, rng: random.Random) -> bytes:
    def scramble(match: re.Match[bytes]) -> bytes:
        if rng.random() < 0.3:
            return match.group()
        choice = rng.random()
        if choice < 0.3:
            return bytes(rng.choice(b"0123456789:,.-x ") for _ in range(rng.randint(0, 14)))
        if choice < 0.6:
            return match.group()[::-1]
        return b"%d:%d:%d,%d" % tuple(rng.randint(-5, 10**6) for _ in range(4))

    return _TIME.sub(scramble, data)


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _splice(data: bytes, rng: random.Random) -> bytes:
    junk = rng.choice(
        [
            b"-->",
            b"\n\n",
            b"WEBVTT",
            b"\r",
            b"<i>",
            b"&amp",
            b"\xff\xfe",
            b"\x00",
            b"{\\an8",
            b" 9137",
            b"\t942f 942f",
        ]
    )
    position = rng.randrange(len(data) + 1)
    return data[:position] + junk + data[position:]


MUTATIONS = [_flip_bytes, _cut_lines, _scramble_times, _truncate, _splice]


def test_damaged_files_raise_nothing_but_format_error() -> None:
    rng = random.Random(20261122)
    originals = [(path, path.read_bytes()) for path in SEEDS]
    outcomes = {"loaded": 0, "rejected": 0}
    for case in range(CASES):
        path, data = originals[case % len(originals)]
        for mutate in rng.sample(MUTATIONS, rng.randint(1, 3)):
            data = mutate(data, rng)
        try:
            document = parse_document(data, format_of(path), Path(path.name))
        except FormatError as error:
            assert str(error)
            assert "\n" not in str(error)
            outcomes["rejected"] += 1
            continue
        outcomes["loaded"] += 1
        # What loads also writes back, to the very bytes read.
        written = encode(render_document(document), document.encoding, document.bom, document.line_ending)
        # The documented normalisations: mixed line endings, and cp1252 lines in UTF-8 written as UTF-8.
        normalised = ("mixed line endings", "not UTF-8 but cp1252")
        if not any(note in warning for warning in document.warnings for note in normalised):
            assert written == data, path.name
    assert outcomes["loaded"] > 1000
    assert outcomes["rejected"] > 1000
