"""``punctum stream``: live captions, JSON lines of words in and punctuated words out."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from functools import partial
from typing import NoReturn

from app.cli.options import Commands, add_precision, checked_language, number_argument, tell
from app.core.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, UsageError


def add_stream_command(commands: Commands) -> None:
    stream = commands.add_parser(
        "stream",
        help="live captions: JSON lines of words in (standard input), punctuated words out as decided",
    )
    stream.add_argument(
        "--lookahead",
        type=_lookahead,
        metavar="N",
        help="decide a gap once N words follow it (default 4); earlier where the model is sure",
    )
    stream.add_argument(
        "--fixed", action="store_true", help="always wait for the N words, even where the model is sure"
    )
    stream.add_argument(
        "--max-delay",
        type=_milliseconds,
        metavar="MS",
        help="decide a word at the latest MS milliseconds after it: by the word times when given,"
        " by the clock otherwise and while no input comes",
    )
    stream.add_argument(
        "--context",
        type=_context_tokens,
        metavar="TOKENS",
        help="sub-tokens of the stream the model reads per new word (default and most: the model's"
        " window, 190 for the bundled one); fewer is faster and less accurate",
    )
    stream.add_argument("--language", default="en", metavar="CODE", help="language of the words (default en)")
    stream.add_argument("--model", metavar="DIR_OR_ID", help="model folder or Hugging Face id")
    add_precision(stream)
    stream.set_defaults(run=_stream)


def _stream(args: argparse.Namespace) -> int:
    from app.services.model import Punctuator
    from app.services.stream import (
        CONTEXT_TOKENS,
        DEFAULT_LOOKAHEAD,
        StreamPolicy,
        StreamPunctuator,
        run_json_lines,
    )

    language = checked_language(args.language)
    if sys.stdin is None or sys.stdout is None:
        closed = "standard input" if sys.stdin is None else "standard output"
        raise UsageError(
            f"stream reads JSON lines on standard input and writes them on standard output: {closed} is closed"
        )
    punctuator = Punctuator(args.model, quantize=args.int8)
    punctuator.check()  # a malformed model is refused before any input is read
    # The defaults are the stream's own, so the options leave them unset.
    lookahead = DEFAULT_LOOKAHEAD if args.lookahead is None else args.lookahead
    stream = StreamPunctuator(
        punctuator,
        language,
        StreamPolicy(lookahead, fixed=args.fixed, max_delay_ms=args.max_delay),
        context_tokens=CONTEXT_TOKENS if args.context is None else args.context,
    )
    try:
        run_json_lines(stream, sys.stdin.buffer, sys.stdout.buffer, partial(tell, flush=True))
    except KeyboardInterrupt:
        _leave(EXIT_INTERRUPTED, "interrupted; the words still waiting were written as decided at the end")
    except BrokenPipeError:
        _leave(EXIT_OK)  # the reader went away: nobody is left to tell
    except OSError as error:
        _leave(EXIT_BAD_INPUT, f"cannot write the output: {error.strerror or error}")
    return EXIT_OK


def _leave(code: int, message: str | None = None) -> NoReturn:
    """End the stream now: its input thread may be blocked reading, and an interpreter shutting
    down around it aborts (exit 134, a thread dump), so the process ends without waiting for it."""
    if message:
        tell(message, flush=True)
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code)


def _lookahead(text: str) -> int:
    from app.services.stream import MAX_LOOKAHEAD

    value = int(number_argument(text, int, "a whole number"))
    if not 0 <= value <= MAX_LOOKAHEAD:
        raise argparse.ArgumentTypeError(f"{value}: must be 0 to {MAX_LOOKAHEAD} words")
    return value


def _context_tokens(text: str) -> int:
    from app.services.stream import MIN_CONTEXT_TOKENS

    value = int(number_argument(text, int, "a whole number"))
    if value < MIN_CONTEXT_TOKENS:
        raise argparse.ArgumentTypeError(f"{value}: must be {MIN_CONTEXT_TOKENS} sub-tokens or more")
    return value


def _milliseconds(text: str) -> float:
    value = number_argument(text, float, "a number of milliseconds")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text}: must be more than 0 milliseconds")
    return value
