"""Commands on projects: ``status``, ``style``, ``export`` and ``relink`` (``batch`` makes them)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from app.cli.options import JSON, Commands, add_layout_options, check_outputs, tell
from app.core.errors import EXIT_OK, PunctumError, UsageError
from app.services.files import CAPTION_SUFFIXES


def add_project_commands(commands: Commands) -> None:
    """Commands on projects: status, style, export, relink."""
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
    export.add_argument(
        "--format",
        choices=[suffix[1:] for suffix in sorted(CAPTION_SUFFIXES)],
        help="default: each file's own format",
    )
    add_layout_options(
        export, "; default: as batch --{name} kept in the project (--no-{name}: not this time)"
    )
    export.set_defaults(run=_export)

    relink = commands.add_parser("relink", help="point a project's file at its media in a new place")
    relink.add_argument("project", metavar="P.punctum", help="the project file")
    relink.add_argument("file", metavar="FILE", help="the file's name as punctum status lists it")
    relink.add_argument("media", metavar="MEDIA", help="the video or audio where it is now")
    relink.set_defaults(run=_relink)


def _status(args: argparse.Namespace) -> int:
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
            if row.decided_by_you:
                print(f"    decided by you: {row.decided_by_you} gaps")
        else:
            print(f"{row.file[:40]:40} {row.state:11} {row.reason or ''}")
        for warning in row.warnings or []:
            print(f"    warning: {warning}")
    print(style.summary)
    return EXIT_OK


def _style(args: argparse.Namespace) -> int:
    from app.services.batch import open_project
    from app.services.learnt_capitals import learnt_line
    from app.services.restyle import project_style, reset_style
    from app.services.review_style import project_teaching
    from app.services.style_files import StyleStatus, write_style_file

    # Before the project is opened: a style file never replaces the project (nor anything but JSON).
    check_outputs([args.project], [("--write", args.write, JSON)])
    path = Path(args.project)
    if args.reset:
        project = open_project(path, command="punctum style --reset")
    else:
        project = open_project(path, read_only=True)
    with project:
        try:
            examples, capitals = project_teaching(project)
            style = project_style(project, examples)
        except PunctumError as damaged:
            if not args.reset or args.write is not None:
                raise
            tell(f"{damaged}; resetting it")  # the reset is the way out of a damaged style
        else:
            if args.write is not None:
                write_style_file(style, Path(args.write))  # before a word is said of it: it may fail
            print(StyleStatus.of(style, learnt_line(capitals)).summary)  # the capitals too
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
    from app.services.batch import (
        export_project,
        not_exported,
        open_project,
        recut_unrecorded,
    )
    from app.services.projects import UNRECORDED_RECUT_WARNING

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: is a file; --out names a folder")
    with open_project(Path(args.project), read_only=True) as project:
        exported = export_project(project, out, args.format, args.rebreak, args.recut)
        left_out = not_exported(project)
        recut_again = recut_unrecorded(project)
    print(f"{len(exported.written)} files written to {args.out}")
    for stem in recut_again:
        tell(f"{stem}: note: {UNRECORDED_RECUT_WARNING}")
    for stem, why in left_out.items():
        tell(f"{stem}: not exported ({why})")
    for line in exported.summaries():
        print(line)
    return EXIT_OK


def _relink(args: argparse.Namespace) -> int:
    from app.services.batch import check_media, open_project, relink_media

    media = Path(args.media)
    check_media(media)  # before the project is touched
    with open_project(Path(args.project)) as project:
        relink_media(project, args.file, media)
    print(f"{args.file}: media is now {media}")
    return EXIT_OK
