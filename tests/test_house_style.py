"""The house style: learnt from a person's decisions, re-reading the gaps nobody decided, kept in the
project, shared by its files, carried in a style file (``--style``, ``punctum style``), reset.

The real model on the bundled sample (its text: the model reads it in under a second). The style's
figures move with the model's probabilities, which differ a little from CPU to CPU, so the tests
assert directions and invariants, never a probability."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.core.history import Decider
from app.core.marks import MODEL_MARKS
from app.core.model import Source, Status, Suggestion
from app.core.triage import TriagePolicy
from app.services.analysis import AudioUse, analyse
from app.services.model import Punctuator
from app.services.restyle import project_style
from app.services.review import ReviewSession
from app.store.project import Project
from tests.conftest import SAMPLE, run_punctum_here, shared_data

punctum = run_punctum_here
COMMA = MODEL_MARKS.index(",")


def analysed(captions: Path) -> ReviewSession:
    """``captions`` opened for review, read by the model (text only) and triaged by the default
    policy, as the editor does when its suggestions arrive."""
    session = ReviewSession.open(captions)
    session.store_analysis(analyse(session.analysis_request(AudioUse.TEXT), Punctuator()))
    session.settle(TriagePolicy())
    return session


def pending_commas(session: ReviewSession) -> dict[int, Suggestion]:
    """The model's comma suggestions still waiting for a person, by gap."""
    return {
        s.gap: s
        for s in session.document.suggestions
        if s.source is Source.MODEL and s.casing is None and s.mark == "," and s.status is Status.PENDING
    }


def reject_commas(session: ReviewSession, count: int) -> list[int]:
    """Turn down the first pending comma ``count`` times (the style may take later ones away
    meanwhile); the gaps turned down."""
    rejected = []
    for _ in range(count):
        commas = pending_commas(session)
        assert commas, "no comma left to turn down"
        first = commas[min(commas)]
        assert session.reject_gap(first.id) is not None
        rejected.append(first.gap)
    return rejected


def model_commas(suggestions: list[dict[str, object]]) -> list[dict[str, object]]:
    return [s for s in suggestions if s["source"] == "model" and s["casing"] is None and s["mark"] == ","]


def test_decisions_teach_the_style_and_re_read_later_gaps_but_never_a_decided_one(sample: Path) -> None:
    session = analysed(sample / "sample.srt")
    try:
        neutral = session.style()
        assert neutral.neutral and neutral.decisions == 0
        assert neutral.summary() == "house style: nothing learnt yet (no decisions)"
        # A person accepts the surest full stop, then turns down commas one after another.
        stop = max(
            (
                s
                for s in session.document.suggestions
                if s.source is Source.MODEL and s.mark == "." and s.status is Status.PENDING
            ),
            key=lambda s: s.confidence,
        )
        session.accept(stop.id)
        decided = {stop.id: session.document.suggestion(stop.id)}
        before = pending_commas(session)
        rejected = []
        for _ in range(5):
            (gap,) = reject_commas(session, 1)
            rejected.append(gap)
            (turned_down,) = [s for s in session.document.suggestions if s.gap == gap and s.mark == ","]
            decided[turned_down.id] = turned_down
        assert rejected == sorted(rejected)

        style = session.style()
        assert style.decisions == 6
        assert style.mark_bias < 0  # fewer marks than the model's own reading
        assert style.summary().startswith("house style from 6 decisions: ")
        assert "less sure of the model's commas" in style.summary()
        # The commas after those turned down went, or are less sure than they were.
        later = {gap: s for gap, s in before.items() if gap > rejected[-1]}
        now = pending_commas(session)
        assert later
        for gap, comma in later.items():
            assert gap not in now or now[gap].confidence < comma.confidence, (gap, comma, now.get(gap))
        # No re-reading touched what the person decided, nor the marks they left.
        for suggestion_id, as_decided in decided.items():
            assert session.document.suggestion(suggestion_id) == as_decided
        assert session.document.word(stop.gap).mark == "."
        assert all(session.document.word(gap).mark == "" for gap in rejected)
        # Each re-reading is the rule's step, joined to the person's decision before it.
        last = session.history.done[-1]
        assert last.by is Decider.RULE and last.joins_previous
        assert (session.history.undo_description or "").startswith("Reject")
    finally:
        session.close()


def test_undo_of_a_decision_takes_back_what_it_taught_and_redo_brings_it_again(sample: Path) -> None:
    session = analysed(sample / "sample.srt")
    try:
        reject_commas(session, 3)
        state, style = session.document.state(), session.style()
        reject_commas(session, 1)
        after, taught = session.document.state(), session.style()
        assert taught.decisions == style.decisions + 1 and taught != style
        assert after != state  # the later gaps were read again
        assert session.undo() is not None
        assert session.document.state() == state  # the decision and its re-reading, both undone
        assert session.style() == style and session.style().summary() == style.summary()
        assert session.redo() is not None
        assert session.document.state() == after
        assert session.style() == taught
    finally:
        session.close()


def test_the_style_survives_closing_and_reopening_the_project(sample: Path) -> None:
    session = analysed(sample / "sample.srt")
    reject_commas(session, 4)
    state, style = session.document.state(), session.style()
    session.close()

    again = ReviewSession.open(sample / "sample.srt")
    try:
        assert again.document.state() == state
        reopened = again.style()
        assert reopened.decisions == style.decisions == 4
        assert reopened == style
        # The project's style, read by another process while the editor has the project open.
        with Project(again.project.path, read_only=True) as reader:
            assert project_style(reader) == reopened
        assert (again.history.undo_description or "").startswith("Reject")
        again.undo()  # undo goes on where it was, the style with it
        assert again.style().decisions == 3
    finally:
        again.close()


def test_the_style_reopened_is_the_style_the_session_had_to_the_last_digit(sample: Path) -> None:
    session = analysed(sample / "sample.srt")
    try:
        reject_commas(session, 4)
        with Project(session.project.path, read_only=True) as reader:
            assert project_style(reader) == session.style()
    finally:
        session.close()


def test_a_batch_s_files_share_one_style_and_later_files_start_from_it(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a", "b"):
        shutil.copy(SAMPLE / "sample.srt", folder / f"{name}.srt")
    project = tmp_path / "p.punctum"
    command = ("batch", str(folder), "--project", str(project), "--audio", "text", "--workers", "1")
    first = punctum(*command)
    assert first.returncode == 0, first.stderr
    with Project(project, read_only=True) as reader:
        assert project_style(reader).neutral
        ids = {entry.stem: entry.id for entry in reader.files()}

    a = ReviewSession.open_project(project, ids["a"])
    try:
        reject_commas(a, 5)
        taught = a.style()
    finally:
        a.close()
    assert taught.decisions == 5 and taught.mark_bias < 0
    b = ReviewSession.open_project(project, ids["b"])
    try:
        assert b.style() == taught  # b's review starts from what a's decisions taught
        untaught = pending_commas(b)  # b was read before anything was decided
    finally:
        b.close()
    with Project(project, read_only=True) as reader:
        assert project_style(reader) == taught

    # status says so, in words and in its JSON
    status = punctum("status", str(project))
    assert status.returncode == 0, status.stderr
    assert taught.summary() in status.stdout.splitlines()
    rows = json.loads(punctum("status", str(project), "--json").stdout)
    assert [row["house_style"] for row in rows] == [
        {"decisions": 5, "learnt": taught.describe()},
    ] * 2
    # Five answers bear out one lesson, said as such.
    (lesson,) = taught.describe()
    assert "comma" in lesson or "fewer" in lesson, lesson

    # A file added later is read with the project's style: fewer commas, or less sure ones.
    shutil.copy(SAMPLE / "sample.srt", folder / "c.srt")
    second = punctum(*command)
    assert second.returncode == 0, second.stderr
    c = _open(project, "c")
    try:
        styled = pending_commas(c)
    finally:
        c.close()
    assert len(styled) <= len(untaught)
    assert sum(s.confidence for s in styled.values()) < sum(s.confidence for s in untaught.values())

    # Reset: the decisions stay, what they taught is forgotten (the files read from now on).
    reset = punctum("style", str(project), "--reset")
    assert reset.returncode == 0, reset.stderr
    assert reset.stdout.splitlines()[0] == taught.summary()
    assert "house style reset" in reset.stdout
    with Project(project, read_only=True) as reader:
        assert project_style(reader).neutral
    after = punctum("style", str(project))
    assert after.stdout == "house style: nothing learnt yet (no decisions)\n"
    a = ReviewSession.open_project(project, ids["a"])
    try:
        assert sum(s.status is Status.REJECTED for s in a.document.suggestions) >= 5
        reject_commas(a, 1)  # decisions from now on teach it again
        assert a.style().decisions == 1
    finally:
        a.close()


def _open(project: Path, stem: str) -> ReviewSession:
    with Project(project, read_only=True) as reader:
        (file_id,) = [entry.id for entry in reader.files() if entry.stem == stem]
    return ReviewSession.open_project(project, file_id)


def test_a_style_file_round_trips_through_punctuate_and_batch(tmp_path: Path) -> None:
    sample = tmp_path / "sample.srt"
    shutil.copy(SAMPLE / "sample.srt", sample)
    # A project whose style a person taught, written to a file.
    session = ReviewSession.open(sample, project_path=tmp_path / "taught.punctum")
    session.store_analysis(analyse(session.analysis_request(AudioUse.TEXT), Punctuator()))
    reject_commas(session, 5)
    taught = session.style()
    session.close()
    written = tmp_path / "house.json"
    result = punctum("style", str(tmp_path / "taught.punctum"), "--write", str(written))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [taught.summary(), f"{written}: written"]
    data = json.loads(written.read_text(encoding="utf-8"))
    assert data["format"] == "punctum-style" and data["decisions"] == 5
    assert data["marks"]["bias"] < 0
    # A team's style that puts far fewer marks in.
    strong = tmp_path / "strong.json"
    strong.write_text(json.dumps({**data, "marks": {"bias": -4.0, "scale": 1.0}}), encoding="utf-8")

    def commas(*style: str) -> list[dict[str, object]]:
        out = tmp_path / "suggestions.json"
        done = punctum(
            "punctuate", str(sample), "--audio", "text", "--apply", "none", "--suggestions", str(out),
            "-o", str(tmp_path / "out.srt"), *style,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return model_commas(json.loads(out.read_text(encoding="utf-8"))["suggestions"])

    plain, house, team = commas(), commas("--style", str(written)), commas("--style", str(strong))
    assert len(team) < len(plain) and len(house) <= len(plain)
    assert sum(float(s["confidence"]) for s in house) < sum(float(s["confidence"]) for s in plain)
    # --apply settles after the style's reading: a comma the style takes away is not written.
    applied = punctum("punctuate", str(sample), "--audio", "text", "--style", str(strong), "--apply", "all")
    assert applied.returncode == 0, applied.stderr
    text = [line for line in applied.stdout.splitlines() if "-->" not in line]
    assert sum(line.count(",") for line in text) == len(team)

    # batch --style: kept in the project, which reads its files and starts its reviews from it.
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "talk.srt")
    project = tmp_path / "team.punctum"
    batch = punctum(
        "batch", str(folder), "--project", str(project), "--audio", "text", "--workers", "1",
        "--style", str(strong),
    )  # fmt: skip
    assert batch.returncode == 0, batch.stderr
    given = punctum("style", str(project))
    assert given.returncode == 0 and "fewer of the model's marks" in given.stdout, given.stdout
    assert "5 from a style file" in given.stdout
    talk = ReviewSession.open_project(project)
    try:
        assert sorted(pending_commas(talk)) == sorted(int(s["word_index"]) for s in team)
        assert talk.style().mark_bias == pytest.approx(-4.0)
    finally:
        talk.close()


BAD_STYLES = {
    "not JSON": ("notes.json", "this is not JSON {", "not a Punctum style file (not JSON)"),
    "JSON of another kind": ("other.json", '{"format": "punctum-suggestions", "items": []}', "not a Punctum style file"),
    "a list": ("list.json", "[1, 2, 3]", "not a Punctum style file"),
    "another version": ("future.json", '{"format": "punctum-style", "version": 99}', "version 99"),
    "a malformed bias": (
        "nan.json",
        '{"format": "punctum-style", "version": 1, "class_bias": {",": "lots"}}',
        "malformed style file",
    ),
    "a missing file": ("missing.json", None, "cannot read the style file"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_STYLES))
def test_a_bad_style_file_is_one_line_and_exit_2_before_any_work(tmp_path: Path, case: str) -> None:
    name, text, told = BAD_STYLES[case]
    style = tmp_path / name
    if text is not None:
        style.write_text(text, encoding="utf-8")
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "talk.srt")
    out, project = tmp_path / "out.srt", tmp_path / "p.punctum"
    for command in (
        ("punctuate", str(folder / "talk.srt"), "-o", str(out), "--style", str(style)),
        ("batch", str(folder), "--project", str(project), "--style", str(style)),
    ):
        result = punctum(*command)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert result.stderr == f"punctum: --style {style}: {result.stderr.split(': ', 2)[2]}"
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert told in result.stderr, result.stderr
    assert not out.exists() and not project.exists()  # refused before any work


def test_a_style_file_is_never_written_over_the_project_nor_an_input(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "talk.srt")
    project = tmp_path / "p.punctum"
    assert punctum("batch", str(folder), "--project", str(project), "--audio", "text").returncode == 0
    before = project.read_bytes()
    for target, told in ((project, "will not overwrite"), (tmp_path / "style.txt", "writes .json files")):
        result = punctum("style", str(project), "--write", str(target))
        assert result.returncode == 2 and told in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1
    assert project.read_bytes() == before
    style = tmp_path / "style.json"
    assert punctum("style", str(project), "--write", str(style)).returncode == 0
    clash = punctum("punctuate", str(folder / "talk.srt"), "--style", str(style), "-o", str(style))
    assert clash.returncode == 2 and "will not overwrite an input" in clash.stderr, clash.stderr
    assert json.loads(style.read_text(encoding="utf-8"))["format"] == "punctum-style"
    missing = punctum("style", str(tmp_path / "none.punctum"))
    assert missing.returncode == 3 and "no such project file" in missing.stderr


def test_marks_a_person_adds_before_a_word_make_that_word_s_gaps_likelier_to_take_one(tmp_path: Path) -> None:
    """The commas a person puts in before "because" where the model proposes none teach the style:
    every later gap before "because" is read as likelier to take a mark, and a comma the likeliest."""
    lines = [
        "we fixed the old lamp together because it works again now",
        "the radio was broken for years because we opened it up",
        "nobody had the right part that day because we made one",
        "the toaster needed a new cord because rose brought one in",
        "the chain was rusty and stiff because we cleaned it well",
        "the kettle had a loose handle because we tightened the screw",
        "the bike had not moved in years because the tires were flat",
        "the clock had stopped at noon because we changed its battery",
    ]
    captions = tmp_path / "because.srt"
    captions.write_text(
        "".join(
            f"{n}\n00:00:{2 * n:02d},000 --> 00:00:{2 * n + 2:02d},000\n{line}\n\n"
            for n, line in enumerate(lines, 1)
        ),
        encoding="utf-8",
    )
    session = ReviewSession.open(captions, project_path=tmp_path / "because.punctum")
    try:
        session.store_analysis(analyse(session.analysis_request(AudioUse.TEXT), Punctuator()))
        session.settle(TriagePolicy())
        words = [w.text for w in session.document.words()]
        readings = session.readings()
        before = [i for i in range(len(words) - 1) if words[i + 1] == "because"]
        assert len(before) == len(lines)
        unmarked = [
            g for g in before if max(range(len(MODEL_MARKS)), key=readings[g].combined.__getitem__) == 0
        ]
        assert len(unmarked) >= 4, "the model proposes a mark before most of them: the test needs others"
        taught = unmarked[:4]
        for gap in taught:
            session.set_mark(gap, ",")
        style = session.style()
        assert style.decisions == 4 and style.add_word_bias.get("because", 0.0) > 0
        later = [g for g in before if g not in taught]
        learnt = style.distributions([readings[g] for g in later], ["because"] * len(later))
        for row, gap in enumerate(later):
            assert learnt[row][0] < readings[gap].combined[0]  # likelier to take a mark than the model read
        assert style.class_bias[COMMA] >= 0  # and, where one goes, a comma
        assert all(session.document.word(g).mark == "," for g in taught)  # the person's stay
    finally:
        session.close()


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("UPDATE files SET gap_readings = '[[1, 2'", "the gaps' readings are malformed"),
        (
            "INSERT INTO decisions (file_id, action, arguments, decided_by, decided_at, version)"
            ' VALUES (1, \'restyle\', \'{"reopen": [], "put": [], "drop": [99999], "accept": []}\', \'rule\', 0, 1)',
            "a recorded restyle does not fit file 'a'",
        ),
    ],
    ids=["readings not JSON", "a re-reading of a suggestion that is not there"],
)
def test_a_damaged_style_row_is_one_line_not_a_traceback(tmp_path: Path, damage: str, said: str) -> None:
    import sqlite3

    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "a.srt")
    project = tmp_path / "p.punctum"
    assert punctum("batch", str(folder), "--project", str(project), "--audio", "text").returncode == 0
    with sqlite3.connect(project) as connection:
        # A person has worked on the file, so the style reads it.
        connection.execute(
            "INSERT INTO decisions (file_id, action, arguments, decided_by, decided_at, version)"
            """ VALUES (1, 'edit_word', '{"word": 0, "text": "hello"}', 'editor', 0, 1)"""
        )
        connection.execute(damage)
    for command in (("status", str(project)), ("style", str(project))):
        result = punctum(*command)
        assert result.returncode == 3, result.stderr
        assert said in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def _proposed_marks(session: ReviewSession) -> int:
    """The model's mark proposals a person sees: pending, or accepted by them."""
    return sum(
        1
        for s in session.document.suggestions
        if s.source is Source.MODEL and s.casing is None and s.status is not Status.REJECTED
    )


def _accept_first_pending(session: ReviewSession, times: int) -> None:
    for _ in range(times):
        pending = [
            s
            for s in session.document.suggestions
            if s.source is Source.MODEL and s.casing is None and s.status is Status.PENDING
        ]
        assert pending, "nothing left to accept"
        assert session.accept(min(pending, key=lambda s: s.gap).id) is not None


def test_accepting_what_the_model_proposes_teaches_no_more_marks(sample: Path) -> None:
    """Accepting proposals says nothing of the gaps where the model proposes no mark: the style
    learns nothing there, says nothing of "more marks", and the proposals stay as they were."""
    session = ReviewSession.open(sample / "sample.srt")
    session.store_analysis(analyse(session.analysis_request(AudioUse.TEXT), Punctuator()))
    before = _proposed_marks(session)
    _accept_first_pending(session, 12)
    style = session.style()
    assert style.decisions == 12
    assert (style.add_bias, style.add_scale, style.add_word_bias) == (0.0, 1.0, {})
    assert "more marks where the model proposes none" not in style.summary()
    assert abs(_proposed_marks(session) - before) <= 0.05 * before
    session.close()


def test_fifty_agreements_on_a_long_talk_move_the_pending_marks_by_under_5_percent(tmp_path: Path) -> None:
    """The first 3,500 words of a TED talk as 500 bare cues: accepting the first pending mark fifty
    times leaves the model's proposals within 5% of what they were (they went 491 -> 3,450)."""
    import re

    words: list[str] = []
    with shared_data("ted", "en_ted_talks.txt").open(encoding="utf-8") as talks:
        for line in talks:
            words += re.sub(r"[^\w' ]", " ", line.lower()).split()
            if len(words) >= 3500:
                break

    def at(ms: int) -> str:
        return f"{ms // 3600000:02}:{ms // 60000 % 60:02}:{ms // 1000 % 60:02},{ms % 1000:03}"

    captions = tmp_path / "talk.srt"
    captions.write_text(
        "\n".join(
            f"{n + 1}\n{at(n * 2000)} --> {at(n * 2000 + 1900)}\n{' '.join(words[n * 7 : n * 7 + 7])}\n"
            for n in range(500)
        ),
        encoding="utf-8",
    )
    session = ReviewSession.open(captions, project_path=tmp_path / "talk.punctum")
    session.store_analysis(analyse(session.analysis_request(AudioUse.TEXT), Punctuator()))
    before = _proposed_marks(session)
    _accept_first_pending(session, 50)
    assert abs(_proposed_marks(session) - before) < 0.05 * before
    session.close()


def _batched_sample(tmp_path: Path, apply: str) -> tuple[Path, Path]:
    """The sample's captions batched (text only) with ``--apply apply`` into a project: the
    folder and the project."""
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "sample.srt")
    project = tmp_path / "p.punctum"
    command = ("batch", str(folder), "--project", str(project), "--apply", apply, "--workers", "1")
    result = punctum(*command, "--no-audio")
    assert result.returncode == 0, result.stderr
    return folder, project


def _mark_gaps(session: ReviewSession) -> dict[int, list[Suggestion]]:
    gaps: dict[int, list[Suggestion]] = {}
    for s in session.document.suggestions:
        if s.source is Source.MODEL and s.casing is None:
            gaps.setdefault(s.gap, []).append(s)
    return gaps


def test_the_re_reading_never_proposes_again_where_batch_accepted(tmp_path: Path) -> None:
    """`batch --apply confident` accepts what it is sure of; a person's decisions in the editor
    re-read the rest, never a gap batch decided: no gap has an accepted and a pending mark."""
    _, project = _batched_sample(tmp_path, "confident")
    session = ReviewSession.open_project(project)
    try:
        accepted = {
            g for g, found in _mark_gaps(session).items() if any(s.status is Status.ACCEPTED for s in found)
        }
        assert accepted, "batch accepted nothing: the test needs a confident file"
        for _ in range(4):
            pending = [
                s for found in _mark_gaps(session).values() for s in found if s.status is Status.PENDING
            ]
            session.reject_gap(min(pending, key=lambda s: s.gap).id)
        for gap in accepted:
            found = _mark_gaps(session)[gap]
            assert [s.status for s in found] == [Status.ACCEPTED], (gap, found)
        assert session.style().decisions == 4  # batch's accepts teach nothing
    finally:
        session.close()


def test_a_re_analysis_keeps_who_decided_each_gap(tmp_path: Path) -> None:
    """The rule's settlement and a person's answers carried to a re-analysis stay theirs: the rule's
    can be reopened by a policy, only the person's teach the style."""
    from app.core.history import Decider
    from app.services.projects import reanalyse_file

    folder, project = _batched_sample(tmp_path, "triage")
    session = ReviewSession.open_project(project)
    try:
        settled = session.settled_by_rule()
        assert settled
        pending = [s for found in _mark_gaps(session).values() for s in found if s.status is Status.PENDING]
        mine = sorted(pending, key=lambda s: s.gap)[:3]
        for s in mine:
            session.reject_gap(s.id)
        settled_gaps = {session.document.suggestion(i).gap for i in session.settled_by_rule()}
        reanalyse_file(session.project, session.file_id)
    finally:
        session.close()
    result = punctum("batch", str(folder), "--project", str(project), "--workers", "1", "--no-audio")
    assert result.returncode == 0, result.stderr
    session = ReviewSession.open_project(project)
    try:
        deciders = {row.by for row in session.project.decisions(session.file_id)}
        assert deciders <= {Decider.PERSON, Decider.RULE}
        assert session.style().decisions == len(mine)  # the rule's settlement taught nothing
        again = {session.document.suggestion(i).gap for i in session.settled_by_rule()}
        assert again == settled_gaps  # still the rule's: a policy changed reopens them
        for s in mine:
            assert session.document.word(s.gap).mark == ""
            assert all(x.status is Status.REJECTED for x in _mark_gaps(session)[s.gap])
    finally:
        session.close()


def test_no_proposal_flips_back_and_forth_over_a_scripted_review(sample: Path) -> None:
    """A person works through the sample in reading order: full stops and question marks accepted,
    every third comma turned down, every fifth gap given a colon instead. The style re-reads the
    rest after each answer; no gap still waiting goes from one mark to another and back."""
    session = analysed(sample / "sample.srt")
    seen: dict[int, list[str]] = {}

    def note() -> None:
        for s in session.document.suggestions:
            if s.source is Source.MODEL and s.casing is None and s.status is Status.PENDING:
                marks = seen.setdefault(s.gap, [])
                if not marks or marks[-1] != s.mark:
                    marks.append(s.mark)

    note()
    for turn in range(30):
        pending = [
            s
            for s in session.document.suggestions
            if s.source is Source.MODEL and s.casing is None and s.status is Status.PENDING
        ]
        if not pending:
            break
        first = min(pending, key=lambda s: s.gap)
        if turn % 5 == 4:
            session.change_mark(first.id, ":")
        elif first.mark == "," and turn % 3 == 0:
            session.reject_gap(first.id)
        else:
            session.accept_gap(first.id)
        note()
    flips = {gap: marks for gap, marks in seen.items() if len(marks) != len(set(marks))}
    assert not flips
    session.close()


def test_a_reset_forgets_decisions_not_gaps_and_is_named(tmp_path: Path) -> None:
    """Four gaps turned down, the style reset, the decisions undone and the same four turned down
    again: the new answers teach (the reset forgot the decisions, not the gaps), the re-reading
    after the reset says what it is in the Edit menu, and a damaged stored style is reset."""
    import sqlite3

    _, project = _batched_sample(tmp_path, "none")
    session = ReviewSession.open_project(project)
    try:
        gaps = reject_commas(session, 4)
        assert session.style().decisions == 4
        step = session.reset_style()
        assert session.style().decisions == 0
        assert step is not None, "the style taught nothing the reset takes back"
        assert (
            step.description == session.history.undo_description == "Re-read after the house style was reset"
        )
    finally:
        session.close()
    session = ReviewSession.open_project(project)
    try:
        assert session.style().decisions == 0
        while session.undo() is not None:
            pass
        again = reject_commas(session, 4)
        assert sorted(again) == sorted(gaps)
        assert session.style().decisions == 4  # they teach again
    finally:
        session.close()
    status = punctum("style", str(project))
    assert "house style from 4 decisions" in status.stdout, status.stdout
    with sqlite3.connect(project) as connection:
        connection.execute("INSERT OR REPLACE INTO settings (name, value) VALUES ('house_style', '{garbage')")
    assert punctum("style", str(project)).returncode == 3
    reset = punctum("style", str(project), "--reset")
    assert reset.returncode == 0, reset.stderr
    assert "house style reset" in reset.stdout
    assert punctum("style", str(project)).returncode == 0


def test_a_file_an_earlier_punctum_analysed_is_said_and_batch_gives_it_readings(tmp_path: Path) -> None:
    """A file analysed before gap readings were kept teaches the style nothing: `status` says so,
    and the next `batch` analyses it again, the person's decisions carried over, after which they
    teach."""
    folder, project = _batched_sample(tmp_path, "none")
    session = ReviewSession.open_project(project)
    try:
        rejected = reject_commas(session, 3)
    finally:
        session.close()
    with Project(project) as opened:  # as a project of schema 8 holds it
        opened.db.execute("UPDATE files SET gap_readings = NULL")
        assert project_style(opened).decisions == 0
    status = punctum("status", str(project))
    assert "analysed by an earlier Punctum: its decisions teach the house style nothing" in status.stdout
    again = punctum("batch", str(folder), "--project", str(project), "--workers", "1", "--no-audio")
    assert again.returncode == 0, again.stderr
    assert "analysed again with its gaps' readings kept" in again.stderr, again.stderr
    with Project(project, read_only=True) as reader:
        assert project_style(reader).decisions == 3  # the carried decisions teach again
    reopened = ReviewSession.open_project(project)
    try:
        commas = _mark_gaps(reopened)
        assert all(any(s.status is Status.REJECTED for s in commas[gap]) for gap in rejected)
    finally:
        reopened.close()
    assert "earlier Punctum" not in punctum("status", str(project)).stdout


def test_a_style_file_s_odd_numbers_and_depth_are_one_line(tmp_path: Path) -> None:
    """A count of decisions of Infinity was an OverflowError, one of 400 digits was taken (and
    printed by `status`), a version of true was taken for 1, and deep nesting a RecursionError."""
    from app.ml.house_style import HouseStyle, StyleError
    from app.ml.style_file import read_style, style_text

    written = json.loads(style_text(HouseStyle(mark_bias=-0.5, decisions=3)))
    path = tmp_path / "style.json"
    for decisions in ("Infinity", "1" + "0" * 400, "2.5", "true", "-1"):
        path.write_text(json.dumps(written).replace('"decisions": 3', f'"decisions": {decisions}'))
        with pytest.raises(StyleError, match="a count of decisions is a whole number"):
            read_style(path)
    path.write_text(json.dumps({**written, "version": True}))
    with pytest.raises(StyleError, match="version True"):
        read_style(path)
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(StyleError, match="not JSON"):
        read_style(path)
    path.write_text(json.dumps(written))
    assert read_style(path).mark_bias == -0.5  # the file as written still reads


def test_a_name_capitalised_once_is_proposed_with_its_capital_at_every_later_mention(tmp_path: Path) -> None:
    """On the sample "Last week, Rose arrived" was proposed, but "After an hour, rose wrote" got no
    capital: capitals were not learnt at all. Capitalising the name once proposes it at its other
    mention, with a confidence one answer earns (asked, not settled), and in the project's next
    file at both mentions."""
    from app.core.model import Casing
    from app.services.learnt_capitals import CAPITALISED_KEY

    for name in ("a.srt", "b.srt"):
        shutil.copy(SAMPLE / "sample.srt", tmp_path / name)
    session = analysed(tmp_path / "a.srt")
    words = list(session.document.words())
    first, later = [i for i, w in enumerate(words) if w.text == "rose"]

    def capital_at(gap: int) -> Suggestion | None:
        return next((s for s in session.document.suggestions if s.gap == gap and s.casing is not None), None)

    proposed = capital_at(first)
    assert proposed is not None and capital_at(later) is None  # the model's capital, at one mention
    session.accept(proposed.id)
    learnt = capital_at(later)
    assert learnt is not None and learnt.status is Status.PENDING and learnt.casing is Casing.CAPITALISED
    assert learnt.confidence == 0.75 and learnt.probabilities[CAPITALISED_KEY] == 1
    assert learnt.id in {row.lead.id for row in session.queue()}  # asked, in the queue
    # Why, in the evidence beside it and in the style's line.
    from app.ui.evidence import evidence_html

    row = next(row for row in session.queue() if row.lead.id == learnt.id)
    assert "in this project you gave “rose” a capital 1 time, kept it lowercase 0 times" in evidence_html(
        session, row
    )
    assert session.capitals_line() == "capitalises Rose (1 of 1)"
    session.undo()  # the capital taken back: what it taught goes with it
    assert capital_at(later) is None
    session.redo()
    assert capital_at(later) is not None
    project = session.project.path
    session.close()

    # Reopened, the project keeps what was proposed; its next file proposes the name at both mentions.
    again = ReviewSession.open(tmp_path / "a.srt", project_path=project)
    assert any(s.gap == later and s.casing is Casing.CAPITALISED for s in again.document.suggestions)
    again.close()
    other = ReviewSession.open(tmp_path / "b.srt", project_path=project)
    other.store_analysis(analyse(other.analysis_request(AudioUse.TEXT), Punctuator()))
    other.settle(TriagePolicy())
    capitals = {s.gap: s for s in other.document.suggestions if s.casing is Casing.CAPITALISED}
    assert first in capitals and later in capitals and capitals[later].confidence == 0.75
    other.close()
    for command in ("status", "style"):
        said = run_punctum_here(command, str(project))
        assert "capitalises Rose (1 of 1)" in said.stdout, said.stdout
    # A file batch adds later starts with the name's capital proposed too.
    later_files = tmp_path / "later"
    later_files.mkdir()
    shutil.copy(SAMPLE / "sample.srt", later_files / "c.srt")
    batch = run_punctum_here("batch", str(later_files), "--project", str(project), "--no-audio")
    assert batch.returncode == 0, batch.stderr
    added = ReviewSession.open(later_files / "c.srt", project_path=project)
    try:
        capitals = {s.gap: s for s in added.document.suggestions if s.casing is Casing.CAPITALISED}
        assert first in capitals and capitals[later].confidence == 0.75
    finally:
        added.close()
    # A reset forgets what the answers taught of capitals too.
    assert run_punctum_here("style", str(project), "--reset").returncode == 0
    assert "capitalises" not in run_punctum_here("status", str(project)).stdout


def test_a_capital_given_in_one_context_is_not_spread_to_an_article_or_a_word_kept_both_ways() -> None:
    """A long call's review capitalised "A" in "Series A" twice and kept "a" once: every "a" of
    the call was then proposed "A" (and with it hundreds of questions at each decision). An
    article takes its capital from the context, and a word capitalised in some places and not in
    others is not a name: neither is proposed elsewhere; a name answered one way still is."""
    from app.formats import parse_document
    from app.services.learnt_capitals import CapitalCount, learnt_line, recased_again

    captions = b"1\n00:00:01,000 --> 00:00:04,000\nwe sold a share to rose and a bond to acme in paris.\n"
    document = parse_document(captions, "srt")
    document.language = "en"
    taught = {
        "a": CapitalCount(capitalised=2, lowered=0),
        "paris": CapitalCount(capitalised=2, lowered=1),
        "rose": CapitalCount(capitalised=1),
        "acme": CapitalCount(capitalised=3, lowered=1),
    }
    put, _ = recased_again(document, set(), taught, 100)
    words = [w.text for w in document.words()]
    assert sorted(words[s.gap] for s in put) == ["acme", "rose"]
    assert learnt_line(taught) == "capitalises Acme (3 of 4), Rose (1 of 1)"


def test_marks_the_readers_disagree_on_are_trusted_past_the_cap_only_once_answers_bear_them_out() -> None:
    """Heard gaps whose readers disagree were capped at 0.85 whatever the person answered, so a
    project where such marks are always right still asked about every one. Now the cap holds
    until this project's answers, taken as cautiously as any raise, say such marks hold."""
    from app.core.gap_readings import GapReading
    from app.ml.confidence import READERS_DISAGREE_CAP
    from app.ml.house_style import StyleExample
    from app.ml.style_fit import fit_style

    # The text reads a full stop, the recogniser hears a comma; combined, a full stop.
    reading = GapReading(
        combined=(0.02, 0.08, 0.88, 0.01, 0.005, 0.005),
        read=(0.02, 0.05, 0.9, 0.01, 0.01, 0.01),
        heard=(0.1, 0.8, 0.08, 0.01, 0.005, 0.005),
        pause=0.5,
    )

    def proposed(answers: list[int]) -> tuple[int, float]:
        style = fit_style([StyleExample(reading, "so", 0, chosen, "en") for chosen in answers])
        proposal = style.proposals([reading], ["so"], [0], "en")[0]
        assert proposal is not None
        return proposal.mark, proposal.confidence

    assert proposed([]) == (2, READERS_DISAGREE_CAP)
    assert proposed([2] * 10) == (2, READERS_DISAGREE_CAP)  # ten answers are not yet enough
    mark, sure = proposed([2] * 100)  # a hundred are
    assert mark == 2 and sure >= 0.97
    mark, _ = proposed([1] * 40)  # such full stops turned into commas: the comma is proposed
    assert mark == 1


def test_the_evidence_says_what_the_answers_kept_of_suggestions_like_this_one(tmp_path: Path) -> None:
    """The style's confidence moved with the answers, but nothing said why: the evidence now says
    how many suggestions of the same mark, read the same way, the person kept in this project,
    and whether the triage rule settled the gap."""
    from app.core.marks import model_class
    from app.ui.evidence import evidence_html

    shutil.copy(SAMPLE / "sample.srt", tmp_path / "a.srt")
    session = analysed(tmp_path / "a.srt")

    def pending_marks() -> list[Suggestion]:
        return sorted(
            (
                s
                for s in session.document.suggestions
                if s.source is Source.MODEL and s.casing is None and s.status is Status.PENDING
            ),
            key=lambda s: s.gap,
        )

    commas = [s for s in pending_marks() if model_class(s.mark) == 1]
    assert len(commas) >= 3
    session.accept(commas[0].id)
    turned_down = next(s for s in pending_marks() if model_class(s.mark) == 1)
    session.reject(turned_down.id)
    later = next(s for s in pending_marks() if model_class(s.mark) == 1)
    row = next(row for row in session.queue() if row.index == later.gap)
    assert "in this project you kept 1 of 2 commas read from the text alone" in evidence_html(session, row)
    settled = session.settled_by_rule()
    told = 0
    for row in session.gaps():
        model = row.by(Source.MODEL, pending=False)
        if row.marks and model is not None and model.id in settled:
            assert f"settled by the triage rule at {model.confidence:.2f}" in evidence_html(session, row)
            told += 1
    assert told >= 1  # the sample has marks sure enough to settle
    session.close()
