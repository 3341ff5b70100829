"""How much of the audio a caption file's analysis uses: one setting, from the command line's
``--audio`` to the editor's Settings menu."""

from __future__ import annotations

from enum import StrEnum


class AudioUse(StrEnum):
    """What the suggestions are read from, each value adding to the one before."""

    TEXT = "text"
    TIMINGS = "timings"
    LISTEN = "listen"

    @property
    def help(self) -> str:
        """What the value means, in one line."""
        return _HELP[self]

    @property
    def with_audio(self) -> bool:
        """Whether the media and word timings are used at all."""
        return self is not AudioUse.TEXT


#: The default everywhere: the recogniser listens wherever there is media.
DEFAULT_AUDIO_USE = AudioUse.LISTEN

_HELP = {
    AudioUse.TEXT: "the words alone; media and word timings ignored",
    AudioUse.TIMINGS: "also the captions' timings and word timing files, and the media's pauses and"
    " pitch measured for review; nothing listens",
    AudioUse.LISTEN: "also the speech recogniser, listening along the words in the media",
}
