"""Load every file of the shared real-world subtitle collection; used by a test and a report."""

from __future__ import annotations

import collections
from pathlib import Path

from app.formats import FormatError, read_document, render_document
from app.formats.encoding import encode

SUFFIXES = {".srt", ".vtt", ".sbv", ".txt", ".ass", ".ssa"}


def caption_files(root: Path) -> list[Path]:
    """The files the collection's ODDITIES.tsv lists (its catalogue), else every caption file."""
    catalogue = root / "ODDITIES.tsv"
    if catalogue.exists():
        rows = catalogue.read_text(encoding="utf-8").splitlines()[1:]
        return [root / row.split("\t")[0] for row in rows if row.strip()]
    return [p for p in sorted(root.rglob("*")) if p.is_file() and p.suffix.lower() in SUFFIXES]


def survey(root: Path) -> dict[str, dict[str, object]]:
    """Per source folder: files loaded, rejected (FormatError), and loaded files that do not write back
    byte for byte with the reason allowed for it. Any other exception propagates."""
    report: dict[str, dict[str, object]] = collections.defaultdict(
        lambda: {"loaded": 0, "rejected": 0, "round_trip_exact": 0, "normalised": [], "rejections": []}
    )
    for path in caption_files(root):
        entry = report[path.relative_to(root).parts[0]]
        try:
            document = read_document(path)
        except FormatError as error:
            entry["rejected"] += 1  # type: ignore[operator]
            entry["rejections"].append(f"{path.relative_to(root)}: {error.reason}")  # type: ignore[attr-defined]
            continue
        entry["loaded"] += 1  # type: ignore[operator]
        written = encode(render_document(document), document.encoding, document.bom, document.line_ending)
        if written == path.read_bytes():
            entry["round_trip_exact"] += 1  # type: ignore[operator]
        else:
            entry["normalised"].append(  # type: ignore[attr-defined]
                {"file": str(path.relative_to(root)), "warnings": document.warnings}
            )
    return dict(report)
