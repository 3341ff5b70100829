"""Caption files in a project: added (read and parsed here; the store keeps bytes and rows) and
loaded back as documents with their decisions replayed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.core import commands
from app.core.history import History
from app.core.model import Document
from app.formats import FormatError, format_of, parse_document, read_bytes
from app.store.project import Project, ProjectError


def add_caption_file(
    project: Project,
    stem: str,
    captions: Path,
    media: Path | None = None,
    reference: Path | None = None,
    language: str | None = None,
    timings: Path | None = None,
    parsed: tuple[bytes, Document] | None = None,
) -> int:
    """Read and parse ``captions`` (unless ``parsed`` gives its bytes and document) and add it to
    the project; unreadable captions are a ``FormatError`` and nothing is added."""
    if parsed is None:
        data = read_bytes(Path(captions))
        parsed = data, parse_document(data, format_of(Path(captions)), Path(captions))
    data, document = parsed
    return project.add_file(stem, captions, media, reference, language, timings, data=data, document=document)


def load_document(project: Project, file_id: int) -> tuple[Document, History]:
    """The file's document as it stands: the captions as added, their suggestions, and the
    decisions replayed through the editor's own commands (so undo works as it did)."""
    data, format, path = project.stored_captions(file_id)
    try:
        document = parse_document(data, format, path)
    except FormatError as error:
        raise ProjectError(
            f"{project.path}: stored captions of file {file_id} unreadable ({error})"
        ) from None
    document.language = project.language(file_id)
    document.add_suggestions(project.suggestions(file_id))
    history = History(document)
    for action, arguments, _ in project.decisions(file_id):
        replay(document, history, action, arguments)
    document.changes_since_save = 0
    return document, history


def status_counts(project: Project, file_id: int) -> dict[str, int]:
    """Suggestions of a file by status, as the decisions leave them."""
    document, _ = load_document(project, file_id)
    return document.status_counts()


def replay(document: Document, history: History, action: str, arguments: dict[str, Any]) -> None:
    """Apply one recorded decision through the editor's own commands."""
    if action == "accept":
        history.do(commands.accept(document, int(arguments["suggestion"])))
    elif action == "reject":
        history.do(commands.reject(document, int(arguments["suggestion"])))
    elif action == "accept_many":
        history.do(commands.accept_many(document, [int(i) for i in arguments["suggestions"]]))
    elif action == "set_mark":
        history.do(commands.set_mark(document, int(arguments["word"]), str(arguments["mark"])))
    elif action == "change_mark":
        history.do(commands.change_mark(document, int(arguments["suggestion"]), str(arguments["mark"])))
    elif action == "edit_word":
        history.do(commands.edit_word(document, int(arguments["word"]), str(arguments["text"])))
    elif action == "undo":
        history.undo()
    elif action == "redo":
        history.redo()
    else:
        raise ProjectError(f"unknown action {action!r}")
