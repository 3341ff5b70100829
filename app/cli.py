"""The ``punctum`` command.

Exit status: 0 done, 2 usage error, 3 bad input (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from app.core.errors import PunctumError
from app.services.documents import format_duration, open_document, summarize

EXIT_OK, EXIT_USAGE, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 2, 3, 1


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
    from app.core.history import History
    from app.formats import write_document
    from app.services.transfer import accept_reference_suggestions, transfer_files, write_report

    outcome = transfer_files(args.reference, args.captions, args.language)
    document = outcome.document
    accepted = accept_reference_suggestions(document, History(document), casing=not args.no_casing)
    write_document(document, args.output)
    if args.report:
        write_report(outcome.report, args.report)
    for warning in outcome.warnings:
        print(f"punctum: warning: {warning}", file=sys.stderr)
    marks = outcome.report.get("marks", {})
    carried = marks.get("carried", 0) if isinstance(marks, dict) else 0
    print(
        f"{args.output}: {carried} marks carried, {accepted} changes applied; word error rate "
        f"{outcome.report.get('word_error_rate', 'n/a')}"
    )
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="punctum", description="Restore and review punctuation in ASR captions (SRT, WebVTT, text)."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    info = commands.add_parser(
        "info", help="describe a caption file: format, encoding, cues, words, warnings"
    )
    info.add_argument("file", metavar="FILE")
    info.add_argument("--json", action="store_true", help="print the description as JSON")
    info.set_defaults(run=_info)
    show = commands.add_parser("show", help="print the cues of a caption file with their timings")
    show.add_argument("file", metavar="FILE")
    show.set_defaults(run=_show)
    transfer = commands.add_parser(
        "transfer", help="carry the punctuation of a reference transcript onto ASR captions"
    )
    transfer.add_argument("reference", metavar="REFERENCE", help="punctuated transcript: .txt, .srt, .vtt")
    transfer.add_argument("captions", metavar="CAPTIONS", help="ASR captions: .srt or .vtt")
    transfer.add_argument("-o", "--output", required=True, metavar="OUT", help="captions to write")
    transfer.add_argument("--report", metavar="REPORT.json", help="write what was carried and skipped")
    transfer.add_argument("--language", default="en", help="language of both texts (for numbers), default en")
    transfer.add_argument("--no-casing", action="store_true", help="carry marks only, not capitals")
    transfer.set_defaults(run=_transfer)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except PunctumError as error:
        print(f"punctum: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("punctum: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
