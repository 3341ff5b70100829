"""The README's commands as written: each ``punctum`` line is one the command line accepts, so a
renamed option or command cannot leave the front door pointing at nothing. (Running them all takes
a minute of media work that other tests do already.)"""

from __future__ import annotations

import shlex
from pathlib import Path

from app.cli import build_parser

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_commands() -> list[list[str]]:
    """Every ``punctum`` command in the README's shell blocks, as its words, comments left out."""
    commands, in_block = [], False
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_block = line.strip() == "```sh"
            continue
        if in_block and "punctum " in line:
            command = line.split("|")[-1]  # what a pipe feeds
            words = shlex.split(command, comments=True)
            if words and words[0] == "punctum":
                commands.append(words[1:])
    return commands


def test_every_punctum_command_in_the_readme_is_one_the_command_line_accepts() -> None:
    commands = readme_commands()
    assert len(commands) >= 12  # the shell blocks were read
    refused = []
    for words in commands:
        try:
            build_parser().parse_args(words)
        except SystemExit:
            refused.append(" ".join(words))
    assert refused == []


def test_a_renamed_option_is_refused_by_the_same_check() -> None:
    try:
        build_parser().parse_args(["batch", "talks", "--project", "p.punctum", "--threshold", "0.9"])
    except SystemExit as stop:
        assert stop.code == 2
    else:
        raise AssertionError("an unknown option was accepted")
