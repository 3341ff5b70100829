"""A house style as a small JSON file (``--style FILE``, ``punctum style --write``), and what a
project's style says of itself (``punctum status``): the command line's way to the style, which
it may not import from ``app.ml`` itself."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.core.errors import UsageError
from app.ml.house_style import HouseStyle as HouseStyle  # re-exported for the command line
from app.ml.house_style import StyleError
from app.ml.style_file import read_style, style_text


class StyleFileError(UsageError):
    """A style file that is missing, unreadable, malformed or of another kind: the user named the
    wrong file, as a usage error is."""


def read_style_file(path: Path, option: str = "--style") -> HouseStyle:
    """The style in ``path``; ``StyleFileError`` in one line, naming ``option``, for anything else."""
    try:
        return read_style(Path(path))
    except StyleError as error:
        raise StyleFileError(f"{option} {error}") from None


def write_style_file(style: HouseStyle, path: Path) -> None:
    """``style`` as a style file at ``path``, atomically (a failure is one ``WriteError`` line)."""
    from app.services.documents import save_together

    save_together(None, None, [(Path(path), style_text(style))])


@dataclass(frozen=True)
class StyleStatus:
    """What a house style rests on and has learnt, as ``punctum status`` tells it."""

    decisions: int  # the decided gaps it was fitted on, with those of a style file it started from
    learnt: list[str]  # what it has learnt, in words, largest first
    summary: str  # both in one line

    @classmethod
    def of(cls, style: HouseStyle, capitals: str = "") -> StyleStatus:
        """``style``'s status, with the line saying what capitals the answers taught, if any."""
        learnt, summary = style.describe(), style.summary()
        if capitals:
            learnt, summary = [*learnt, capitals], f"{summary}; {capitals}"
        return cls(style.decisions + style.inherited, learnt, summary)

    def as_json(self) -> dict[str, object]:
        return {"decisions": self.decisions, "learnt": list(self.learnt)}
