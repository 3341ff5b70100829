"""What several commands share: their precision, language, confidence and audio options, the
check on output paths made before any work, and how a message is told."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.core.errors import PunctumError, UsageError
from app.services.files import CAPTION_SUFFIXES

if TYPE_CHECKING:
    from app.services.analysis import AudioUse
    from app.services.punctuate import ApplyPolicy
    from app.services.style_files import HouseStyle

Commands = Any  # argparse's sub-parser collection (a private type)


def number_argument(text: str, kind: type[int] | type[float], what: str) -> float:
    """An option's ``text`` read as ``kind``; else an argparse error saying it is not ``what``."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def tell(message: str, flush: bool = False) -> None:
    """A message on stderr, named as the command's own: "punctum: <message>"."""
    print(f"punctum: {message}", file=sys.stderr, flush=flush)


REBREAK_HELP = (
    "lay out each cue's lines again once the marks are in (at most 2 lines of 42 characters, broken"
    " after punctuation, balanced); cues with styling or positioning keep theirs"
)
RECUT_HELP = (
    "cut the cues again at sentence ends once the marks are in (a sentence a cue where it fits, long"
    " ones split at a clause; 2 lines of 42 characters, 1 to 7 s), timed by the words as heard in"
    " the media, else estimated from the cues; cues with styling or positioning keep their cut"
)


def add_layout_options(parser: argparse.ArgumentParser, kept: str | None = None) -> None:
    """``--rebreak`` and ``--recut`` (also accepted as ``--resegment``, its earlier name): switches
    for one run, or with ``kept`` (what the project keeps, ``{name}`` standing for the option) each
    a yes/no whose help says so."""
    for names, help in ((["--rebreak"], REBREAK_HELP), (["--recut", "--resegment"], RECUT_HELP)):
        if kept is None:
            parser.add_argument(*names, action="store_true", help=help)
        else:
            told = help + kept.format(name=names[0][2:])
            parser.add_argument(*names, action=argparse.BooleanOptionalAction, help=told)


#: What an output option may be written as, by extension: the formats Punctum writes.
CAPTIONS, JSON = (*sorted(CAPTION_SUFFIXES), ".txt"), (".json",)

STYLE_HELP = (
    "a house style file (punctum style --write): the model's suggestions are read with it, as a"
    " project's decisions taught it"
)


def add_precision(command: argparse.ArgumentParser) -> None:
    """``--int8`` / ``--float``: the model's precision on ONNX Runtime (``INT8_BY_DEFAULT``)."""
    from app.services.model import INT8_BY_DEFAULT

    precision = command.add_mutually_exclusive_group()
    for option, int8, told in (
        ("--int8", True, "int8 weights: a little faster, slightly less exact"),
        ("--float", False, "float32 weights"),
    ):
        default = " (the default)" if int8 == INT8_BY_DEFAULT else ""
        precision.add_argument(option, dest="int8", action="store_const", const=int8, help=told + default)


#: The spellings ``--audio`` had before it, kept so that scripts using them still run.
_SHORTHANDS = {"--no-audio": "text", "--no-listen": "timings", "--listen": "listen"}


class _AudioOption(argparse.Action):
    """``--audio VALUE`` or one of its shorthands: the value, and how it was asked for (in
    ``audio_asked``), so that a contradiction is told in the user's own words."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from app.services.analysis import AudioUse

        if self.const is not None:  # a shorthand
            value, asked = AudioUse(self.const), str(option_string)
        else:
            value = AudioUse(values)
            asked = f"{option_string} {value.value}"
        setattr(namespace, self.dest, value)
        namespace.audio_asked = asked


def add_audio_use(command: argparse.ArgumentParser) -> None:
    """``--audio {text,timings,listen}``, and its older spellings as shorthands. Left out, it is
    None: the command tells the default from a value asked for (``audio_use``)."""
    from app.services.analysis import DEFAULT_AUDIO_USE, AudioUse

    choices = ", ".join(f"{use.value} ({use.help})" for use in AudioUse)
    audio = command.add_mutually_exclusive_group()
    audio.add_argument(
        "--audio",
        action=_AudioOption,
        choices=[use.value for use in AudioUse],
        help=f"what the suggestions are read from: {choices}; default {DEFAULT_AUDIO_USE.value}"
        " (--no-audio, --no-listen and --listen mean text, timings and listen)",
    )
    for option, value in _SHORTHANDS.items():
        audio.add_argument(
            option, dest="audio", action=_AudioOption, nargs=0, const=value, help=argparse.SUPPRESS
        )
    command.set_defaults(audio=None, audio_asked=None)


def audio_use(args: argparse.Namespace) -> AudioUse:
    """The ``--audio`` asked for, else the default."""
    from app.services.analysis import DEFAULT_AUDIO_USE

    asked: AudioUse | None = args.audio
    return DEFAULT_AUDIO_USE if asked is None else asked


#: ``--apply``'s choices: ``app.core.commands.APPLY_CHOICES``, which the command line cannot import.
APPLY_CHOICES = ("all", "confident", "none", "triage")


def add_apply_options(command: argparse.ArgumentParser, default: str, confident: float, what: str) -> None:
    """``--apply`` (``default`` unless given), ``--min-confidence`` for ``--apply confident``
    (``confident`` unless given) and ``--target`` for ``--apply triage`` (``PRECISION_TARGET``
    unless given). ``what`` the command does with the suggestions it settles ("write", "accept")."""
    from app.services.punctuate import PRECISION_TARGET, TARGET_RANGE

    low, high = TARGET_RANGE
    command.add_argument(
        "--apply",
        choices=APPLY_CHOICES,
        default=default,
        help=f"which suggestions to {what}: all, those at least --min-confidence sure (confident), none,"
        " or by triage (where the reference and the model agree, or the model's surest meet --target);"
        f" default {default}" + (" (all wait for review)" if default == "none" else ""),
    )
    command.add_argument(
        "--min-confidence",
        type=float,
        metavar="P",
        help=f"with --apply confident: the chance of being right a suggestion needs ({confident:g} unless given)",
    )
    command.add_argument(
        "--target",
        type=float,
        metavar="P",
        help=f"with --apply triage: the share of what settles by itself that must be right, {low:.2f} to"
        f" {high:.2f} ({PRECISION_TARGET:.2f} unless given)",
    )
    command.set_defaults(confident_default=confident)


def apply_policy(args: argparse.Namespace) -> ApplyPolicy:
    """The ``--apply`` policy asked for, with ``--min-confidence`` or ``--target`` as given, else
    the defaults (``add_apply_options``). Either given with a policy that does not read it is
    refused rather than silently ignored."""
    from app.services.punctuate import TARGET_RANGE, ApplyPolicy

    confidence, target = args.min_confidence, args.target
    if confidence is not None and args.apply != "confident":
        raise UsageError(f"--min-confidence is for --apply confident{_not_read_by[args.apply]}")
    if target is not None and args.apply != "triage":
        raise UsageError(f"--target is for --apply triage{_not_read_by[args.apply]}")
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise UsageError("--min-confidence must be between 0 and 1")
    low, high = TARGET_RANGE
    if target is not None and not low <= target <= high:
        raise UsageError(
            f"--target is the share of what settles by itself that must be right: between {low:.2f} and {high:.2f}"
        )
    chosen = {} if target is None else {"precision_target": float(target)}
    return ApplyPolicy(
        args.apply, args.confident_default if confidence is None else float(confidence), **chosen
    )


#: Why an option of ``--apply`` means nothing with another policy, said after its name.
_not_read_by = {
    "none": ": with --apply none nothing is accepted",
    "all": ": --apply all accepts every suggestion",
    "confident": " (--apply confident reads --min-confidence)",
    "triage": " (--apply triage reads --target)",
}


def checked_language(code: str, refused: type[PunctumError] = UsageError) -> str:
    """``--language`` as an ISO 639-1 code ("pt-BR" -> "pt"); a code that is none is a usage error,
    or, for a transcription, ``refused=PunctumError``: bad input (exit 3), as a code the recogniser
    does not know is."""
    from app.services.languages import LanguageError, language_code

    try:
        return language_code(code)
    except LanguageError as error:
        raise refused(f"--language {error}") from None


def checked_style(path: str | None) -> HouseStyle | None:
    """``--style FILE`` read, before any work: the ``HouseStyle`` in it, or None when not given. A
    missing, malformed or foreign file is one line and exit 2."""
    if path is None:
        return None
    from app.services.style_files import read_style_file

    return read_style_file(Path(path), "--style")


def checked_model(name: str | None) -> str | None:
    """``--model`` as given; an empty name is a usage error rather than the default in disguise."""
    if name is not None and not name.strip():
        raise UsageError(f"--model {name!r}: name a model folder or id, or leave --model out")
    return name


def check_input_file(path: Path) -> None:
    """An input is a file that exists: a folder, a pipe or a device is told as such (exit 3)."""
    if path.is_dir():
        raise PunctumError(f"{path}: is a folder; name a file")
    if not path.exists():
        raise PunctumError(f"{path}: no such file")
    if not path.is_file():
        raise PunctumError(f"{path}: not a regular file (a pipe, device or socket); name a file")


def check_outputs(
    inputs: Sequence[str | None], outputs: Sequence[tuple[str, str | None, Sequence[str]]]
) -> None:
    """Before any work: refuse outputs (option, path or None, extensions) that would replace an
    input or each other, or that cannot be written where they are named, so that nothing is
    written unless everything can be. An output is a regular file (or a new one) with one of its
    option's extensions, in a folder that exists and may be written in."""
    taken = {Path(p).resolve() for p in inputs if p}
    for option, output, extensions in outputs:
        if output is None:
            continue
        if output.strip() in ("", "-"):
            raise UsageError(f"{option} {output!r}: name a file to write")
        path = Path(output)
        resolved = path.resolve()
        if resolved in taken or any(_same_file(output, str(other)) for other in taken):
            raise UsageError(f"{output}: will not overwrite an input or another output; choose another name")
        if path.is_dir():
            raise UsageError(f"{output}: is a folder; name a file")
        if path.exists() and not path.is_file():
            raise UsageError(f"{output}: not a regular file (a pipe, device or socket); name a file")
        if path.suffix.lower() not in extensions:
            kinds = " or ".join(filter(None, [", ".join(extensions[:-1]), extensions[-1]]))
            found = f"not {path.suffix}" if path.suffix else "and this name has no extension"
            raise UsageError(f"{output}: {option} writes {kinds} files, {found}")
        # Through a link, the folder is its target's ("x.json -> nowhere/x.json": not ".").
        folder = resolved.parent if path.is_symlink() else path.parent
        if not resolved.parent.is_dir():
            raise UsageError(f"{output}: the folder {folder} does not exist")
        if not os.access(resolved.parent, os.W_OK | os.X_OK) or not _can_create_in(str(resolved.parent)):
            raise UsageError(f"{output}: the folder {folder} is not writable")
        taken.add(resolved)


def _same_file(path: str, other: str) -> bool:
    """Whether two existing paths are one file (a hard link to an input is that input)."""

    try:
        return Path(path).samefile(other)
    except OSError:
        return False


def _can_create_in(folder: str) -> bool:
    """Whether a file can be made in ``folder`` (permissions say yes to root even on a read-only
    file system); the probe is removed at once."""
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".punctum-probe-"):
            return True
    except OSError:
        return False
