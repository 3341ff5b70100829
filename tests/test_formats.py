"""Reading and writing caption files: words, styling, timings, encodings, round trips, errors."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from app.core import commands
from app.core.history import History
from app.core.model import Source, Suggestion
from app.formats import (
    FormatError,
    WriteError,
    parse_document,
    read_document,
    render_document,
    write_document,
)
from app.formats.encoding import encode

FIXTURE_NAMES = ["styled.srt", "youtube.vtt", "odd.srt", "transcript.txt"]


def words_of(document) -> list[str]:
    return [word.text for word in document.words()]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_untouched_files_write_back_byte_for_byte(fixtures: Path, tmp_path: Path, name: str) -> None:
    document = read_document(fixtures / name)
    out = tmp_path / name
    write_document(document, out)
    assert out.read_bytes() == (fixtures / name).read_bytes()


def test_styling_is_kept_and_never_counted_as_words(fixtures: Path) -> None:
    document = read_document(fixtures / "styled.srt")
    assert words_of(document) == (
        [
            "so",
            "this",
            "is",
            "the",
            "first",
            "line",
            "of",
            "captions",
            "tom",
            "jerry",
            "were",
            "there",
            "did",
            "you",
            "see",
            "it",
        ]
    )
    assert document.line_ending == "\r\n"
    assert document.cues[2].settings == "X1:40 X2:600 Y1:20 Y2:50"
    assert document.cues[0].original_text == "<i>so this is</i> the first\nline of {\\an8}captions"


def test_marks_land_inside_styling_and_timings_stay(fixtures: Path, tmp_path: Path) -> None:
    document = read_document(fixtures / "styled.srt")
    history = History(document)
    history.do(commands.set_mark(document, 2, ","))  # "is" sits before </i>
    history.do(commands.set_mark(document, 7, "."))
    history.do(commands.set_mark(document, 15, "?"))
    out = tmp_path / "out.srt"
    write_document(document, out)
    written = out.read_bytes().decode()
    assert "<i>so this is,</i> the first\r\nline of {\\an8}captions.\r\n" in written
    assert "<b>did</b> you see it?\r\n" in written
    original = (fixtures / "styled.srt").read_bytes().decode()
    timing_lines = [line for line in written.split("\r\n") if "-->" in line]
    assert timing_lines == [line for line in original.split("\r\n") if "-->" in line]


def test_vtt_inline_timestamps_become_word_timings(fixtures: Path) -> None:
    document = read_document(fixtures / "youtube.vtt")
    first = document.cues[0]
    assert [(w.text, w.start, w.end) for w in first.words] == [
        ("so", 500, 900),
        ("what", 900, 1200),
        ("is", 1200, 1500),
        ("this", 1500, 2000),
    ]
    assert first.identifier == "intro"
    assert first.settings == "align:start position:10%"
    assert words_of(document)[4:] == ["it", "is", "a", "test", "really"]
    assert document.cues[2].start == 3000  # mm:ss.ttt without hours
    assert "STYLE" in document.preamble


def test_vtt_keeps_notes_between_cues_and_styling_spans(fixtures: Path) -> None:
    document = read_document(fixtures / "youtube.vtt")
    history = History(document)
    history.do(commands.set_mark(document, 7, "."))
    history.do(commands.set_mark(document, 8, "!"))
    text = render_document(document)
    assert (
        "<v Ana>it is a test.</v>\n\nNOTE between cues\n\n00:03.000 --> 00:04.500\n<c.loud>really!</c>\n"
        in text
    )


def test_odd_srt_loads_with_warnings(fixtures: Path) -> None:
    document = read_document(fixtures / "odd.srt")
    assert [cue.index for cue in document.cues] == [1, None, 3, 4]
    assert document.cues[0].original_text == "a cue with\n\na blank line inside"
    assert document.cues[1].end == 3000
    warnings = " | ".join(document.warnings)
    for expected in ("no number", "zero duration", "overlaps", "ends before it starts"):
        assert expected in warnings


def test_plain_text_words_and_marks(fixtures: Path) -> None:
    document = read_document(fixtures / "transcript.txt")
    assert len(document.cues) == 2
    words = list(document.words())
    assert [w.text for w in words][:4] == ["So", "this", "is", "the"]
    assert words[7].mark == "."
    assert (words[-3].prefix, words[-3].text, words[-3].mark) == ('"¿', "Qué", '?",')
    assert "&" not in [w.text for w in words]


def test_french_spaced_marks_belong_to_the_word_before() -> None:
    document = parse_document(b"1\n00:00:01,000 --> 00:00:02,000\nvraiment ? oui !\n", "srt")
    assert [(w.text, w.mark) for w in document.words()] == [("vraiment", " ?"), ("oui", " !")]


def test_dialogue_dash_and_music_note_are_not_words() -> None:
    document = parse_document(b"1\n00:00:01,000 --> 00:00:02,000\n- hi there\n\xe2\x99\xaa la la\n", "srt")
    assert words_of(document) == ["hi", "there", "la", "la"]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_byte_order_marks_are_read_and_written_back(encoding: str, tmp_path: Path) -> None:
    text = "1\r\n00:00:01,000 --> 00:00:02,000\r\nçà et là\r\n"
    bom = {
        "utf-8": codecs.BOM_UTF8,
        "utf-16-le": codecs.BOM_UTF16_LE,
        "utf-16-be": codecs.BOM_UTF16_BE,
        "utf-32-le": codecs.BOM_UTF32_LE,
        "utf-32-be": codecs.BOM_UTF32_BE,
    }[encoding]
    data = bom + text.encode(encoding)
    source = tmp_path / "in.srt"
    source.write_bytes(data)
    document = read_document(source)
    assert (document.encoding, document.bom) == (encoding, True)
    assert words_of(document) == ["çà", "et", "là"]
    write_document(document, tmp_path / "out.srt")
    assert (tmp_path / "out.srt").read_bytes() == data


def test_legacy_encoding_is_detected_and_kept(tmp_path: Path) -> None:
    text = "1\n00:00:01,000 --> 00:00:02,000\nDéjà vu, c'était l'été à Noël ; où êtes-vous ?\n" * 3
    source = tmp_path / "in.srt"
    source.write_bytes(text.encode("cp1252"))
    document = read_document(source)
    assert "Déjà" in words_of(document)
    write_document(document, tmp_path / "out.srt")
    assert (tmp_path / "out.srt").read_bytes() == source.read_bytes()


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_line_endings_are_kept_or_changed_on_request(ending: str, tmp_path: Path) -> None:
    text = "WEBVTT\n\n00:01.000 --> 00:02.000\nhello\nworld\n".replace("\n", ending)
    source = tmp_path / "in.vtt"
    source.write_bytes(text.encode())
    document = read_document(source)
    assert document.line_ending == ending
    write_document(document, tmp_path / "same.vtt")
    assert (tmp_path / "same.vtt").read_bytes() == text.encode()
    write_document(document, tmp_path / "lf.vtt", line_ending="lf")
    assert b"\r" not in (tmp_path / "lf.vtt").read_bytes()


def test_writing_refuses_to_replace_the_input_unless_asked(fixtures: Path, tmp_path: Path) -> None:
    source = tmp_path / "in.srt"
    source.write_bytes((fixtures / "styled.srt").read_bytes())
    document = read_document(source)
    History(document).do(commands.set_mark(document, 0, ","))
    with pytest.raises(WriteError, match="input file"):
        write_document(document, source)
    assert source.read_bytes() == (fixtures / "styled.srt").read_bytes()
    write_document(document, source, replace_source=True)
    assert b"so, this" in source.read_bytes()
    assert not document.is_modified
    assert [p.name for p in tmp_path.iterdir()] == ["in.srt"]  # no temporary file left behind


def test_write_failure_leaves_the_old_file(tmp_path: Path, fixtures: Path) -> None:
    document = read_document(fixtures / "styled.srt")
    History(document).do(commands.set_mark(document, 0, "…"))
    target = tmp_path / "out.srt"
    target.write_bytes(b"previous")
    with pytest.raises(WriteError, match="cannot be written in ascii"):
        write_document(document, target, encoding="ascii")
    assert target.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["out.srt"]


def test_srt_converts_to_vtt_with_the_same_timings(fixtures: Path) -> None:
    document = read_document(fixtures / "styled.srt")
    text = render_document(document, "vtt")
    assert text.startswith("WEBVTT\n\n00:00:01.000 --> 00:00:03.500 line:0\n<i>so this is</i>")
    again = parse_document(text.encode(), "vtt")
    assert [(c.start, c.end) for c in again.cues] == [(c.start, c.end) for c in document.cues]
    assert words_of(again) == words_of(document)


def test_vtt_converts_to_srt_numbered(fixtures: Path) -> None:
    document = read_document(fixtures / "youtube.vtt")
    text = render_document(document, "srt")
    assert text.startswith("1\n00:00:00,500 --> 00:00:02,000\n")
    assert parse_document(text.encode(), "srt").cues[2].index == 3


def test_plain_text_cannot_become_timed_captions(fixtures: Path) -> None:
    with pytest.raises(WriteError, match="no timings"):
        render_document(read_document(fixtures / "transcript.txt"), "srt")


@pytest.mark.parametrize(
    ("data", "fmt", "line", "reason"),
    [
        (b"1\n00:00:01,000 --> 00:00:0x,000\nhi\n", "srt", 2, "unreadable timing line"),
        (b"1\n00:00:01,000 --> 00:00:02,000\nhi\n\n2\nno timing\n", "srt", 6, "no timing line"),
        (b"just some words\n", "srt", 1, "not SubRip"),
        (b"WEBVT\n\n00:01.000 --> 00:02.000\nhi\n", "vtt", 1, "WEBVTT"),
        (b"WEBVTT\n\n00:01.000 --> 00:61.000\nhi\n", "vtt", 3, "unreadable timing line"),
        (b"1\n00:00:01,000 --> 00:00:02,000\n\x00\x01\n", "srt", None, "binary"),
        (codecs.BOM_UTF8 + b"\xff\xfe bad", "srt", None, "not valid utf-8"),
    ],
)
def test_unreadable_input_names_the_line_and_reason(
    data: bytes, fmt: str, line: int | None, reason: str
) -> None:
    with pytest.raises(FormatError) as caught:
        parse_document(data, fmt, Path("x." + fmt))
    assert caught.value.line == line
    assert reason in str(caught.value)
    assert str(caught.value).startswith(f"x.{fmt}")


def test_unknown_extension_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="unsupported file type"):
        read_document(tmp_path / "a.stl")
    with pytest.raises(FormatError, match="No such file"):
        read_document(tmp_path / "missing.srt")
    with pytest.raises(FormatError, match="folder"):
        read_document(tmp_path / "d.srt") if (tmp_path / "d.srt").mkdir() is None else None


def test_empty_files_load_without_cues() -> None:
    assert parse_document(b"", "srt").cues == []
    assert parse_document(b"WEBVTT\n", "vtt").cues == []
    assert "no cues" in parse_document(b"\n\n", "srt").warnings[0]


def test_suggestion_gaps_survive_a_round_trip(fixtures: Path, tmp_path: Path) -> None:
    document = read_document(fixtures / "styled.srt")
    document.add_suggestions([Suggestion(1, 3, ",", 0.8, Source.MODEL)])
    History(document).do(commands.accept(document, 1))
    write_document(document, tmp_path / "out.srt")
    assert read_document(tmp_path / "out.srt").word(3).mark == ","


def test_encode_writes_no_bom_unless_asked() -> None:
    assert encode("a\n", "utf-16-le", False, "\r\n") == "a\r\n".encode("utf-16-le")


def test_srt_to_vtt_turns_positioning_into_cue_settings_and_drops_font_tags(fixtures: Path) -> None:
    document = read_document(fixtures / "styled.srt")
    cues = parse_document(render_document(document, "vtt").encode(), "vtt").cues
    # {\an8} (top centre) is VTT's "line:0"; a VTT player would show either tag as text.
    assert (cues[0].settings, cues[0].text()) == ("line:0", "<i>so this is</i> the first\nline of captions")
    assert (cues[1].settings, cues[1].text()) == ("", "tom &amp; jerry were there")
    assert "<b>did</b>" in cues[2].text()
    assert words_of(document) == [w.text for c in cues for w in c.words]
