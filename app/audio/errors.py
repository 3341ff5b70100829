"""The one error the audio layer raises for media it cannot take."""

from __future__ import annotations

from pathlib import Path

from app.core.errors import PunctumError


class AudioError(PunctumError):
    """Media that cannot be decoded, named with the reason (and a fix where there is one)."""

    def __init__(self, path: Path | str | None, reason: str) -> None:
        self.path = Path(path) if path is not None else None
        self.reason = reason
        super().__init__(f"{self.path}: {reason}" if self.path is not None else reason)
