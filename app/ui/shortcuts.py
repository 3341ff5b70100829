"""The editor's commands with their default keys and menus, and what the user chose in Settings
(keys, caption limits, triage policy, listening), kept in the user's settings."""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QSettings
from PySide6.QtGui import QAction

from app.core.audio_use import DEFAULT_AUDIO_USE, AudioUse
from app.core.checks import STYLE_GUIDE_LIMITS, CaptionLimits
from app.core.triage import PRECISION_TARGET, TARGET_RANGE, TriagePolicy


@dataclass(frozen=True)
class Command:
    name: str  # settings key
    label: str
    keys: str  # default, in QKeySequence's portable text
    menu: str


COMMANDS = (
    Command("open", "&Open captions…", "Ctrl+O", "File"),
    Command("open_media", "Open &media…", "Ctrl+M", "File"),
    Command("open_reference", "Open &reference transcript…", "Ctrl+R", "File"),
    Command("open_project", "Open &project…", "Ctrl+Shift+O", "File"),
    Command("save_project", "&Save project as…", "Ctrl+S", "File"),
    Command("export", "&Export captions…", "Ctrl+E", "File"),
    Command("quit", "&Quit", "Ctrl+Q", "File"),
    Command("undo", "&Undo", "Ctrl+Z", "Edit"),
    Command("redo", "&Redo", "Ctrl+Shift+Z", "Edit"),
    Command("edit_word", "Edit the &word…", "F2", "Edit"),
    Command("recut_now", "Re-cut the cues at sentence &ends…", "Ctrl+Shift+C", "Edit"),
    Command("next", "&Next suggestion", "J", "Review"),
    Command("previous", "&Previous suggestion", "K", "Review"),
    Command("accept", "&Accept", "A", "Review"),
    Command("reject", "Re&ject", "X", "Review"),
    Command("mark_comma", "Make it a &comma", ",", "Review"),
    Command("mark_period", "Make it a p&eriod", ".", "Review"),
    Command("mark_question", "Make it a &question mark", "?", "Review"),
    Command("mark_exclamation", "Make it an e&xclamation mark", "!", "Review"),
    Command("mark_colon", "Make it a co&lon", ":", "Review"),
    Command("mark_none", "No mar&k here", "Backspace", "Review"),
    Command("accept_above", "Accept all a&bove a confidence…", "Ctrl+Shift+A", "Review"),
    Command("suggest", "&Make suggestions (after a cancel or failure)", "Ctrl+G", "Review"),
    Command("show_style", "What the house style has learn&t…", "", "Review"),
    Command("reset_style", "Reset the &house style…", "", "Review"),
    Command("lowest_first", "Lo&west confidence first", "L", "Review"),
    Command("show_all", "Show e&very gap, not only the queue", "E", "Review"),
    Command("show_settled", "Check what triage &settled (least sure first)", "S", "Review"),
    Command("play", "Pla&y the current cue", "Space", "Review"),
    Command("play_gap", "Play around the &gap (3 s)", "P", "Review"),
    Command("shortcuts", "&Keyboard shortcuts…", "", "Settings"),
    Command("limits", "Caption &limits…", "", "Settings"),
    Command("triage", "&Triage policy…", "", "Settings"),
    Command("listen", "Let the recogniser listen along the &words", "", "Settings"),
    Command("rebreak", "&Re-break lines on export", "", "Settings"),
    Command("recut", "Re-&cut cues at sentence ends on export", "", "Settings"),
    Command("help", "&Help: keys", "F1", "Help"),
    Command("about", "&About Punctum", "", "Help"),
)

#: The menus in the menu bar's order, each with its Alt key (the letter after "&").
MENUS = {"File": "&File", "Edit": "&Edit", "Review": "&Review", "Settings": "&Settings", "Help": "&Help"}

MARK_COMMANDS = {
    "mark_comma": ",",
    "mark_period": ".",
    "mark_question": "?",
    "mark_exclamation": "!",
    "mark_colon": ":",
    "mark_none": "",
}


def saved_keys(settings: QSettings) -> dict[str, str]:
    return {c.name: str(settings.value(f"shortcuts/{c.name}", c.keys)) for c in COMMANDS}


#: Each caption limit and the settings key it is kept under ("max_line_length": as earlier
#: versions kept it).
LIMIT_KEYS = {
    "max_line_chars": "limits/max_line_length",
    "max_lines": "limits/max_lines",
    "max_cps": "limits/max_cps",
    "min_ms": "limits/min_ms",
    "max_ms": "limits/max_ms",
    "min_gap_ms": "limits/min_gap_ms",
    "linger_ms": "limits/linger_ms",
}

#: The speaker dash's key (a text, not a number as the limits above).
_DASH_KEY = "limits/speaker_dash"


def saved_limits(settings: QSettings) -> CaptionLimits:
    """The caption limits set in Settings; a value that is not a number, or limits that contradict
    one another (a settings file edited by hand), give the style guides' own."""
    values: dict[str, float] = {}
    for field, key in LIMIT_KEYS.items():
        default = getattr(STYLE_GUIDE_LIMITS, field)
        try:
            value = float(settings.value(key, default))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return STYLE_GUIDE_LIMITS
        if not math.isfinite(value):
            return STYLE_GUIDE_LIMITS
        values[field] = value if field == "max_cps" else round(value)
    dash = str(settings.value(_DASH_KEY, STYLE_GUIDE_LIMITS.speaker_dash))
    try:
        return CaptionLimits(**values, speaker_dash=dash)  # type: ignore[arg-type]
    except ValueError:
        return STYLE_GUIDE_LIMITS


def save_limits(settings: QSettings, limits: CaptionLimits) -> None:
    for field, key in LIMIT_KEYS.items():
        settings.setValue(key, getattr(limits, field))
    settings.setValue(_DASH_KEY, limits.speaker_dash)


def _saved_flag(settings: QSettings, key: str, default: bool = False) -> bool:
    """An on/off setting as QSettings keeps it: the text "true" or "false"."""
    return str(settings.value(key, "true" if default else "false")).lower() == "true"


def saved_rebreak(settings: QSettings) -> bool:
    """Whether export lays out each cue's lines again once the marks are in (off unless chosen)."""
    return _saved_flag(settings, "export/rebreak")


def saved_recut(settings: QSettings) -> bool:
    """Whether export cuts the cues again at sentence ends (Settings; off until asked)."""
    return _saved_flag(settings, "export/recut")


#: Where the editor keeps what its suggestions are read from (an ``AudioUse`` value).
_AUDIO_KEY = "model/audio"
#: Where it kept, before that, whether the recogniser listens ("true" or "false").
_LISTEN_KEY = "model/listen"


def saved_audio_use(settings: QSettings) -> AudioUse:
    """What the editor's suggestions are read from: the recogniser listening along the words of a
    file with media unless turned off (Settings), in which case its captions' timings. A choice
    kept by an earlier version, as whether to listen, still holds."""
    if settings.contains(_AUDIO_KEY):
        try:
            return AudioUse(str(settings.value(_AUDIO_KEY)))
        except ValueError:  # edited by hand, or written by a later version
            return DEFAULT_AUDIO_USE
    if str(settings.value(_LISTEN_KEY, "true")).lower() == "false":
        return AudioUse.TIMINGS
    return DEFAULT_AUDIO_USE


def save_audio_use(settings: QSettings, audio: AudioUse) -> None:
    settings.setValue(_AUDIO_KEY, audio.value)
    settings.remove(_LISTEN_KEY)  # the one setting from now on


#: Where the editor keeps the triage policy's precision target (under the name earlier versions
#: gave it, so that a target chosen then still holds).
_TRIAGE_TARGET_KEY = "triage/model_threshold"


def saved_policy(settings: QSettings) -> TriagePolicy:
    """The triage policy kept in the user's settings; the measured operating point by default.
    A target is one the Triage policy dialog offers (``TARGET_RANGE``, two decimals), so that the
    editor settles by what the dialog shows: one kept outside it (earlier versions offered 0.50 to
    1.00) is brought to the nearest end, and one that is no number (edited by hand: "nan", "x")
    is the default."""
    agreement = _saved_flag(settings, "triage/agreement", default=True)
    target = str(settings.value(_TRIAGE_TARGET_KEY, PRECISION_TARGET)).strip()
    if target.lower() in ("", "none"):
        return TriagePolicy(agreement, None)
    try:
        value = float(target)
    except ValueError:
        value = PRECISION_TARGET
    if not math.isfinite(value):
        value = PRECISION_TARGET
    low, high = TARGET_RANGE
    return TriagePolicy(agreement, round(min(high, max(low, value)), 2))


def save_policy(settings: QSettings, policy: TriagePolicy) -> None:
    settings.setValue("triage/agreement", "true" if policy.agreement else "false")
    target = policy.precision_target
    settings.setValue(_TRIAGE_TARGET_KEY, "none" if target is None else target)


def show_recut_on_export(action: QAction, applied: bool, chosen: bool) -> None:
    """Settings ▸ Re-cut on export as export will do it: ticked, and not to be unticked, while
    the open file's cues stand re-cut (``applied``); else as the person chose (``chosen``), which
    showing it so never changes."""
    action.blockSignals(True)
    action.setChecked(applied or chosen)
    action.blockSignals(False)
    action.setEnabled(not applied)
    action.setStatusTip(
        "This file's cues are cut at sentence ends already (Undo goes back)" if applied else ""
    )
