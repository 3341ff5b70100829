"""Opening, saving and exporting: files chosen, dropped or remembered."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QFileDialog

from app.core.bundled import sample_dir
from app.core.errors import PunctumError
from app.services.errors import DatabaseError
from app.services.files import CAPTION_SUFFIXES, FileKind, classify, companions_of
from app.services.review import ReviewSession
from app.ui.dialogs import confirm
from app.ui.shortcuts import saved_rebreak, saved_recut

if TYPE_CHECKING:
    from app.services.transcribe import Transcript
    from app.ui.shell import EditorWindow

SAMPLE = sample_dir()
MAX_RECENT = 10
#: Captions to review, or a video or audio file without captions, to transcribe first.
#: Each caption format's files, as Qt's file dialogs filter them ("*.srt *.vtt ...").
CAPTION_PATTERNS = " ".join(f"*{suffix}" for suffix in sorted(CAPTION_SUFFIXES))
OPEN_FILTER = (
    f"Captions ({CAPTION_PATTERNS});;"
    "Media to transcribe (*.mp4 *.mkv *.mov *.webm *.avi *.mp3 *.m4a *.wav *.flac *.ogg *.opus);;"
    "All files (*)"
)


#: Where the Export dialog last wrote (kept in the settings).
EXPORT_FOLDER_KEY = "export/folder"


def _installed_folders() -> list[Path]:
    """The folders Punctum was installed or unpacked into: the sample and the other files that
    travel with it, and the package itself. Not a place to write one's own files."""
    return [SAMPLE.resolve().parent, Path(__file__).resolve().parents[1]]


def _writable_folder(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


def export_folder(settings: QSettings, captions: Path) -> Path:
    """Where the Export dialog opens: the folder last exported to; else the captions' own folder,
    when it can be written to and is not one Punctum was installed into (the bundled sample's);
    else the home folder."""
    kept = settings.value(EXPORT_FOLDER_KEY)
    if isinstance(kept, str) and kept and _writable_folder(Path(kept)):
        return Path(kept)
    folder = captions.parent.resolve()
    if _writable_folder(folder) and not any(folder.is_relative_to(i) for i in _installed_folders()):
        return folder
    return Path.home()


def sort_paths(paths: list[Path]) -> dict[str, Path | None]:
    """Which of the given files are captions, media, a reference and a project."""
    found: dict[str, Path | None] = {kind.value: None for kind in FileKind}
    for path in paths:
        role = classify(path)
        if role is not None and found[role.kind.value] is None:
            found[role.kind.value] = path
    return found


class FileController:
    """What the File menu, the welcome page and drops do."""

    def __init__(self, window: EditorWindow) -> None:
        self.window = window

    def open_sample(self) -> None:
        self.open_captions(SAMPLE / "sample.srt", SAMPLE / "sample.mp4", SAMPLE / "reference.txt")

    def choose_captions(self) -> None:
        if path := self._chosen("Open captions", OPEN_FILTER):
            self.open_paths([path])

    def choose_project(self) -> None:
        if path := self._chosen("Open project", "Punctum projects (*.punctum)"):
            self.open_project(path)

    def choose_media(self) -> None:
        if self.window.session is not None and (path := self._chosen("Open media", "Video and audio (*)")):
            self.set_media(path)

    def choose_reference(self) -> None:
        if self.window.session is None:
            return
        if path := self._chosen("Open reference transcript", f"Text (*.txt {CAPTION_PATTERNS})"):
            self.add_reference(path)

    def _chosen(self, title: str, kinds: str, save_as: str | None = None) -> Path | None:
        """A file chosen in Qt's dialog: one to open, or, given ``save_as`` (the name offered), one to
        write; None when the dialog is cancelled."""
        parent = self.window.dialog_parent()
        if save_as is None:
            path, _ = QFileDialog.getOpenFileName(parent, title, "", kinds)
        else:
            path, _ = QFileDialog.getSaveFileName(parent, title, save_as, kinds)
        return Path(path) if path else None

    def open_paths(self, paths: list[Path]) -> bool:
        """Open what was dropped, chosen or named on the command line."""
        found = sort_paths(paths)
        if found["project"] is not None:
            return self.open_project(found["project"])
        if found["captions"] is None and found["media"] is not None:
            self.offer_transcription(found["media"], found["reference"])
            return True
        if found["captions"] is None:
            names = ", ".join(p.name for p in paths) or "nothing"
            self.window.show_error(
                "Nothing to open", f"{names}: no SRT or VTT captions or Punctum project among them"
            )
            return False
        opened = self.open_captions(found["captions"], found["media"], found["reference"], found["timings"])
        ignored = [p.name for p in paths if p not in found.values()]
        if ignored:  # an unknown type, or a second file of a kind already chosen
            self.window.statusBar().showMessage(f"Not opened: {', '.join(ignored)}", 10000)
        return opened

    def open_captions(
        self,
        captions: Path,
        media: Path | None = None,
        reference: Path | None = None,
        timings: Path | None = None,
    ) -> bool:
        """Start opening captions; reading and parsing run off the UI thread, errors come as a dialog.
        Files not given are found beside the captions as batch pairs them: one of a kind, not a guess
        among several."""
        beside = {
            kind: found[0] if len(found) == 1 else None for kind, found in companions_of(captions).items()
        }
        media = media or beside[FileKind.MEDIA]
        reference = reference or beside[FileKind.REFERENCE]
        timings = timings or beside[FileKind.TIMINGS]
        return self._open(
            "The captions cannot be opened",
            lambda: ReviewSession.open(captions, media, reference, timings=timings),
            captions,
        )

    def offer_transcription(self, media: Path, reference: Path | None = None) -> None:
        """Media with no captions beside it: offer to recognise its speech here, then review (with
        ``reference``, a transcript dropped with it, carried over as usual)."""
        confirm(
            self.window.dialog_parent(),
            "No captions for this media",
            f"{media.name} has no captions beside it.\n\nTranscribe its speech on this computer? "
            f"The captions are written to {media.with_suffix('.vtt').name} beside it, with each "
            "word's time, and open for review when done.",
            "&Transcribe",
            lambda: self.transcribe(media, reference),
            harmless=True,
        )

    def transcribe(self, media: Path, reference: Path | None = None) -> None:
        """Recognise ``media``'s speech into ``<name>.vtt`` off the window's thread (progress and
        Cancel in the status bar), then open it with the media for review."""
        output = media.with_suffix(".vtt")
        if output.exists():
            self.window.show_error("Captions are already there", f"{output}: open it, or move it away first")
            return

        def done(transcript: Transcript) -> None:
            self.window.statusBar().showMessage(
                f"Transcribed {transcript.words} words into {transcript.cues} cues "
                f"({transcript.language}) in {transcript.seconds:.0f} s",
                10000,
            )
            self.open_captions(output, media, reference)

        def failed(reason: str) -> None:
            self.window.show_error("The speech could not be transcribed", reason)

        def cancelled() -> None:
            self.window.statusBar().showMessage("Transcription cancelled; nothing was written", 8000)

        # In the background process, like the listener: a cancel ends it at once.
        work = partial(self.window.process.transcribe, media, output)
        self.window.worker.submit("transcribe", work, done, failed, cancelled)

    def open_project(self, path: Path) -> bool:
        return self._open("The project cannot be opened", lambda: ReviewSession.open_project(path), path)

    def _open(self, failure: str, opening: Any, remembered: Path) -> bool:
        self.window.worker.cancel_all()  # whatever ran for the previous file gives way
        self.window.statusBar().showMessage(f"Opening {remembered.name}…")
        # The editor's page at once, empty until the file is read: reopening showed the welcome
        # page for some seconds first, as if nothing were being opened.
        first = self.window.session is None
        if first:
            self.window.pages.setCurrentIndex(1)

        def done(session: ReviewSession) -> None:
            self.window.statusBar().clearMessage()
            self._remember(remembered)
            self.window.start_session(session)

        def failed(reason: str) -> None:
            self.window.statusBar().clearMessage()
            if first and self.window.session is None:
                self.window.pages.setCurrentIndex(0)  # nothing opened: back to the recent files
            self.window.show_error(failure, reason)

        self.window.worker.submit("open", lambda progress, cancelled: opening(), done, failed)
        return True

    def set_media(self, media: Path) -> None:
        if self.window.session is None:
            return
        try:
            self.window.session.relink_media(media)
        except (PunctumError, OSError) as error:
            self.window.show_error("The media cannot be used", str(error))
            return
        self.window.load_media(media)

    def add_reference(self, reference: Path) -> None:
        if self.window.session is None:
            return
        if self.window.worker.busy:
            # The analysis replaces the file's suggestions when it ends; decisions made on the
            # reference's meanwhile would then point at the wrong ones.
            self.window.show_error(
                "Not while suggestions are being made",
                "Open the reference when the progress bar is done, or cancel it first.",
            )
            return
        try:
            report = self.window.session.add_reference(reference)
        except (PunctumError, OSError, DatabaseError) as error:
            self.window.show_error("The reference cannot be used", str(error))
            return
        self.window.refresh_views()
        self.window.statusBar().showMessage(f"Reference: {report.get('carried', 0)} marks carried over", 6000)

    def save_project_as(self, path: Path | None = None) -> None:
        if self.window.session is None:
            return
        path = path or self._chosen("Save project", "Punctum projects (*.punctum)", save_as="")
        if path is None:
            return
        if not path.suffix:  # Qt's dialog adds none on Linux; without it the project would not reopen
            path = path.with_suffix(".punctum")
        try:
            session = self.window.session.save_as(path)
        except (PunctumError, OSError) as error:
            self.window.show_error("The project cannot be saved", str(error))
            return
        self.window.start_session(session)
        self._remember(path)

    def export(self, path: Path | None = None) -> bool:
        if self.window.session is None:
            return False
        source = self.window.session.entry.captions_path
        asked_to_replace = False
        if path is None:
            suggested = (
                export_folder(self.window.settings, source) / f"{source.stem}.punctuated{source.suffix}"
            )
            path = self._chosen("Export captions", f"Captions ({CAPTION_PATTERNS})", save_as=str(suggested))
            if path is None:
                return False
            asked_to_replace = True  # the dialog asked before replacing any file
        rebreak = saved_rebreak(self.window.settings)
        recut = saved_recut(self.window.settings)
        try:
            exported = self.window.session.export(
                path, replace_source=asked_to_replace, rebreak=rebreak, recut=recut
            )
        except (PunctumError, OSError) as error:
            self.window.show_error("The captions cannot be exported", str(error))
            return False
        told = "".join(f"; {line}" for line in exported.summaries())
        self.window.statusBar().showMessage(f"Exported {path}{told}", 8000)
        self.window.settings.setValue(EXPORT_FOLDER_KEY, str(path.resolve().parent))
        return True

    def _remember(self, path: Path) -> None:
        recent = list(dict.fromkeys([str(path.resolve()), *self._recent()]))  # each once, the newest first
        self.window.settings.setValue("recent", recent[:MAX_RECENT])
        self.fill_recent()

    def _recent(self) -> list[str]:
        value = self.window.settings.value("recent", [])
        if isinstance(value, str):
            return [value]
        return [str(item) for item in value] if isinstance(value, list) else []

    def fill_recent(self) -> None:
        recent = self._recent()
        if hasattr(self.window.dialog_parent(), "recent_list"):
            self.window.recent_list.clear()
            self.window.recent_list.addItems(recent)
        if hasattr(self.window.dialog_parent(), "recent_menu"):
            self.window.recent_menu.clear()
            for item in recent:
                action = self.window.recent_menu.addAction(item)
                action.triggered.connect(lambda _=False, item=item: self.open_paths([Path(item)]))
