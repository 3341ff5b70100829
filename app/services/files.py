"""What a file is to Punctum, from its name alone: captions, media, a reference transcript, word
timings or a project. The editor (files opened or dropped) and folder pairing (batch) ask here, so
the two never disagree."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from app.formats import CAPTION_SUFFIXES as _READ

#: Caption files: every format ``app.formats`` reads and writes with cues.
CAPTION_SUFFIXES = set(_READ)
MEDIA_SUFFIXES = {
    ".mp4", ".mkv", ".mov", ".webm", ".avi", ".m4v", ".mpg", ".mpeg", ".ts",
    ".mp3", ".wav", ".flac", ".ogg", ".oga", ".opus", ".m4a", ".aac", ".wma",
}  # fmt: skip
#: "talk.ref.txt", "talk.transcript.srt": a reference in any text or caption format.
REFERENCE_MARKERS = ("ref", "transcript")
REFERENCE_SUFFIXES = {".txt", *CAPTION_SUFFIXES}
#: The recogniser's word times: "talk.ctm" or "talk.words.json".
TIMING_SUFFIX, TIMING_JSON = ".ctm", ".words.json"
PROJECT_SUFFIX = ".punctum"
_LANGUAGE = re.compile(r"^[a-z]{2,3}(-[A-Za-z]{2,4})?$")


class FileKind(StrEnum):
    CAPTIONS = "captions"
    MEDIA = "media"
    REFERENCE = "reference"
    TIMINGS = "timings"
    PROJECT = "project"


@dataclass(frozen=True)
class FileRole:
    """A file's kind, the stem it pairs on ("talk" for talk.en.srt, talk.ref.txt, talk.words.json)
    and, for captions, the language its name gives."""

    kind: FileKind
    stem: str
    language: str | None = None


def classify(path: Path) -> FileRole | None:
    """What ``path`` is by its name; None for a file Punctum does not use."""
    parts = path.name.split(".")
    suffix = path.suffix.lower()
    if len(parts) >= 3 and parts[-2].lower() in REFERENCE_MARKERS and suffix in REFERENCE_SUFFIXES:
        return FileRole(FileKind.REFERENCE, ".".join(parts[:-2]))
    if suffix in CAPTION_SUFFIXES:
        language = parts[-2] if len(parts) >= 3 and _LANGUAGE.match(parts[-2]) else None
        return FileRole(FileKind.CAPTIONS, ".".join(parts[:-2] if language else parts[:-1]), language)
    if suffix in MEDIA_SUFFIXES:
        return FileRole(FileKind.MEDIA, ".".join(parts[:-1]))
    if suffix == TIMING_SUFFIX or path.name.lower().endswith(TIMING_JSON):
        return FileRole(FileKind.TIMINGS, ".".join(parts[:-2] if suffix == ".json" else parts[:-1]))
    if suffix == ".txt":
        # A bare "talk.txt" beside "talk.srt" is its reference transcript.
        return FileRole(FileKind.REFERENCE, ".".join(parts[:-1]))
    if suffix == PROJECT_SUFFIX:
        return FileRole(FileKind.PROJECT, ".".join(parts[:-1]))
    return None


#: The files that go with captions, by kind.
COMPANION_KINDS = (FileKind.MEDIA, FileKind.REFERENCE, FileKind.TIMINGS)


def companions_of(captions: Path) -> dict[FileKind, list[Path]]:
    """The files beside ``captions`` that go with it, as a folder's batch pairs them: the media,
    references and word timings of the same stem (``talk.mp4``, ``talk.ref.txt`` and
    ``talk.words.json`` for ``talk.en.srt``), each kind's candidates sorted by name."""
    role = classify(captions)
    stem = role.stem if role is not None else captions.stem
    found: dict[FileKind, list[Path]] = {kind: [] for kind in COMPANION_KINDS}
    try:
        beside = sorted(captions.parent.iterdir())
    except OSError:
        return found
    for path in beside:
        other = classify(path)
        if other is not None and other.kind in found and other.stem == stem and path.is_file():
            found[other.kind].append(path)
    return found
