"""The caption formats editors are handed beside SRT and WebVTT: ASS/SSA (fan and anime subtitles)
and YouTube's SBV, each written back with nothing but marks and capitals changed: cue times,
styles, positions, override tags and every other character as they were."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from app.formats import parse_document, read_document, render_document, write_document
from tests.conftest import FIXTURES, run_punctum_here, shared_data

#: The formats' odd corners, written for these tests: ASS with CRLF line ends, two styles, a
#: comment between dialogues, override tags before, inside and after words, a positioned sign,
#: an effect and a hard line break; SSA v4 with its Marked field and a soft line break; SBV with
#: two lines in a cue, a double blank line and an HTML tag.
ODD_CORNERS = [
    FIXTURES / "odd.ass",
    FIXTURES / "odd.ssa",
    FIXTURES / "youtube.sbv",
    FIXTURES / "odd.ttml",
    FIXTURES / "plain.dfxp",
]
#: What Punctum may change: marks and the case of letters.
_MARKS = re.compile(r"[,.;:!?\u2026]")


def _as_words(text: str) -> str:
    return _MARKS.sub("", text).lower()


@pytest.mark.parametrize("path", ODD_CORNERS, ids=lambda p: p.name)
def test_with_nothing_applied_each_format_comes_back_byte_for_byte(path: Path, tmp_path: Path) -> None:
    out = tmp_path / f"out{path.suffix}"
    done = run_punctum_here("punctuate", str(path), "-o", str(out), "--apply", "none")
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == path.read_bytes()


def test_real_sbv_files_come_back_byte_for_byte(tmp_path: Path) -> None:
    folder = shared_data("subtitles", "webvtt-py", "tests", "subtitles")
    for name in ("sample.sbv", "two_captions.sbv", "missing_caption_text.sbv"):
        document = read_document(folder / name)
        out = tmp_path / name
        write_document(document, out)
        assert out.read_bytes() == (folder / name).read_bytes(), name


@pytest.mark.parametrize("path", ODD_CORNERS, ids=lambda p: p.name)
def test_with_every_mark_applied_only_marks_and_capitals_change(path: Path, tmp_path: Path) -> None:
    out = tmp_path / f"out{path.suffix}"
    done = run_punctum_here("punctuate", str(path), "-o", str(out), "--apply", "all")
    assert done.returncode == 0, done.stderr
    before, after = path.read_bytes().decode(), out.read_bytes().decode()
    assert after != before  # the model put marks in
    assert _as_words(after) == _as_words(before)
    # Lines keep their ends and their order; an ASS line keeps its head (times, style, name,
    # margins, effect) and its override tags where they were.
    for was, now in zip(before.split("\n"), after.split("\n"), strict=True):
        if was.startswith("Dialogue:"):
            assert now.split(",", 9)[:9] == was.split(",", 9)[:9]
            assert re.findall(r"\{[^}]*\}|\\[Nnh]", now) == re.findall(r"\{[^}]*\}|\\[Nnh]", was)
    # A TTML file keeps every tag (paragraphs' times, regions, spans, line breaks) in its place.
    assert re.findall(r"<[^<>]*>", after) == re.findall(r"<[^<>]*>", before)


def test_an_ass_file_reads_its_dialogues_as_cues_and_leaves_comments_and_styles_alone() -> None:
    document = read_document(FIXTURES / "odd.ass")
    assert [(cue.start, cue.end) for cue in document.cues] == [
        (1000, 4200),
        (4500, 7000),
        (7100, 9900),
        (10000, 12000),
    ]
    first = document.cues[0]
    assert [w.text for w in first.words] == ["last", "week", "rose", "arrived", "from", "the", "north"]
    assert first.text().split("\n") == ["{\\i1}last week{\\i0} rose arrived", "from the north"]
    # A tag inside a word leaves it one word; a comment line is not a cue.
    assert [w.text for w in document.cues[2].words][-3:] == ["wro", "te", "back"]
    assert document.cues[2].words[-2].glued
    assert "translator note" not in " ".join(w.text for cue in document.cues for w in cue.words)
    soft = read_document(FIXTURES / "odd.ssa").cues[1]
    assert [w.text for w in soft.words][:4] == ["yes", "at", "home", "the"]  # "\n" parts words


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        (
            "bad.ass",
            (FIXTURES / "odd.ass").read_text().replace("0:00:04.50,0:00:07.00", "0:00:0x.50,0:00:07.00"),
            "bad.ass:17: unreadable time '0:00:0x.50' in an ASS/SSA Dialogue line",
        ),
        (
            "short.ass",
            (FIXTURES / "odd.ass")
            .read_text()
            .replace("Dialogue: 1,0:00:04.50,0:00:07.00,Sign,,0,0,0,,", "Dialogue: 1,0:00:04.50,"),
            "short.ass:17: an ASS/SSA Dialogue line of",
        ),
        ("plain.ass", "just some words\n", "plain.ass:1: no [Script Info] or [Events] section: not ASS/SSA"),
        (
            "bad.sbv",
            "0:00:00.500,0:00:02.750\nhello\n\n0:00:0x.100,0:00:05.000\nworld\n",
            "bad.sbv:4: unreadable SBV timing line '0:00:0x.100,0:00:05.000'",
        ),
        (
            "bad.ttml",
            (FIXTURES / "odd.ttml").read_text().replace('begin="6s"', 'begin="6x"'),
            "bad.ttml:20: unreadable time '6x' in a TTML paragraph",
        ),
        (
            "unclosed.ttml",
            (FIXTURES / "odd.ttml").read_text().replace("</tt:span> again", " again"),
            "unclosed.ttml:18: not well-formed TTML XML (mismatched tag)",
        ),
        (
            "untimed.dfxp",
            (FIXTURES / "plain.dfxp").read_text(encoding="utf-8-sig").replace(' begin="00:00:06.200"', ""),
            "untimed.dfxp:12: a TTML paragraph with no begin time",
        ),
        (
            "other.ttml",
            "<html><body><p>hello</p></body></html>\n",
            "other.ttml:1: a <html> where <tt> should be: not TTML captions",
        ),
        (
            "untimed.sbv",
            "0:00:00.500,0:00:02.750\nhello\n\nworld\n",
            "untimed.sbv:4: SBV text with no timing line before it",
        ),
    ],
)
def test_a_malformed_file_is_one_line_naming_the_format_and_line_and_nothing_is_written(
    name: str, content: str, said: str, tmp_path: Path
) -> None:
    bad = tmp_path / name
    bad.write_text(content, encoding="utf-8")
    out = tmp_path / f"out{bad.suffix}"
    done = run_punctum_here("punctuate", str(bad), "-o", str(out))
    assert done.returncode == 3
    assert len(done.stderr.strip().splitlines()) == 1 and said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()


def test_info_show_and_a_conversion_take_the_new_formats(tmp_path: Path) -> None:
    info = run_punctum_here("info", str(FIXTURES / "youtube.sbv"))
    assert info.returncode == 0 and "format:       SBV" in info.stdout and "cues:         3" in info.stdout
    shown = run_punctum_here("show", str(FIXTURES / "odd.ass"))
    assert shown.returncode == 0 and "last week" in shown.stdout
    # SBV to SRT and to ASS (written by pysubs2 with its default style): the same cues.
    for suffix in (".srt", ".ass", ".vtt"):
        out = tmp_path / f"talk{suffix}"
        done = run_punctum_here("punctuate", str(FIXTURES / "youtube.sbv"), "-o", str(out), "--apply", "none")
        assert done.returncode == 0, done.stderr
        converted = parse_document(out.read_bytes(), suffix[1:])
        assert [(c.start, c.end) for c in converted.cues] == [(500, 2750), (3100, 5000), (5200, 7900)]
        assert [w.text for c in converted.cues for w in c.words][:3] == ["so", "here", "is"]


def test_a_folder_of_ass_and_sbv_files_batches_and_exports_in_each_ones_format(
    tiny_model: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(FIXTURES / "odd.ass", folder / "episode.ass")
    shutil.copy(FIXTURES / "youtube.sbv", folder / "vlog.sbv")
    project = tmp_path / "p.punctum"
    batch = run_punctum_here(
        "batch", str(folder), "--project", str(project), "--model", str(tiny_model), "--no-audio"
    )
    assert batch.returncode == 0, batch.stderr
    assert f"{project}: 2 processed, 0 failed" in batch.stdout
    out = tmp_path / "out"
    exported = run_punctum_here("export", str(project), "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    # Nothing decided: export writes the sentence starts' capitals (as shown) and nothing else.
    for name in ("episode.ass", "vlog.sbv"):
        written, read = (out / name).read_text(encoding="utf-8"), (folder / name).read_text(encoding="utf-8")
        assert written != read and _as_words(written) == _as_words(read), name
    as_srt = run_punctum_here("export", str(project), "--out", str(tmp_path / "srt"), "--format", "srt")
    assert as_srt.returncode == 0, as_srt.stderr
    assert sorted(p.name for p in (tmp_path / "srt").iterdir()) == ["episode.srt", "vlog.srt"]


def test_an_ass_recut_writes_each_new_cue_as_a_copy_of_the_dialogue_before_it(tmp_path: Path) -> None:
    """A cue a re-cut makes has no line of its own: it takes the style, name and margins of the
    dialogue its words came from, with its own times, and the file still reads as ASS."""
    head = (FIXTURES / "odd.ass").read_text(encoding="utf-8").split("Dialogue:")[0]
    lines = [
        "Dialogue: 0,0:00:01.00,0:00:03.00,Default,Ann,0,0,0,,so let us begin with the first one and",
        "Dialogue: 0,0:00:03.00,0:00:06.00,Default,Ann,0,0,0,,then we will see what happens next ok",
        "Dialogue: 0,0:00:06.00,0:00:09.00,Default,Ann,0,0,0,,so what do you think about that",
    ]
    captions = tmp_path / "run.ass"
    captions.write_text(head + "\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.ass"
    done = run_punctum_here("punctuate", str(captions), "-o", str(out), "--apply", "all", "--recut")
    assert done.returncode == 0, done.stderr
    written = out.read_text(encoding="utf-8")
    assert written.startswith(head)
    dialogues = [line for line in written.splitlines() if line.startswith("Dialogue:")]
    assert 1 <= len(dialogues) < 3
    assert all(",Default,Ann,0,0,0,," in line for line in dialogues)
    document = read_document(out)
    assert document.cues[0].start == 1000 and document.cues[-1].end >= 9000
    assert _as_words(" ".join(w.text for c in document.cues for w in c.words)) == _as_words(
        " ".join(line.split(",,", 1)[1] for line in lines)
    )


def test_a_conversion_between_ass_and_subrip_turns_the_tags_into_the_other_formats(tmp_path: Path) -> None:
    """ASS override tags shown as text by SubRip players, or SubRip's <i> by ASS renderers, would
    reach the viewer: pysubs2 converts what the other format can hold and leaves out the rest."""
    as_srt = tmp_path / "episode.srt"
    done = run_punctum_here("punctuate", str(FIXTURES / "odd.ass"), "-o", str(as_srt), "--apply", "none")
    assert done.returncode == 0, done.stderr
    written = as_srt.read_text(encoding="utf-8")
    # Said cue by cue before it is written (issue: "say what was changed, per cue").
    assert "warning: cue 2: {\\an8\\pos(960,80)} has no place in SRT: left out" in done.stderr
    assert "warning: 1 Comment line has no place in SRT: left out" in done.stderr
    assert "<i>last week</i> rose arrived\nfrom the north" in written
    assert "{" not in written and "\\N" not in written and "translator note" not in written
    assert len(parse_document(written.encode(), "srt").cues) == 4
    as_ass = tmp_path / "styled.ass"
    done = run_punctum_here("punctuate", str(FIXTURES / "styled.srt"), "-o", str(as_ass), "--apply", "none")
    assert done.returncode == 0, done.stderr
    assert "{\\i1}" in as_ass.read_text(encoding="utf-8") and "<i>" not in as_ass.read_text(encoding="utf-8")


def test_a_ttml_file_reads_its_paragraphs_in_the_document_s_own_time() -> None:
    """Frames at the document's rate, ticks, durations and a division's own begin all place a
    paragraph; a line break is a line, the file's own indentation only spacing."""
    document = read_document(FIXTURES / "odd.ttml")
    assert [(cue.start, cue.end) for cue in document.cues] == [
        (1000, 3480),  # 00:00:02:12 at 25 frames a second, inside a division that begins at 1 s
        (3750, 6250),  # 27,500,000 ticks at 10,000,000 a second, for 25,000,000
        (7000, 9500),
        (10000, 12000),
        (12200, 14000),
        (14000, 15000),  # 350 to 375 frames
    ]
    first = document.cues[0].text()
    assert first == "good evening and welcome\nto the news at six"
    assert [w.text for w in document.cues[3].words][:3] == ["fish", "chips", "were"]
    assert "\n" not in document.cues[3].text()  # pretty-printed, not broken into lines
    wonderful = document.cues[2].words
    assert [w.text for w in wonderful][3:5] == ["won", "der"] and wonderful[4].glued


def test_a_ttml_recut_writes_each_new_cue_as_a_copy_of_the_paragraph_its_words_came_from(
    tmp_path: Path,
) -> None:
    text = (FIXTURES / "plain.dfxp").read_text(encoding="utf-8-sig")
    long = (
        '<p begin="00:00:00.500" end="00:00:12.000" style="s1">so let us begin with the first one and then we'
        " will see what happens next so what do you think about that one and the one after it</p>"
    )
    head = text.partition("<p ")[0]
    captions = tmp_path / "long.ttml"
    captions.write_text(head + long + "\n</div>\n</body>\n</tt>\n", encoding="utf-8")
    out = tmp_path / "out.ttml"
    done = run_punctum_here("punctuate", str(captions), "-o", str(out), "--apply", "all", "--recut")
    assert done.returncode == 0, done.stderr
    written = out.read_text(encoding="utf-8")
    document = read_document(out)
    assert len(document.cues) > 1
    assert written.count('style="s1"') == len(document.cues)  # every paragraph keeps its style
    assert written.startswith(head) and written.endswith("</p>\n</div>\n</body>\n</tt>\n")
    assert document.cues[0].start == 500 and document.cues[-1].end <= 12000


def test_ttml_converts_to_and_from_the_other_formats(tmp_path: Path) -> None:
    """Spans and regions have no place in SubRip: the words, marks and line breaks go, entities
    as characters; SubRip's italics reach TTML as a style."""
    as_srt = tmp_path / "news.srt"
    done = run_punctum_here("punctuate", str(FIXTURES / "odd.ttml"), "-o", str(as_srt), "--apply", "none")
    assert done.returncode == 0, done.stderr
    written = as_srt.read_text(encoding="utf-8")
    said = 'warning: cue 3: region="top", tts:textAlign="center", 1 styled span has no place in SRT: left out'
    assert said in done.stderr
    assert "it was a wonderful sight\nsaid one neighbour" in written.replace("\r", "")
    assert "fish & chips were sold on the bridge by the hour" in written and "<" not in written
    as_ttml = tmp_path / "styled.ttml"
    done = run_punctum_here("punctuate", str(FIXTURES / "styled.srt"), "-o", str(as_ttml), "--apply", "none")
    assert done.returncode == 0, done.stderr
    converted = as_ttml.read_text(encoding="utf-8")
    assert 'tts:fontStyle="italic">so this is</span>' in converted and "<i>" not in converted
    assert read_document(as_ttml).cues[0].text().endswith("the first\nline of captions")


def test_a_file_of_one_long_cue_re_cut_writes_every_new_cue_in_its_style(tmp_path: Path) -> None:
    """Every cue of such a file is new after a re-cut: the ASS writer found no dialogue line to copy
    and stopped with a traceback; each new cue now copies the line its words came from."""
    head = (FIXTURES / "odd.ass").read_text(encoding="utf-8").split("Dialogue:")[0]
    line = (
        "Dialogue: 0,0:00:01.00,0:00:12.00,Sign,Ann,0,0,0,,so let us begin with the first one and then"
        " we will see what happens next so what do you think about that one and the one after it"
    )
    captions = tmp_path / "one.ass"
    captions.write_text(head + line + "\n", encoding="utf-8")
    out = tmp_path / "out.ass"
    done = run_punctum_here("punctuate", str(captions), "-o", str(out), "--apply", "all", "--recut")
    assert done.returncode == 0, done.stderr
    dialogues = [row for row in out.read_text(encoding="utf-8").splitlines() if row.startswith("Dialogue:")]
    assert len(dialogues) > 1 and all(",Sign,Ann,0,0,0,," in row for row in dialogues)


def test_the_editor_s_export_into_another_format_says_what_it_left_out(tmp_path: Path) -> None:
    from app.services.captions_export import export_captions

    document = read_document(FIXTURES / "odd.ttml")
    kept = export_captions(document, tmp_path / "same.ttml", "en")
    assert kept.left_out == () and not kept.summaries()
    converted = export_captions(document, tmp_path / "other.srt", "en")
    assert len(converted.left_out) == 6
    assert converted.summaries() == [
        'converted: cue 1: region="bottom" has no place in SRT: left out; cue 2: region="bottom", 3 styled'
        ' spans has no place in SRT: left out; cue 3: region="top", tts:textAlign="center", 1 styled span'
        " has no place in SRT: left out (and 3 more)"
    ]


def test_entities_of_subrip_and_webvtt_stay_the_characters_they_are_in_ttml() -> None:
    webvtt = "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nTom &amp; Jerry&nbsp;rock &lt;3\n"
    written = render_document(parse_document(webvtt.encode(), "vtt"), "ttml")
    assert "&amp;amp;" not in written and "&amp;lt;" not in written
    back = parse_document(written.encode(), "ttml")
    assert render_document(back, "srt").split("\n")[2] == "Tom & Jerry\xa0rock <3"


def test_a_ttml_recut_inside_a_div_with_its_own_begin_times_new_paragraphs_from_it(tmp_path: Path) -> None:
    text = (FIXTURES / "plain.dfxp").read_text(encoding="utf-8-sig")
    head = re.sub(r"<div([^>]*)>", r'<div\1 begin="10s">', text.partition("<p ")[0], count=1)
    long = (
        '<p begin="00:00:00.500" end="00:00:12.000">so let us begin with the first one and then we'
        " will see what happens next so what do you think about that one and the one after it</p>"
    )
    captions = tmp_path / "later.ttml"
    captions.write_text(head + long + "\n</div>\n</body>\n</tt>\n", encoding="utf-8")
    assert [(c.start, c.end) for c in read_document(captions).cues] == [(10_500, 22_000)]
    out = tmp_path / "out.ttml"
    done = run_punctum_here("punctuate", str(captions), "-o", str(out), "--apply", "all", "--recut")
    assert done.returncode == 0, done.stderr
    document = read_document(out)
    assert len(document.cues) > 1
    assert document.cues[0].start == 10_500 and document.cues[-1].end <= 22_000
    assert 'begin="00:00:00.500"' in out.read_text(encoding="utf-8")  # in the div's own time


def test_a_ttml_line_break_spelt_as_the_file_spells_it_is_a_line_to_re_break(tmp_path: Path) -> None:
    text = (FIXTURES / "plain.dfxp").read_text(encoding="utf-8-sig")
    paragraph = '<p begin="00:00:00.500" end="00:00:06.000">so we went to the park and then<br />so we came home late</p>'
    captions = tmp_path / "spaced.ttml"
    captions.write_text(text.partition("<p ")[0] + paragraph + "\n</div>\n</body>\n</tt>\n", encoding="utf-8")
    assert read_document(captions).cues[0].text().split("\n") == [
        "so we went to the park and then",
        "so we came home late",
    ]
    kept = tmp_path / "kept.ttml"
    assert run_punctum_here("punctuate", str(captions), "-o", str(kept), "--apply", "none").returncode == 0
    assert kept.read_bytes() == captions.read_bytes()
    out = tmp_path / "out.ttml"
    done = run_punctum_here("punctuate", str(captions), "-o", str(out), "--apply", "all", "--rebreak")
    assert done.returncode == 0, done.stderr
    written = out.read_text(encoding="utf-8")
    assert "park,<br />and then" in written and "<br/>" not in written.partition("<p ")[2]
