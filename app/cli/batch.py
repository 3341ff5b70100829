"""``punctum batch``: a folder of captions, media and references processed into a project, here or
on a Ray cluster. What a run does is ``services.batch_folder``'s; here, its options are read and
what it reports is told."""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.options import (
    STYLE_HELP,
    Commands,
    add_apply_options,
    add_audio_use,
    add_layout_options,
    add_precision,
    apply_policy,
    audio_use,
    checked_language,
    checked_model,
    checked_style,
    number_argument,
    tell,
)
from app.core.errors import EXIT_BAD_INPUT, EXIT_OK, PunctumError, UsageError

if TYPE_CHECKING:
    from app.services.batch_folder import FolderBatch
    from app.services.batch_scheduler import BatchSummary
    from app.services.folder_pairing import Pairing
    from app.services.transcribe import FolderTranscription


def add_batch_command(commands: Commands) -> None:
    """``batch``: a folder processed into a project."""
    from app.services.batch_folder import BATCH_CONFIDENT

    batch = commands.add_parser("batch", help="process a folder of captions, media and references")
    batch.add_argument(
        "folder", metavar="FOLDER", help="captions, with media, references and timings of the same name"
    )
    batch.add_argument("--project", required=True, metavar="P.punctum", help="project file (created if new)")
    add_apply_options(batch, "none", BATCH_CONFIDENT, "accept")
    batch.add_argument(
        "--model", metavar="DIR_OR_ID", help="model folder or Hugging Face id (default: the shipped one)"
    )
    batch.add_argument(
        "--workers", type=_positive_int, metavar="N", help="worker processes (default: by CPU count)"
    )
    add_audio_use(batch)
    add_layout_options(batch, "; kept in the project for every export of it (--no-{name}: no longer)")
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


def _positive_int(text: str) -> int:
    value = int(number_argument(text, int, "a whole number"))
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _batch(args: argparse.Namespace) -> int:
    from app.services.batch_folder import run_folder

    summary = run_folder(_folder_batch(args), _Told())
    settled = (
        f", {summary.settled} gaps settled by triage (about {summary.may_be_wrong:.0f} may be wrong)"
        if summary.settled
        else ""
    )
    print(
        f"{args.project}: {summary.done} processed, {summary.failed} failed, {summary.skipped} already done"
        f"{settled}"
    )
    for stem, why in itertools.chain(summary.heard_again.items(), summary.failures.items()):
        tell(f"{stem}: {why}")
    for stem, warnings in summary.warnings.items():
        for warning in warnings:
            tell(f"{stem}: warning: {warning}")
    if summary.workers_lowered:
        tell(summary.workers_lowered)
    _print_cluster_summary(summary)
    return EXIT_BAD_INPUT if summary.failed else EXIT_OK


def _folder_batch(args: argparse.Namespace) -> FolderBatch:
    """The run the options ask for, every one of them checked before the project is touched."""
    from app.services.batch_folder import FolderBatch
    from app.services.batch_scheduler import BatchSettings

    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder")
    if args.media_url is not None and args.ray is None:
        raise UsageError("--media-url is for --ray: the local batch reads media where it is")
    cluster = None
    if args.ray is not None:
        from app.services.cluster import ClusterSettings, check_address, check_ray

        check_address(args.ray or None)
        check_ray()
        cluster = ClusterSettings(args.ray or None, args.media_url, folder)
    settings = BatchSettings(
        model=args.model,
        policy=apply_policy(args),
        workers=args.workers,
        audio=audio_use(args),
        int8=args.int8,
    )
    if args.language is not None and not args.transcribe:
        raise UsageError("--language is for --transcribe: captions' language is detected")
    language = checked_language(args.language, PunctumError) if args.language is not None else None
    checked_model(args.model)
    style = checked_style(args.style)
    return FolderBatch(
        folder,
        Path(args.project),
        settings,
        style=style,
        rebreak=args.rebreak,
        recut=args.recut,
        transcribe=args.transcribe,
        language=language,
        cluster=cluster,
    )


class _Told:
    """What a batch run reports, told on stderr as it goes, with a progress bar of its files."""

    def transcribing(self, media: Path, state: str) -> None:
        if state == "started":
            tell(f"transcribing {media}")

    def transcribed(self, done: FolderTranscription) -> None:
        if done.transcribed:
            seconds = sum(t.audio_seconds for t in done.transcribed)
            tell(f"transcribed {len(done.transcribed)} files ({seconds:.0f} s of speech)")

    def imported(self, pairing: Pairing) -> None:
        for path in pairing.unpaired:
            tell(f"unpaired (no captions with its name): {path}")
        for stem, paths in pairing.ambiguous.items():
            tell(f"ambiguous, skipped: {stem}: {', '.join(p.name for p in paths)}")
        for stem, what in pairing.reimported.items():
            tell(f"{stem}: {what}")
        for path, why in pairing.skipped.items():
            tell(f"skipped {path}: {why}")

    @contextmanager
    def running(self, total: int, done: int) -> Iterator[Callable[[str, str], None]]:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskID,
            TextColumn,
            TimeElapsedColumn,
        )

        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            transient=not sys.stderr.isatty(),
            console=None,
        ) as progress:
            overall = progress.add_task("files", total=total, completed=done)
            tasks: dict[str, TaskID] = {}

            def report(stem: str, state: str) -> None:
                if state.startswith("started"):
                    if state == "started again":  # done before, and counted so: heard now
                        progress.advance(overall, -1)
                    tasks[stem] = progress.add_task(f"  {stem}", total=None)
                    return
                task = tasks.pop(stem, None)
                if task is not None:
                    progress.remove_task(task)
                progress.advance(overall)
                if state == "failed":
                    progress.console.print(f"[red]failed[/red] {stem}")

            yield report


def _print_cluster_summary(summary: BatchSummary) -> None:
    """A Ray run's retries, model loads and per-node throughput (nothing for a local run)."""
    from app.services.cluster import ClusterSummary

    if not isinstance(summary, ClusterSummary) or not summary.nodes:
        return
    for stem in summary.retried:
        tell(f"{stem}: its worker died; Ray ran it again (recorded once)")
    print(f"{summary.seconds:.1f} s on the cluster, {summary.model_loads} model loads")
    for line in summary.node_lines():
        print(f"  {line}")
