"""The one error every reader raises for input it cannot take."""

from __future__ import annotations

from pathlib import Path

from app.core.errors import PunctumError


class FormatError(PunctumError):
    """A caption file that cannot be read, named with the line at fault where there is one."""

    def __init__(self, path: Path | str | None, line: int | None, reason: str) -> None:
        self.path = Path(path) if path is not None else None
        self.line = line
        self.reason = reason
        where = str(self.path) if self.path is not None else "<text>"
        if line is not None:
            where += f":{line}"
        super().__init__(f"{where}: {reason}")
