"""Re-breaking a cue's lines once the marks are in (``--rebreak``; Settings ▸ Re-break lines)."""

from __future__ import annotations

import re
from pathlib import Path

from app.core.line_breaks import LineChecks, line_checks, rebreak_document
from app.formats import parse_document, render_document
from app.services.captions_export import rebreak_summary
from tests.conftest import SAMPLE, run_punctum_here


def _srt(*cues: str) -> bytes:
    return "".join(
        f"{n}\n00:00:0{n},000 --> 00:00:0{n},900\n{text}\n\n" for n, text in enumerate(cues, start=1)
    ).encode()


def test_a_line_breaks_after_the_full_stop_and_nothing_else_moves() -> None:
    document = parse_document(
        _srt("We went to the park and then.\nSo we came home", "and then we went to the\npark. It rained"),
        "srt",
    )
    before = line_checks(document)
    assert rebreak_document(document) == 1
    assert (
        render_document(document)
        == _srt(
            "We went to the park and then.\nSo we came home", "and then we went to the park.\nIt rained"
        ).decode()
    )
    after = line_checks(document)
    assert (before.breaks_after_a_mark, after.breaks_after_a_mark) == (1, 2)


def test_a_long_line_is_broken_within_the_limits_and_never_after_an_article() -> None:
    document = parse_document(_srt("so we walked all the way to the old harbour and sat by the water"), "srt")
    rebreak_document(document)
    lines = document.cues[0].text().split("\n")
    assert len(lines) == 2 and all(len(line) <= 42 for line in lines)
    assert lines[0].split()[-1] not in {"the", "a", "to", "and", "by"}


def test_styling_positioning_and_glued_words_keep_their_lines() -> None:
    kept = (
        "<i>we went to the park and\nthen.</i> So we came home",  # a tag spanning the break
        "{\\an8}we went to the park and\nthen. So we came home",  # positioning
        "we went to the park and th<b>e\nn</b>. So we came",  # a word split by a tag
    )
    original = _srt(*kept)
    document = parse_document(original, "srt")
    assert rebreak_document(document) == 0
    assert render_document(document).encode() == original
    vtt = b"WEBVTT\n\n00:00:01.000 --> 00:00:03.000 line:0\nwe went to the park and\nthen. So we came home\n"
    positioned = parse_document(vtt, "vtt")
    assert rebreak_document(positioned) == 0 and render_document(positioned).encode() == vtt


def test_export_and_punctuate_rebreak_when_asked_and_say_what_changed(tmp_path: Path) -> None:
    plain, rebroken = tmp_path / "plain.srt", tmp_path / "rebroken.srt"
    source = str(SAMPLE / "sample.srt")
    assert run_punctum_here("punctuate", source, "-o", str(plain)).returncode == 0
    result = run_punctum_here("punctuate", source, "-o", str(rebroken), "--rebreak")
    assert result.returncode == 0, result.stderr
    # Told where export tells it, with what was written (stdout), with the totals compared.
    assert "lines re-broken: line breaks after a mark" in result.stdout, result.stdout
    assert re.search(r"after a mark \d+ of \d+ -> \d+ of \d+;", result.stdout), result.stdout
    over = re.search(r"cues over the line limits (\d+) -> 0", result.stdout)
    assert over is not None and int(over.group(1)) > 0, result.stdout
    assert plain.read_text() != rebroken.read_text()
    assert plain.read_text().split() == rebroken.read_text().split()  # the same words, marks and times
    assert max(len(line) for line in rebroken.read_text().splitlines()) <= 42


def test_batch_rebreak_is_kept_in_the_project_for_its_exports(tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SAMPLE / "sample.srt", folder / "talk.srt")
    outputs = {}
    for name, asked in (("plain", ()), ("rebroken", ("--rebreak",))):
        project = tmp_path / f"{name}.punctum"
        batch = run_punctum_here(
            "batch", str(folder), "--project", str(project), "--no-audio", "--apply", "all", *asked
        )
        assert batch.returncode == 0, batch.stderr
        exported = run_punctum_here("export", str(project), "--out", str(tmp_path / name))
        assert exported.returncode == 0, exported.stderr
        assert ("lines re-broken: line breaks after a mark" in exported.stdout) == bool(asked)
        outputs[name] = (tmp_path / name / "talk.srt").read_text()
    assert outputs["plain"] != outputs["rebroken"] and outputs["plain"].split() == outputs["rebroken"].split()
    assert max(len(line) for line in outputs["rebroken"].splitlines()) <= 42


def test_the_summary_counts_breaks_after_a_mark_out_of_each_total() -> None:
    before, after = LineChecks(0, 1, 1), LineChecks(0, 4, 1)
    # Not "100% -> 25%": one break after a mark of one, then one of four.
    assert rebreak_summary(before, after).startswith("line breaks after a mark 1 of 1 -> 1 of 4;")


def test_punctuate_to_stdout_tells_the_rebreak_on_stderr(tmp_path: Path) -> None:
    result = run_punctum_here("punctuate", str(SAMPLE / "sample.srt"), "--rebreak")
    assert result.returncode == 0, result.stderr
    assert "lines re-broken" not in result.stdout and "lines re-broken" in result.stderr


def test_a_sound_description_keeps_its_own_line() -> None:
    kept = ("(laughing)\nSo we went home and then we slept.", "and so it goes on.\n[MUSIC PLAYING].")
    original = _srt(*kept)
    document = parse_document(original, "srt")
    assert rebreak_document(document) == 0
    assert render_document(document).encode() == original


def _rebroken(text: str, language: str) -> list[str]:
    document = parse_document(_srt(text), "srt")
    document.language = language  # as the analysis found it
    rebreak_document(document)
    return document.cues[0].text().split("\n")


def test_each_language_has_its_own_words_a_line_should_not_end_on() -> None:
    # English "die" is a verb: the captions' break after it stands; German "die" is an article.
    assert _rebroken("I would not die\nof it", "en") == ["I would not die", "of it"]
    assert _rebroken("gestern sahen wir die\nkleine Katze im Garten", "de")[0].split()[-1] != "die"


def test_an_abbreviations_full_stop_is_no_place_for_a_break() -> None:
    lines = _rebroken("we all went out to cheer for the\nU.S. team at the stadium", "en")
    assert not lines[0].endswith("U.S."), lines
    assert line_checks(
        parse_document(_srt("we cheered for the U.S.\nteam at the stadium"), "srt")
    ) == LineChecks(0, 1, 0)


def test_a_name_is_not_split_across_lines_or_cues() -> None:
    import dataclasses

    from app.core.cue_segmentation import TRANSCRIPT_LIMITS, TimedWord, plan_cues

    # Without the rule, "Maple / Street": the balance of 31 and 19 characters beats 18 and 32.
    lines = _rebroken("Hello, and welcome to the Maple Street Repair Cafe.", "en")
    assert lines == ["Hello, and welcome", "to the Maple Street Repair Cafe."], lines
    # Cues of one short line: without the rule, "landed in New / York on a rainy".
    words = ["at", "last", "we", "all", "landed", "in", "New", "York", "on", "a", "rainy", "night", "in", "May"]  # fmt: skip
    timed = [TimedWord(word, 300 * n, 300 * n + 250) for n, word in enumerate(words)]
    cues = plan_cues(timed, dataclasses.replace(TRANSCRIPT_LIMITS, max_line_chars=20, max_lines=1))
    assert all(cue.words[-1].text != "New" for cue in cues), [[w.text for w in c.words] for c in cues]


def test_words_of_a_script_written_without_spaces_are_joined_without_one() -> None:
    """A re-cut joining two Japanese cues wrote "こんにちは 世界", and a Chinese line break taken
    out put a space inside a word ("没 有人"); Latin words stay a space apart."""
    import dataclasses

    from app.core.checks import STYLE_GUIDE_LIMITS
    from app.core.recut_cues import CueCut, built_cues

    # Chinese subtitles often set phrases a space apart inside a cue ("他能徒手抓住子弹  拦住疾速的火车"):
    # a re-cut joining such cues parts them the same way rather than running the phrases together.
    joins = [
        (("こんにちは", "世界"), 2, "こんにちは世界"),
        (("hello", "world"), 2, "hello world"),
        (
            ("他能徒手抓住子弹  拦住疾速的火车", "轻轻一跳就能飞跃高楼"),
            3,
            "他能徒手抓住子弹 拦住疾速的火车 轻轻一跳就能飞跃高楼",
        ),
    ]
    for cues, words, wanted in joins:
        (joined,) = built_cues(parse_document(_srt(*cues), "srt").cues, [CueCut(words, 1000, 2900, (words,))])
        assert joined.text() == wanted
    # A line break taken out: none in a word, a space where the cue parts its phrases with one.
    for text, wanted in (
        ("我们没\n有人知道", "我们没有人知道"),
        ("宇宙守护神  保护我们\n远离邪恶", "宇宙守护神  保护我们 远离邪恶"),
    ):
        document = parse_document(_srt(text), "srt")
        assert rebreak_document(document, dataclasses.replace(STYLE_GUIDE_LIMITS, max_lines=1)) == 1
        assert document.cues[0].text() == wanted


def test_a_line_is_not_broken_after_a_possessive_a_number_or_an_adjective_before_its_noun() -> None:
    """The re-cut broke "a good / printer", "more than seven / hundred photos", "on your /
    computer, but": each is read with the word after it, and another break within the limits
    exists."""
    from app.core.checks import STYLE_GUIDE_LIMITS
    from app.core.cue_segmentation import line_words

    def lines(text: str) -> list[str]:
        words, out = text.split(), []
        for count in line_words(words, STYLE_GUIDE_LIMITS, language="en"):
            out.append(" ".join(words[:count]))
            words = words[count:]
        return out

    assert lines("Yes, you can even buy a good printer and print them at home") == [
        "Yes, you can even buy a good printer",
        "and print them at home",
    ]
    assert lines("we took more than seven hundred photos on the trip last summer")[0].endswith("photos")
    assert lines("you can keep them on your computer, but it is nice to hold one")[0].endswith("computer,")
    assert not lines("it stood there for 12 years and nobody came to look at it")[0].endswith("12")
