"""Commands on folders and projects: ``batch`` (here or on a Ray cluster), ``status``, ``style``,
``export`` and ``relink``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.cli.errors import EXIT_BAD_INPUT, EXIT_OK, UsageError
from app.cli.options import (
    JSON,
    REBREAK_HELP,
    RESEGMENT_HELP,
    STYLE_HELP,
    Commands,
    add_audio_use,
    add_precision,
    audio_use,
    check_outputs,
    checked_model,
    checked_style,
    recogniser_language,
    threshold,
)


def add_project_commands(commands: Commands) -> None:
    """Commands on folders and projects: batch, status, style, export, relink."""
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
        "--min-confidence",
        type=float,
        metavar="P",
        help="confident: the chance of being right a suggestion needs (0.9 unless given); triage: the share of what settles that must be right, 0.90 to 0.99 (0.97)",
    )
    batch.add_argument(
        "--model", metavar="DIR_OR_ID", help="model folder or Hugging Face id (default: the shipped one)"
    )
    batch.add_argument(
        "--workers", type=_positive_int, metavar="N", help="worker processes (default: by CPU count)"
    )
    add_audio_use(batch)
    batch.add_argument(
        "--rebreak",
        action=argparse.BooleanOptionalAction,
        help=REBREAK_HELP + "; kept in the project for every export of it (--no-rebreak: no longer)",
    )
    batch.add_argument(
        "--resegment",
        action=argparse.BooleanOptionalAction,
        help=RESEGMENT_HELP + "; kept in the project for every export of it (--no-resegment: no longer)",
    )
    add_precision(batch)
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
    batch.add_argument(
        "--transcribe",
        action="store_true",
        help="first recognise the speech of media without captions into <name>.vtt beside it",
    )
    batch.add_argument("--language", metavar="CODE", help="with --transcribe: the speech's language")
    batch.add_argument(
        "--style",
        metavar="FILE.json",
        help=STYLE_HELP + "; kept in the project, so its new files and later reviews start from it",
    )
    batch.set_defaults(run=_batch)

    status = commands.add_parser("status", help="per file: state, pending/accepted/rejected, review time")
    status.add_argument("project", metavar="P.punctum", help="the project file")
    status.add_argument("--json", action="store_true", help="print the rows as JSON")
    status.set_defaults(run=_status)

    style = commands.add_parser(
        "style",
        help="a project's house style: what the decisions in it taught; write it to a file or reset it",
    )
    style.add_argument("project", metavar="P.punctum", help="the project file")
    style.add_argument(
        "--write", metavar="FILE.json", help="write the style to a file, for --style on punctuate and batch"
    )
    style.add_argument(
        "--reset",
        action="store_true",
        help="forget what the decisions so far taught and the style the project was given (after --write)",
    )
    style.set_defaults(run=_style)

    export = commands.add_parser("export", help="write every processed file of a project")
    export.add_argument("project", metavar="P.punctum", help="the project file")
    export.add_argument(
        "--out", required=True, metavar="DIR", help="folder to write into (made if its parent exists)"
    )
    export.add_argument("--format", choices=["srt", "vtt"], help="default: each file's own format")
    export.add_argument(
        "--rebreak",
        action=argparse.BooleanOptionalAction,
        help=REBREAK_HELP + "; default: as batch --rebreak kept in the project (--no-rebreak: not this time)",
    )
    export.add_argument(
        "--resegment",
        action=argparse.BooleanOptionalAction,
        help=RESEGMENT_HELP
        + "; default: as batch --resegment kept in the project (--no-resegment: not this time)",
    )
    export.set_defaults(run=_export)

    relink = commands.add_parser("relink", help="point a project's file at its media in a new place")
    relink.add_argument("project", metavar="P.punctum", help="the project file")
    relink.add_argument("file", metavar="FILE", help="the file's name as punctum status lists it")
    relink.add_argument("media", metavar="MEDIA", help="the video or audio where it is now")
    relink.set_defaults(run=_relink)


def _transcribe_folder(folder: Path, language: str | None) -> dict[Path, str]:
    """Captions for the folder's media that has none, before the batch pairs the folder; returns
    the media that could not be transcribed, with why (the batch counts them as failed)."""
    from app.services.transcribe import transcribe_folder

    def told(media: Path, state: str) -> None:
        if state == "started":
            print(f"punctum: transcribing {media}", file=sys.stderr)

    done = transcribe_folder(folder, language=language, on_file=told)
    if done.transcribed:
        seconds = sum(t.audio_seconds for t in done.transcribed)
        print(
            f"punctum: transcribed {len(done.transcribed)} files ({seconds:.0f} s of speech)", file=sys.stderr
        )
    return done.failed


def _batch(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from app.services.batch import (
        failed_files,
        file_counts,
        import_folder,
        open_project,
        record_untranscribed,
        remember_for_export,
        run_batch,
    )
    from app.services.batch_scheduler import BatchSettings
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
    args.min_confidence = threshold(args, 0.9)
    settings = BatchSettings(
        model=args.model,
        policy=ApplyPolicy(args.apply, args.min_confidence),
        workers=args.workers,
        audio=audio_use(args),
        int8=args.int8,
    )
    if args.language is not None and not args.transcribe:
        raise UsageError("--language is for --transcribe: captions' language is detected")
    language = recogniser_language(args.language) if args.language is not None else None
    checked_model(args.model)
    style = checked_style(args.style)  # before the project is touched
    # The project is this run's before any work: a second run on it stops at once, rather than
    # transcribe the same media and replace the captions the first one imported.
    with open_project(Path(args.project), create=True, command="punctum batch") as project:
        if style is not None:
            from app.services.restyle import give_style

            give_style(project, style)  # new files are read with it; decisions move it on
        if args.rebreak is not None:
            remember_for_export(project, "rebreak", args.rebreak)
        if args.resegment is not None:
            remember_for_export(project, "resegment", args.resegment)
        failed: dict[Path, str] = {}
        if args.transcribe:
            failed = _transcribe_folder(folder, language)
            record_untranscribed(folder, project, failed)
        pairing = import_folder(folder, project)
        for path in pairing.unpaired:
            if path in failed:
                continue  # counted and told as failed below
            print(f"punctum: unpaired (no captions with its name): {path}", file=sys.stderr)
        for stem, paths in pairing.ambiguous.items():
            print(f"punctum: ambiguous, skipped: {stem}: {', '.join(p.name for p in paths)}", file=sys.stderr)
        for stem, what in pairing.reimported.items():
            print(f"punctum: {stem}: {what}", file=sys.stderr)
        for path, why in pairing.skipped.items():
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
                if state.startswith("started"):
                    if state == "started again":  # done before, and counted so: heard now
                        progress.advance(overall, -1)
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
        # Every file left failed, whichever run failed it (retried here, or captions still
        # unreadable), and whether it failed in processing, at import or in transcription.
        summary.failures = failed_files(project)
        summary.failed = len(summary.failures)
    settled = (
        f", {summary.settled} gaps settled by triage (about {summary.may_be_wrong:.0f} may be wrong)"
        if summary.settled
        else ""
    )
    print(
        f"{args.project}: {summary.done} processed, {summary.failed} failed, {summary.skipped} already done"
        f"{settled}"
    )
    for stem, why in summary.heard_again.items():
        print(f"punctum: {stem}: {why}", file=sys.stderr)
    for stem, reason in summary.failures.items():
        print(f"punctum: {stem}: {reason}", file=sys.stderr)
    for stem, warnings in summary.warnings.items():
        for warning in warnings:
            print(f"punctum: {stem}: warning: {warning}", file=sys.stderr)
    if summary.workers_lowered:
        print(f"punctum: {summary.workers_lowered}", file=sys.stderr)
    _print_cluster_summary(summary)
    return EXIT_BAD_INPUT if summary.failed else EXIT_OK


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


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _status(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.services.batch import open_project, project_status

    with open_project(Path(args.project), read_only=True) as project:
        status = project_status(project)
    rows, style = status.files, status.house_style
    if args.json:
        # One row per file, as ever; each carries the project's house style, which all share.
        listed = [{**row.as_json(), "house_style": style.as_json()} for row in rows]
        print(json.dumps(listed, indent=2, ensure_ascii=False))
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
            if row.settled:
                print(
                    f"    settled by triage: {row.settled} gaps (about {row.may_be_wrong or 0:.0f} may be wrong)"
                )
        else:
            print(f"{row.file[:40]:40} {row.state:11} {row.reason or ''}")
        for warning in row.warnings or []:
            print(f"    warning: {warning}")
    print(style.summary)
    return EXIT_OK


def _style(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.services.batch import open_project
    from app.services.restyle import project_style, reset_style
    from app.services.style_files import write_style_file

    # Before the project is opened: a style file never replaces the project (nor anything but JSON).
    check_outputs([args.project], [("--write", args.write, JSON)])
    path = Path(args.project)
    if args.reset:
        project = open_project(path, command="punctum style --reset")
    else:
        project = open_project(path, read_only=True)
    with project:
        style = project_style(project)
        if args.write is not None:
            write_style_file(style, Path(args.write))  # before a word is said of it: it may fail
        print(style.summary())
        if args.write is not None:
            print(f"{args.write}: written")
        if args.reset:
            reset_style(project)
            print(
                "house style reset: new files and the next decisions start from the model's own"
                " (the decisions themselves stay)"
            )
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.services.batch import export_project, not_exported, open_project

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: is a file; --out names a folder")
    with open_project(Path(args.project), read_only=True) as project:
        exported = export_project(project, out, args.format, args.rebreak, args.resegment)
        left_out = not_exported(project)
    print(f"{len(exported.written)} files written to {args.out}")
    for stem, why in left_out.items():
        print(f"punctum: {stem}: not exported ({why})", file=sys.stderr)
    if exported.recut is not None:
        print(exported.recut.summary())
    if exported.lines is not None:
        from app.services.captions_export import rebreak_summary

        print(f"lines re-broken: {rebreak_summary(*exported.lines)}")
    return EXIT_OK


def _relink(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.services.batch import check_media, open_project, relink_media

    media = Path(args.media)
    check_media(media)  # before the project is touched
    with open_project(Path(args.project)) as project:
        relink_media(project, args.file, media)
    print(f"{args.file}: media is now {media}")
    return EXIT_OK
