"""Where the editor keeps the work on captions opened on their own: an autosave project per
captions file in the user's data folder, and how a file already in a project is found again."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from app.store.project import Project


def data_folder() -> Path:
    """Where autosave projects live; ``PUNCTUM_DATA_DIR`` moves it (tests, portable installs)."""
    configured = os.environ.get("PUNCTUM_DATA_DIR")
    if configured:
        return Path(configured)
    from platformdirs import user_data_dir

    return Path(user_data_dir("punctum", appauthor=False))


def autosave_path(captions: Path) -> Path:
    key = hashlib.sha1(str(Path(captions).resolve()).encode()).hexdigest()[:16]
    return data_folder() / "autosave" / f"{Path(captions).stem}-{key}.punctum"


def matching_file(project: Project, captions: Path, data: bytes) -> int | None:
    for entry in project.files():
        if entry.captions_path == captions and project.captions_bytes(entry.id) == data:
            return entry.id
    return None


def free_stem(project: Project, stem: str) -> str:
    taken = {e.stem for e in project.files()}
    candidate, number = stem, 2
    while candidate in taken:
        candidate, number = f"{stem}-{number}", number + 1
    return candidate
