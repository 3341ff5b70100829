"""The caption limits on the command line: the same set the editor's Settings hold, each option
defaulting to the style guides' value (``services.documents.STYLE_GUIDE_LIMITS``)."""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable

from app.core.errors import UsageError
from app.services.documents import SPEAKER_DASHES, CaptionLimits, caption_limits
from app.services.documents import STYLE_GUIDE_LIMITS as _DEFAULTS

#: option -> (field, type, help)
_OPTIONS = {
    "--max-cps": ("max_cps", float, f"characters per second (default {_DEFAULTS.max_cps:g})"),
    "--max-line": ("max_line_chars", int, f"characters per line (default {_DEFAULTS.max_line_chars})"),
    "--max-lines": ("max_lines", int, f"lines per cue (default {_DEFAULTS.max_lines})"),
    "--min-duration": ("min_ms", int, f"shortest time on screen, ms (default {_DEFAULTS.min_ms})"),
    "--max-duration": ("max_ms", int, f"longest time on screen, ms (default {_DEFAULTS.max_ms})"),
    "--min-gap": ("min_gap_ms", int, f"least time between cues, ms (default {_DEFAULTS.min_gap_ms})"),
    "--linger": (
        "linger_ms",
        int,
        f"time a re-cut cue stays after its speech, ms (default {_DEFAULTS.linger_ms})",
    ),
}


#: What each option's value must be, and how it is asked for (the bounds ``CaptionLimits`` holds,
#: said per option: --max-cps -5 and 0 were told two different things).
_AT_LEAST_0: tuple[Callable[[float], bool], str] = (lambda v: v >= 0, "a whole number of 0 or more")
_AT_LEAST_1: tuple[Callable[[float], bool], str] = (lambda v: v >= 1, "a whole number of 1 or more")
_BOUNDS: dict[str, tuple[Callable[[float], bool], str]] = {
    "--max-cps": (lambda v: v > 0, "a number above 0"),
    "--max-line": _AT_LEAST_1,
    "--max-lines": _AT_LEAST_1,
    "--max-duration": _AT_LEAST_1,
}


def add_limit_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("caption limits")
    for option, (field, kind, told) in _OPTIONS.items():
        group.add_argument(option, dest=f"limit_{field}", type=kind, metavar="N", help=told)
    group.add_argument(
        "--speaker-dash",
        dest="limit_speaker_dash",
        choices=SPEAKER_DASHES,
        help="what starts each line of a re-cut cue two speakers share: none (the default), "
        "hyphen (-Really?), hyphen-space (- Really?) or en-dash",
    )


def limits_from(args: argparse.Namespace) -> CaptionLimits:
    """The limits the options give (the style guides' where not given); limits that cannot hold
    are refused in one line."""
    given = {field: getattr(args, f"limit_{field}") for field, _, _ in _OPTIONS.values()}
    given = {field: value for field, value in given.items() if value is not None}
    dash = args.limit_speaker_dash
    for option, (field, _, _) in _OPTIONS.items():
        value = given.get(field)
        holds, wanted = _BOUNDS.get(option, _AT_LEAST_0)
        if value is not None and not (math.isfinite(value) and holds(value)):
            raise UsageError(f"{option} {value}: give {wanted}")
    try:
        limits = caption_limits(**given)
        return limits if dash is None else dataclasses.replace(limits, speaker_dash=SPEAKER_DASHES[dash])
    except ValueError as error:
        raise UsageError(f"caption limits: {error}") from None
