"""Commands on one caption file: ``info``, ``show``, ``transfer``, ``punctuate`` and ``check``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.cli.limits import add_limit_options, limits_from
from app.cli.options import (
    CAPTIONS,
    JSON,
    STYLE_HELP,
    Commands,
    add_apply_options,
    add_audio_use,
    add_layout_options,
    add_precision,
    apply_policy,
    audio_use,
    check_outputs,
    checked_language,
    checked_style,
    tell,
)
from app.core.errors import EXIT_OK, PunctumError, UsageError
from app.services.documents import format_duration, open_document, summarize
from app.services.files import CAPTION_SUFFIXES

#: The caption files Punctum reads, as help texts name them (".ass .dfxp ... .vtt").
_CAPTIONS = " ".join(sorted(CAPTION_SUFFIXES))


def add_file_commands(commands: Commands) -> None:
    """Commands on one caption file: info, show, transfer, punctuate, check."""
    from app.services.punctuate import MORE_LIKELY_RIGHT

    info = commands.add_parser(
        "info", help="describe a caption file: format, encoding, cues, words, warnings"
    )
    info.add_argument("file", metavar="FILE", help=f"captions ({_CAPTIONS}) or a .txt file")
    info.add_argument("--json", action="store_true", help="print the description as JSON")
    info.set_defaults(run=_info)
    show = commands.add_parser("show", help="print the cues of a caption file with their timings")
    show.add_argument("file", metavar="FILE", help=f"captions ({_CAPTIONS}) or a .txt file")
    show.set_defaults(run=_show)
    transfer = commands.add_parser(
        "transfer", help="carry the punctuation of a reference transcript onto ASR captions"
    )
    transfer.add_argument("reference", metavar="REFERENCE", help="punctuated transcript: .txt or captions")
    transfer.add_argument("captions", metavar="CAPTIONS", help=f"ASR captions: {_CAPTIONS}")
    transfer.add_argument("-o", "--output", required=True, metavar="OUT", help="captions to write")
    transfer.add_argument("--report", metavar="REPORT.json", help="write what was carried and skipped")
    transfer.add_argument("--language", default="en", help="language of both texts (for numbers), default en")
    transfer.add_argument("--no-casing", action="store_true", help="carry marks only, not capitals")
    transfer.set_defaults(run=_transfer)

    punctuate = commands.add_parser("punctuate", help="propose and apply punctuation with the model")
    punctuate.add_argument("input", metavar="INPUT", help=f"captions ({_CAPTIONS}) or .txt")
    punctuate.add_argument("-o", "--output", metavar="OUT", help="file to write (format from its extension)")
    add_apply_options(punctuate, "confident", MORE_LIKELY_RIGHT, "write")
    punctuate.add_argument("--suggestions", metavar="FILE.json", help="write every suggestion as JSON")
    punctuate.add_argument("--model", metavar="DIR_OR_ID", help="model folder or Hugging Face id")
    punctuate.add_argument("--language", metavar="CODE", help="language of the text (detected if omitted)")
    punctuate.add_argument(
        "--media", metavar="FILE", help="the video or audio: its pauses and pitch are measured for review"
    )
    add_layout_options(punctuate)
    punctuate.add_argument(
        "--timings", metavar="FILE", help="word times from the recogniser: CTM, or a JSON word list"
    )
    punctuate.add_argument(
        "--style", metavar="FILE.json", help=STYLE_HELP + ", before --apply settles anything"
    )
    add_audio_use(punctuate)
    add_precision(punctuate)
    add_limit_options(punctuate)
    punctuate.set_defaults(run=_punctuate)
    check = commands.add_parser(
        "check", help="caption checks: characters per second, line length, lines per cue (exit 1 if over)"
    )
    check.add_argument("file", metavar="FILE", help=f"a caption file ({_CAPTIONS})")
    add_limit_options(check)
    check.set_defaults(run=_check)


def _info(args: argparse.Namespace) -> int:
    summary = summarize(open_document(args.file))
    if args.json:
        print(json.dumps(summary.as_dict(), ensure_ascii=False, indent=2))
        return EXIT_OK
    encoding = summary.encoding + (" with BOM" if summary.bom else "")
    print(f"file:         {summary.path}")
    print(f"format:       {summary.format.upper()}")
    print(f"encoding:     {encoding}")
    print(f"line endings: {summary.line_endings}")
    print(f"cues:         {summary.cues}")
    print(f"words:        {summary.words} ({summary.timed_words} with their own timing)")
    print(f"duration:     {format_duration(summary.duration_ms)}")
    print(f"warnings:     {len(summary.warnings)}")
    for warning in summary.warnings:
        print(f"  - {warning}")
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    document = open_document(args.file)
    for number, cue in enumerate(document.cues, start=1):
        timing = f"{format_duration(cue.start)} --> {format_duration(cue.end)}"
        print(f"{number:>4}  {timing}  {cue.plain_text()}")
    return EXIT_OK


def _transfer(args: argparse.Namespace) -> int:
    from app.services.transfer import transfer_to_file

    check_outputs(
        [args.reference, args.captions], [("-o", args.output, CAPTIONS), ("--report", args.report, JSON)]
    )
    args.language = checked_language(args.language)
    outcome = transfer_to_file(
        args.reference, args.captions, args.output, args.language, not args.no_casing, args.report
    )
    for warning in outcome.warnings:
        tell(f"warning: {warning}")
    return EXIT_OK


def _punctuate(args: argparse.Namespace) -> int:
    from app.services.analysis import AnalysisRequest, AudioUse
    from app.services.captions_export import ExportOptions, exported_document
    from app.services.documents import left_out_writing, render, save_together
    from app.services.model import Punctuator
    from app.services.punctuate import punctuate_file

    policy = apply_policy(args)
    audio = audio_use(args)
    for option, given in (("--media", args.media), ("--timings", args.timings)):
        if given and "://" in given:  # as a path, "http://host/x.mp4" would be "http:/host/x.mp4"
            what = "media" if option == "--media" else "word timings"
            raise PunctumError(f"{option} {given}: a URL; {what} must be a local file (download it first)")
        if given and not audio.with_audio:
            raise UsageError(f"{option} and {args.audio_asked} contradict each other")
    if args.audio is AudioUse.LISTEN and not args.media:  # asked for, not the default
        raise UsageError(f"{args.audio_asked} needs --media: there is nothing to listen to")
    check_outputs(
        [args.input, args.media, args.timings, args.style],
        [("-o", args.output, CAPTIONS), ("--suggestions", args.suggestions, JSON)],
    )
    if args.language is not None:
        args.language = checked_language(args.language)
    style = checked_style(args.style)
    punctuator = Punctuator(args.model, quantize=args.int8, one_file=True)
    punctuator.check()  # a malformed model is refused before the input is read or analysed
    request = AnalysisRequest.from_file(
        Path(args.input),
        media=Path(args.media) if args.media else None,
        timings=Path(args.timings) if args.timings else None,
        language=args.language,
        audio=audio,
        word_times=args.recut,  # heard only to cut cues by
    )
    if args.recut and request.format == "txt":
        raise UsageError(f"--recut cuts captions' cues; {args.input} is plain text, which has none")
    limits = limits_from(args)  # refused before the work, not after it
    outcome = punctuate_file(request, punctuator, policy, style)
    for warning in outcome.report.warnings:
        tell(f"warning: {warning}")
    # Re-cut and re-broken as every export does it; the capitals are the policy's (punctuate_file).
    options = ExportOptions(capitalise=False, rebreak=args.rebreak, recut=args.recut, limits=limits)
    outcome.document, steps = exported_document(
        outcome.document, outcome.report.language, options, outcome.measures, args.output
    )
    # Written together or not at all: suggestions whose captions a full disk kept from being
    # written would replace an older file and describe captions that are not there. They number
    # the cues as the captions written beside them do (re-cut, if asked).
    reports = [(Path(args.suggestions), outcome.suggestions_json())] if args.suggestions else []
    if args.output is not None:  # said before it is written, cue by cue
        for line in left_out_writing(outcome.document, Path(args.output)):
            tell(f"warning: {line}")
    save_together(outcome.document, args.output, reports)
    for line in steps.summaries():  # once written, as export tells it; on stderr when stdout has the captions
        if args.output is not None:
            print(line)
        else:
            tell(line)
    if args.output is not None:
        language = f" ({outcome.report.language})" if outcome.report.language else ""
        wrong = f" (about {outcome.may_be_wrong:.0f} may be wrong)" if outcome.applied else ""
        print(
            f"{args.output}: {len(outcome.suggestions)} suggestions, {outcome.applied} applied{wrong}{language}"
        )
    else:
        sys.stdout.write(render(outcome.document))
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    from app.services.captions_export import format_limits
    from app.services.documents import cues_over_limits

    document = open_document(args.file)
    if document.format == "txt":
        raise PunctumError(f"{args.file}: plain text has no timings; check reads timed captions")
    failing = cues_over_limits(document, format_limits(limits_from(args), document.format))
    for number, start, problems in failing:
        print(f"{number:>4}  {format_duration(start)}  {'; '.join(problems)}")
    print(f"{len(failing)} of {len(document.cues)} cues over the limits", file=sys.stderr)
    return EXIT_OK if not failing else 1
