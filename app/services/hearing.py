"""Files a batch did before with less of their audio than it would use now: processed with
``--audio text``, measured but not listened to, or before their media was there (added to the
folder or relinked since); and files an earlier Punctum did without keeping its readings of their
gaps. The batch analyses them again, their decisions carried over as a
re-import carries them (``projects.reanalyse_file``); to tell, each result keeps what its analysis
was given (``audio_given``)."""

from __future__ import annotations

from pathlib import Path

from app.core.audio_use import AudioUse
from app.core.model import Evidence
from app.store.files import stored_path
from app.store.project import DONE, FileEntry, Project, ProjectError

#: Why a file done by an earlier Punctum is analysed again: it kept no readings of its gaps, so its
#: decisions teach no house style (``services.restyle``) until it is.
READINGS_MISSING = "done by an earlier Punctum, whose decisions teach the house style nothing without them"
#: The key of a file's stored report that says what its analysis was given.
AUDIO_GIVEN = "audio_given"


def audio_given(project: Project, entry: FileEntry, audio: AudioUse) -> dict[str, str | None]:
    """What an analysis of ``entry`` with ``audio`` is given: the setting, and the media and word
    timings it reads (as the project keeps their paths; None for what it does not read)."""

    def kept(path: Path | None) -> str | None:
        return stored_path(project.folder, path) if path is not None and audio.with_audio else None

    return {"audio": audio.value, "media": kept(entry.media_path), "timings": kept(entry.timings_path)}


def why_hear_again(project: Project, entry: FileEntry, audio: AudioUse) -> tuple[str, str] | None:
    """What a file done before would now be analysed with that it was not given, and why ("its
    media", "processed without audio before"); None when nothing would be new. It is new when
    ``audio`` uses more of the media or word timings than the setting it was done with, or they
    were added or relinked since. Only what is there counts: media gone missing is heard when found."""
    if entry.state == DONE and not project.has_gap_readings(entry.id):
        return "its gaps' readings kept", READINGS_MISSING
    if entry.state != DONE or not audio.with_audio:
        return None
    media = entry.media_path if entry.media_path is not None and entry.media_path.is_file() else None
    timings = entry.timings_path if entry.timings_path is not None and entry.timings_path.is_file() else None
    if media is None and timings is None:
        return None
    try:
        report = project.report(entry.id)
    except ProjectError:  # damaged: status says so; the file is left as it is
        return None
    given = report.get(AUDIO_GIVEN)
    if not isinstance(given, dict):
        # Done by an earlier version or the editor, which do not say: read from what it found.
        if report.get("evidence") != Evidence.TEXT or "timings" in report:
            return None
        given = {"audio": AudioUse.TEXT.value}
    now = audio_given(project, entry, audio)
    what = "its media" if media is not None else "its word timings"
    if given.get("audio") == AudioUse.TEXT.value:
        return what, "processed without audio before"
    if media is not None and now["media"] != given.get("media"):
        return what, "added or relinked since it was processed"
    if media is not None and audio is AudioUse.LISTEN and given.get("audio") != AudioUse.LISTEN.value:
        return "its media listened to", "only measured before"
    if timings is not None and now["timings"] != given.get("timings"):
        return "its word timings", "added since it was processed"
    return None
