"""Re-cut cues a subtitler signs off: one set of caption limits for the checks, re-breaking and
re-cutting (set in the editor's Settings or on the command line), no flashes, estimated times
that stay in their cue, cues over a limit named, and a re-cut kept in a project as approved."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

from PySide6.QtCore import QSettings

from app.core.checks import STYLE_GUIDE_LIMITS, CaptionLimits, visible_lines
from app.core.cue_segmentation import TimedWord, plan_cues
from app.core.cut_checks import cut_checks
from app.core.decisions import Recut, decode, encode
from app.core.recut_cues import CueCut
from app.core.resegment import resegment
from app.formats import parse_document, render_document
from app.services.captions_export import recut_captions
from app.services.review import ReviewSession
from app.ui.shortcuts import save_limits, saved_limits
from tests.conftest import SAMPLE, run_punctum_here

SAMPLE_SRT = SAMPLE / "sample.srt"

#: The issue's example: a cue keeping its own cut (styled) after two plain ones, the second
#: ending with the first word of a sentence that runs on into it.
OK_BEFORE_A_STYLED_CUE = (
    "1\n00:00:00,000 --> 00:00:03,000\nSo let us begin with the first one, and\n\n"
    "2\n00:00:03,000 --> 00:00:06,000\nthen we will see what happens next. OK,\n\n"
    "3\n00:00:06,000 --> 00:00:09,000\n<i>so what do you think about that?</i>\n"
)


def _words(text: str) -> list[str]:
    return [word.rendered() for word in parse_document(text.encode(), "srt").words()]


def test_a_word_is_not_cut_off_to_flash_by_alone() -> None:
    document = parse_document(OK_BEFORE_A_STYLED_CUE.encode(), "srt")
    result = resegment(document)
    written = render_document(result.document)
    assert _words(written) == _words(OK_BEFORE_A_STYLED_CUE)
    # "OK," on its own would have been up for a fifth of a second.
    assert all(cue.duration >= STYLE_GUIDE_LIMITS.min_ms for cue in result.document.cues)
    assert "OK," not in [cue.plain_text() for cue in result.document.cues]
    assert "<i>so what do you think about that?</i>" in written


#: Heard times (ms) of a French recording's last two sentences: a two-word phrase ("En
#: parallèle,") between a sentence end and a sentence too long to join it in one cue.
PHRASE_BEFORE_A_LONG_SENTENCE = [
    ("ainsi", 25290, 25460),
    ("que", 25460, 25620),
    ("d'autres", 25620, 25880),
    ("applications", 25880, 26540),
    ("de", 26540, 26840),
    ("traitement", 26840, 27260),
    ("du", 27260, 27560),
    ("langage", 27560, 27940),
    ("naturel.", 27940, 28780),
    ("En", 29150, 29220),
    ("parallèle,", 29220, 29780),
    ("j'aide", 29980, 30200),
    ("à", 30200, 30300),
    ("écrire", 30300, 30560),
    ("des", 30560, 30740),
    ("tests", 30740, 31000),
    ("pour", 31000, 31260),
    ("rendre", 31260, 31500),
    ("le", 31500, 31720),
    ("Readalong-studio", 31720, 32580),
    ("plus", 32580, 32820),
    ("robuste.", 32820, 33420),
]


def test_a_short_phrase_is_not_left_alone_for_less_than_the_minimum() -> None:
    words = [TimedWord(text, start, end) for text, start, end in PHRASE_BEFORE_A_LONG_SENTENCE]
    cues = plan_cues(words, STYLE_GUIDE_LIMITS, until=33420 + STYLE_GUIDE_LIMITS.linger_ms)
    assert [word.text for cue in cues for word in cue.words] == [
        text for text, _, _ in PHRASE_BEFORE_A_LONG_SENTENCE
    ]
    # Alone, "En parallèle," would be up for 0.75 s, under the 5/6 s a cue needs to be read.
    assert all(cue.end - cue.start >= STYLE_GUIDE_LIMITS.min_ms for cue in cues)
    assert cues[0].words[-1].text == "naturel."


def test_a_cue_whose_words_cannot_all_be_shown_in_its_time_keeps_its_cut() -> None:
    rng = random.Random(1)
    words = [rng.choice(["alpha", "beta", "gamma", "delta", "echo", "fox"]) for _ in range(1900)]
    lines = "\n".join(" ".join(words[n : n + 100]) for n in range(0, len(words), 100))
    text = f"1\n00:00:00,000 --> 00:00:10,000\n{lines}\n\n2\n00:00:12,000 --> 00:00:14,000\nthe end\n"
    document = parse_document(text.encode(), "srt")
    result = resegment(document)
    # Cut afresh, it made 125 cues of 1 ms, running 0.5 s past the cue's end into the silence.
    cues = result.document.cues
    assert all(cue.duration >= 1000 for cue in cues)
    assert cues[0].start == 0 and cues[0].end <= 10_000
    assert _words(render_document(result.document)) == _words(text)
    # Kept as it was, and said so: over the limits, by number.
    checks = cut_checks(result.document)
    assert 1 in checks.over and checks.over_speed >= 1


def test_the_summary_names_the_cues_over_a_limit() -> None:
    fast = (
        "1\n00:00:00,000 --> 00:00:01,200\nwe could not possibly read all of this in time.\n\n"
        "2\n00:00:01,200 --> 00:00:04,000\n<i>The end came later.</i>\n"
    )
    _, told = recut_captions(parse_document(fast.encode(), "srt"), None, "en")
    summary = told.summary()
    assert "over a caption limit 1 -> 1 (cue 1: reading speed 1" in summary, summary


def test_the_limits_set_reach_the_recut_and_its_checks(sample: Path) -> None:
    session = ReviewSession.open(sample / "sample.srt")
    try:
        narrow = dataclasses.replace(STYLE_GUIDE_LIMITS, max_line_chars=24, max_lines=1)
        session.limits = narrow
        _, preview, told = session.recut_preview()
        made = [cue for cue in preview.cues if cue not in session.document.cues]
        assert made
        for cue in made:
            lines = visible_lines(cue)
            assert len(lines) == 1 and (len(lines[0]) <= 24 or " " not in lines[0]), lines
        assert told.after == cut_checks(preview, narrow)
    finally:
        session.close()


def test_a_reopened_project_has_the_cues_approved_whatever_the_rules_are_now(sample: Path) -> None:
    session = ReviewSession.open(sample / "sample.srt")
    session.limits = dataclasses.replace(STYLE_GUIDE_LIMITS, max_line_chars=30, max_cps=14.0)
    assert session.recut() is not None
    approved = [(cue.start, cue.end, cue.text(), cue.index) for cue in session.document.cues]
    session.close()
    # Reopened with other limits (today's defaults): the cues are those approved, not a new cut.
    again = ReviewSession.open(sample / "sample.srt")
    try:
        assert again.limits == STYLE_GUIDE_LIMITS
        assert [(cue.start, cue.end, cue.text(), cue.index) for cue in again.document.cues] == approved
        assert again.history.undo_description == "Re-cut cues at sentence ends"
    finally:
        again.close()


def test_a_recut_is_stored_as_its_cues_and_an_older_one_as_its_times() -> None:
    cut = (CueCut(3, 0, 1500, (3,)), CueCut(2, 1584, 3000))
    action, arguments = encode(Recut(cut=cut))
    assert (action, arguments) == ("recut", {"cut": [[3, 0, 1500, [3]], [2, 1584, 3000, []]]})
    assert decode(action, arguments) == Recut(cut=cut)
    # Projects of earlier versions recorded the heard times, replayed by the rules.
    assert decode("recut", {"times": [[0, 10], None]}) == Recut(((0, 10), None))


def test_limits_from_a_settings_file_edited_by_hand_fall_back_to_the_style_guides(tmp_path: Path) -> None:
    settings = QSettings(str(tmp_path / "punctum.ini"), QSettings.Format.IniFormat)
    assert saved_limits(settings) == STYLE_GUIDE_LIMITS
    mine = CaptionLimits(
        max_line_chars=37, max_lines=3, max_cps=15.0, min_ms=1000, max_ms=6000, linger_ms=300
    )
    save_limits(settings, mine)
    assert saved_limits(settings) == mine
    for key, value in (("limits/max_cps", "fast"), ("limits/min_ms", "nan"), ("limits/min_ms", "9000")):
        save_limits(settings, mine)
        settings.setValue(key, value)
        assert saved_limits(settings) == STYLE_GUIDE_LIMITS, (key, value)


def test_the_command_line_takes_the_same_limits(tmp_path: Path) -> None:
    captions = tmp_path / "talk.srt"
    captions.write_text(OK_BEFORE_A_STYLED_CUE, encoding="utf-8")
    passing = run_punctum_here("check", str(captions))
    assert passing.returncode == 0, passing.stderr
    failing = run_punctum_here("check", str(captions), "--min-duration", "3500")
    assert failing.returncode == 1
    assert "on screen 3.00 s (at least 3.5 s)" in failing.stdout
    for bad in (["--max-cps", "0"], ["--min-duration", "9000"], ["--min-gap", "-1"]):
        refused = run_punctum_here("check", str(captions), *bad)
        assert refused.returncode == 2, (bad, refused.stderr)
        assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr
    # A value under a limit's least is asked for as that limit takes it (-5 and 0 were told apart).
    for bad in ("-5", "0"):
        refused = run_punctum_here("check", str(captions), "--max-cps", bad)
        assert refused.stderr.strip().endswith("give a number above 0"), refused.stderr
    assert (
        run_punctum_here("check", str(captions), "--max-line", "0")
        .stderr.strip()
        .endswith("give a whole number of 1 or more")
    )


def test_captions_changed_on_disk_say_what_became_of_the_recut(tmp_path: Path, tiny_model: Path) -> None:
    folder = tmp_path / "talks"
    folder.mkdir()
    captions = folder / "talk.srt"
    captions.write_text(SAMPLE_SRT.read_text(encoding="utf-8"), encoding="utf-8")
    project = tmp_path / "talks.punctum"
    model = ["--model", str(tiny_model), "--no-audio"]
    assert run_punctum_here("batch", str(folder), "--project", str(project), *model).returncode == 0
    session = ReviewSession.open_project(project)
    try:
        assert session.recut() is not None
    finally:
        session.close()
    # A word corrected on disk: the recorded cut no longer fits the words; the batch says so,
    # where it counted the re-cut nowhere.
    captions.write_text(captions.read_text(encoding="utf-8").replace("hello", "hallo", 1), encoding="utf-8")
    again = run_punctum_here("batch", str(folder), "--project", str(project), *model)
    assert again.returncode == 0, again.stderr
    assert "the cues' re-cut not kept (their words changed)" in again.stdout + again.stderr


def test_a_re_cut_an_earlier_version_stored_without_its_cues_is_said_wherever_it_is_read(
    sample: Path, tmp_path: Path
) -> None:
    """A project of schema 8 recorded only that the cues were cut again: opened today, today's
    rules cut them (a cue end moved 30.940 -> 31.440 on export, without a word). The editor,
    status and export say so."""
    session = ReviewSession.open(sample / "sample.srt")
    assert not session.recut_unrecorded
    from app.services.analysis import AudioUse, analyse
    from app.services.model import Punctuator

    session.store_analysis(analyse(session.analysis_request(AudioUse.TEXT), Punctuator()))
    session.project.record(session.file_id, "recut", {"times": []})  # as schema 8 stored it
    project = session.project.path
    session.close()
    again = ReviewSession.open(sample / "sample.srt")
    try:
        assert again.recut_unrecorded and again.restored_decisions >= 1
    finally:
        again.close()
    status = run_punctum_here("status", str(project))
    assert status.returncode == 0 and "cut again by today's rules" in status.stdout + status.stderr
    exported = run_punctum_here("export", str(project), "--out", str(tmp_path / "out"))
    assert exported.returncode == 0
    assert "sample: note: re-cut by an earlier Punctum" in exported.stderr


#: A question and its answer too quick to part: one cue must hold both speakers.
QUESTION_AND_ANSWER = (
    "1\n00:00:01,000 --> 00:00:02,500\nReally? Yes, you can.\n\n"
    "2\n00:00:02,600 --> 00:00:04,000\nGood, thank you.\n"
)


def test_two_speakers_sharing_a_cue_each_start_a_line_with_the_dash_the_limits_ask_for(
    tmp_path: Path,
) -> None:
    """Style guides keep speakers apart, or mark each with a dash on its own line: an option of
    the limits, off by default; a re-cut cue keeps its dashes when the project is reopened."""
    captions = tmp_path / "talk.srt"
    captions.write_text(QUESTION_AND_ANSWER, encoding="utf-8")
    document = parse_document(captions.read_bytes(), "srt")
    plain = resegment(document, None, STYLE_GUIDE_LIMITS, "en").document
    assert plain.cues[0].text() == "Really?\nYes, you can."
    for dash, written in (("-", "-Really?\n-Yes, you can."), ("- ", "- Really?\n- Yes, you can.")):
        limits = dataclasses.replace(STYLE_GUIDE_LIMITS, speaker_dash=dash)
        assert resegment(document, None, limits, "en").document.cues[0].text() == written
    # A cue whose speakers the file marked itself is left as the file has it (no second dash).
    dashed = parse_document(QUESTION_AND_ANSWER.replace("Really?", "-Really?").encode(), "srt")
    limits = dataclasses.replace(STYLE_GUIDE_LIMITS, speaker_dash="-")
    assert resegment(dashed, None, limits, "en").document.cues[0].text() == "-Really? Yes, you can."
    session = ReviewSession.open(captions)
    session.limits = limits
    assert session.recut() is not None
    session.close()
    again = ReviewSession.open(captions)
    try:
        assert [cue.text() for cue in again.document.cues] == ["-Really?\n-Yes, you can.", "Good, thank you."]
    finally:
        again.close()
    cut = (CueCut(4, 1000, 2500, (1, 3), "-"),)
    assert decode(*encode(Recut(cut=cut))) == Recut(cut=cut)


def test_the_speaker_dash_is_an_option_on_the_command_line_and_in_settings(tmp_path: Path) -> None:
    captions = tmp_path / "talk.srt"
    captions.write_text(QUESTION_AND_ANSWER, encoding="utf-8")
    out = tmp_path / "out.srt"
    done = run_punctum_here(
        "punctuate",
        str(captions),
        "-o",
        str(out),
        "--apply",
        "none",
        "--resegment",
        "--speaker-dash",
        "hyphen",
    )
    assert done.returncode == 0, done.stderr
    assert "-Really?\n-Yes, you can." in out.read_text(encoding="utf-8")
    refused = run_punctum_here("punctuate", str(captions), "-o", str(out), "--recut", "--speaker-dash", "*")
    assert refused.returncode == 2 and "--speaker-dash" in refused.stderr
    settings = QSettings(str(tmp_path / "punctum.ini"), QSettings.Format.IniFormat)
    mine = dataclasses.replace(STYLE_GUIDE_LIMITS, speaker_dash="\u2013 ")
    save_limits(settings, mine)
    assert saved_limits(settings) == mine
    settings.setValue("limits/speaker_dash", "~~")
    assert saved_limits(settings) == STYLE_GUIDE_LIMITS
