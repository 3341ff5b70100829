"""What a batch folder holds: each caption file grouped with its media, reference and timings by
name (``talk.en.srt``, ``talk.mp4``, ``talk.ref.txt``), and the files that could not be placed.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from app.services.files import COMPANION_KINDS, FileKind, classify

_TEMPORARY = re.compile(r"(^~|~$|^#.*#$|\.(tmp|temp|part|crdownload|swp|bak)$)", re.IGNORECASE)


@dataclass(frozen=True)
class FileGroup:
    """One caption file of a folder and the files that go with it."""

    stem: str  # its path in the folder without suffixes ("talks/intro" for talks/intro.en.srt)
    captions: Path
    language: str | None = None  # as the captions' name gives it
    media: Path | None = None
    reference: Path | None = None
    timings: Path | None = None


@dataclass
class Pairing:
    """What a folder holds: groups to process, and files that could not be placed."""

    groups: list[FileGroup] = field(default_factory=list)
    unpaired: list[Path] = field(default_factory=list)
    ambiguous: dict[str, list[Path]] = field(default_factory=dict)
    #: Files whose captions changed on disk since they were imported: what became of each.
    reimported: dict[str, str] = field(default_factory=dict)
    #: What was passed over, and why: links not followed (out of the folder, a loop, pointing
    #: nowhere), subfolders that cannot be read, and pipes, devices or folders with the name of a
    #: file Punctum uses.
    skipped: dict[Path, str] = field(default_factory=dict)
    #: Files this import could not read, by stem: failed before any processing, with the reason.
    failed_imports: dict[str, str] = field(default_factory=dict)


def pair_folder(folder: Path, project: Path | None = None) -> Pairing:
    """Group files by stem (``talk.mp4``, ``talk.en.srt``, ``talk.ref.txt``), recursively;
    ``project`` (and the files SQLite keeps beside it) is passed over, whatever it is named."""
    root = folder.resolve()
    own = (
        set()
        if project is None
        else {Path(f"{project.resolve()}{end}") for end in ("", "-wal", "-shm", "-journal", "-lock")}
    )
    captions: dict[str, list[tuple[Path, str | None]]] = {}
    # The companions by kind, then by stem; a kind's value is its field of ``FileGroup``.
    tables: dict[FileKind, dict[str, list[Path]]] = {kind: {} for kind in COMPANION_KINDS}
    pairing = Pairing()
    for path in _walk(root, pairing.skipped):
        if path.resolve() in own:
            continue  # the project the batch writes: named by the person, never captions
        role = classify(path)
        if role is None:
            continue
        stem = (path.relative_to(root).parent / role.stem).as_posix()
        if role.kind is FileKind.CAPTIONS:
            captions.setdefault(stem, []).append((path, role.language))
        elif role.kind in tables:
            tables[role.kind].setdefault(stem, []).append(path)
    for stem in sorted(captions):
        found = captions[stem]
        if len(found) > 1:
            pairing.ambiguous[stem] = sorted(p for p, _ in found)
            continue
        companions: dict[str, Path | None] = {}
        for kind, table in tables.items():
            candidates = table.pop(stem, [])
            if len(candidates) > 1:
                pairing.ambiguous[stem] = sorted(candidates)
                break
            companions[kind.value] = candidates[0] if candidates else None
        else:
            pairing.groups.append(FileGroup(stem, found[0][0], found[0][1], **companions))
    for table in tables.values():
        for stem, paths in table.items():
            if stem not in pairing.ambiguous:
                pairing.unpaired.extend(paths)
    pairing.unpaired.sort()
    return pairing


def _walk(root: Path, skipped: dict[Path, str]) -> Iterator[Path]:
    """Regular files under ``root``: no hidden or temporary files. Links that lead outside, loop
    or lead nowhere, subfolders that cannot be read, and pipes, devices or folders named as the
    files Punctum uses go into ``skipped`` with the reason."""

    def unreadable(error: OSError) -> None:
        why = error.strerror or str(error)
        skipped[Path(error.filename or root)] = f"a folder that cannot be read ({why})"

    for directory, folders, files in os.walk(root, onerror=unreadable, followlinks=False):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for name in folders:
            role = classify(Path(name))
            if role is not None and not (Path(directory) / name).is_symlink():
                skipped[Path(directory) / name] = f"a folder, not {role.kind.value}"
        for name in sorted(files):
            if name.startswith(".") or _TEMPORARY.search(name):
                continue
            path = Path(directory) / name
            if path.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except RuntimeError:  # pathlib's word for a loop of links (before Python 3.13)
                    skipped[path] = "a link that loops"
                    continue
                except OSError as error:
                    looping = error.errno == errno.ELOOP
                    skipped[path] = "a link that loops" if looping else "a link to nothing"
                    continue
                if not target.is_relative_to(root):
                    skipped[path] = "a link out of the folder"
                    continue
            if path.is_file():
                yield path
            elif classify(path) is not None:
                skipped[path] = "not a regular file (a pipe, device or socket)"
