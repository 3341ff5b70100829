"""``punctum gui``: the editor, opened from the command line."""

from __future__ import annotations

import argparse

from app.cli.options import Commands
from app.core.errors import PunctumError


def add_editor_command(commands: Commands) -> None:
    gui = commands.add_parser("gui", help="open the editor, on the files given (captions, media, transcript)")
    gui.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="captions to open, with their media and reference, or a project",
    )
    gui.add_argument("--model", metavar="DIR_OR_ID", help="punctuation model (default: the shipped one)")
    gui.add_argument("--sample", action="store_true", help="open the bundled sample")
    gui.set_defaults(run=_gui)


def _gui(args: argparse.Namespace) -> int:
    try:
        from app.ui.app import main as run_editor
    except ImportError as error:
        raise PunctumError(f"the editor needs Qt, which did not load: {error}") from None
    return run_editor(args.files, model=args.model, sample=args.sample)
