"""SCC, the CEA-608 captions of US broadcast: read as a decoder shows them (pop-on, roll-up and
paint-on), written back with nothing but marks and capitals changed, every caption shown and
cleared in the frame it was, and what SCC cannot hold said per cue before it is written."""

from __future__ import annotations

import random
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from pycaption import SCCReader

from app.core.model import Document
from app.formats import cea608, parse_document, read_document, render_document
from app.formats.conversion import left_out
from tests.conftest import FIXTURES, run_punctum_here

#: Real files (``tests/fixtures/README.md``): pycaption's Spanish example (pop-on, codes sent once,
#: CRLF); ttconv's pop-on (fillers, a special character, mid-row italics), roll-up (two to four
#: rows, special and extended characters, a file without its last line end) and paint-on files.
#: And the sample's words as ASR captions: pop-on loaded before or after the caption shown, two
#: rows, mid-row italics, fillers, drop-frame timecodes, roll-up rows, a doubled music note.
SCC_FILES = [
    FIXTURES / name for name in ("spanish-pop-on.scc", "pop-on.scc", "roll-up.scc", "paint-on.scc", "asr.scc")
]
_MARKS = re.compile(r"[,.;:!?\u2026]")


def _shown(path_or_text: Path | str) -> list[tuple[int, int, str]]:
    """Each caption's start, end (ms) and words as pycaption reads them: another decoder."""
    text = path_or_text.read_text(encoding="utf-8") if isinstance(path_or_text, Path) else path_or_text
    captions = SCCReader().read(text.replace("\r\n", "\n")).get_captions("en-US")
    return [
        (round(c.start / 1000), round(c.end / 1000), " ".join(c.get_text().replace("\xa0", " ").split()))
        for c in captions
    ]


def _one_caption(codes: str) -> Document:
    """An SCC file of one line of ``codes`` at 00:00:01:00, the screen erased at 00:00:04:00."""
    text = f"Scenarist_SCC V1.0\n\n00:00:01:00\t{codes}\n\n00:00:04:00\t942c 942c\n"
    return parse_document(text.encode(), "scc")


def _words(text: str) -> str:
    return _MARKS.sub("", text).lower()


@pytest.mark.parametrize("path", SCC_FILES, ids=lambda p: p.name)
def test_an_scc_file_read_and_written_with_nothing_changed_is_the_same_bytes(path: Path) -> None:
    document = read_document(path)
    assert document.format == "scc" and document.cues
    data = path.read_bytes()
    assert render_document(document) == data.decode("utf-8").replace("\r\n", "\n")
    assert left_out(document, "scc") == []


@pytest.mark.parametrize("path", SCC_FILES[:2] + SCC_FILES[4:], ids=lambda p: p.name)
def test_pop_on_captions_read_as_another_decoder_shows_them(path: Path) -> None:
    ours = [
        (cue.start, " ".join(cue.text().replace("\xa0", " ").split())) for cue in read_document(path).cues
    ]
    theirs = [(start, text) for start, _, text in _shown(path)]
    # The same captions, shown from the same frame (pycaption starts a roll-up row at its
    # carriage return, Punctum where its first character comes: only pop-on starts compare).
    pop_on = [caption for caption in ours if caption[0] < 14_000] if path.name == "asr.scc" else ours
    assert pop_on == theirs[: len(pop_on)]


def test_roll_up_rows_and_paint_on_captions_are_cues_from_their_first_character() -> None:
    roll = read_document(FIXTURES / "roll-up.scc")
    assert [cue.text() for cue in roll.cues[:3]] == [
        ">>> HI.",
        "I'M KEVIN CUNNING AND AT",
        "INVESTOR'S BANK WE BELIEVE IN",
    ]
    # Each row until the next row comes; the row's first character six words into its line.
    assert [(cue.start, cue.end) for cue in roll.cues[:2]] == [(933, 2967), (2967, 4767)]
    assert roll.cues[8].text() == "ÁÉÓ¡"  # extended characters with no stand-ins before them
    paint = read_document(FIXTURES / "paint-on.scc")
    assert paint.cues[0].text() == "Lorem ipsum dolor sit amet,\nconsectetur adipiscing elit."
    assert [cue.start for cue in paint.cues] == [173774, 176309, 177144]


def test_with_nothing_applied_scc_comes_back_byte_for_byte(tmp_path: Path) -> None:
    for path in (FIXTURES / "asr.scc", FIXTURES / "roll-up.scc"):
        out = tmp_path / path.name
        done = run_punctum_here("punctuate", str(path), "-o", str(out), "--apply", "none")
        assert done.returncode == 0, done.stderr
        assert out.read_bytes() == path.read_bytes()


def test_with_every_mark_applied_only_marks_and_capitals_change_and_every_caption_keeps_its_frames(
    tmp_path: Path,
) -> None:
    path = FIXTURES / "asr.scc"
    out = tmp_path / "asr.scc"
    done = run_punctum_here("punctuate", str(path), "-o", str(out), "--apply", "all")
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr, done.stderr  # nothing moved, no row too wide
    before, after = _shown(path), _shown(out)
    assert [text for _, _, text in after] != [text for _, _, text in before]  # marks went in
    assert [(start, end, _words(text)) for start, end, text in after] == [
        (start, end, _words(text)) for start, end, text in before
    ]
    written = read_document(out)
    assert [(c.start, c.end) for c in written.cues] == [(c.start, c.end) for c in read_document(path).cues]
    assert written.cues[0].text().startswith("Hello")
    # A pop-on caption loaded ahead of its End Of Caption on the same line, one word longer now:
    # its line starts a frame earlier, so the caption is shown in the frame it was.
    assert "00:00:08;11\t94ae 94ae 9420 9420" in out.read_text(encoding="utf-8")


def test_marks_and_capitals_edited_anywhere_read_back_as_edited(tmp_path: Path) -> None:
    """Any marks and capitals a person gives, on every fixture: what is written reads back as that
    text, and every caption whose times moved is named before writing."""
    rng = random.Random(20261203)
    for path in SCC_FILES:
        document = read_document(path)
        for cue in document.cues:
            for k, word in enumerate(cue.words):
                mark = rng.choice(["", ",", ".", "?", word.mark, word.mark])
                text = word.text.capitalize() if rng.random() < 0.3 else word.text.lower()
                cue.words[k] = replace(word, mark=mark, text=text)
        written = parse_document(render_document(document).encode(), "scc")
        assert [c.text() for c in written.cues] == [c.text() for c in document.cues], path.name
        moved = {
            n
            for n, (a, b) in enumerate(zip(document.cues, written.cues, strict=True), 1)
            if (a.start, a.end) != (b.start, b.end)
        }
        said = {int(line.split(":")[0].split()[1]) for line in left_out(document, "scc") if " frame" in line}
        assert said == moved, path.name


def test_a_mark_after_a_doubled_code_leaves_the_code_one_character() -> None:
    # "music box♪": the note sent twice, as control codes are (a decoder ignores the copy).
    row = "9425 9425 94ad 94ad 9470 9470 6d75 73e9 e320 62ef f880 9137 9137"
    document = _one_caption(row)
    cue = document.cues[0]
    assert cue.text() == "music box♪"
    cue.words[-1] = replace(cue.words[-1], mark=",")
    written = render_document(document)
    assert f"{row} 2c80\n" in written  # the mark after the copy, not between the two
    assert parse_document(written.encode(), "scc").cues[0].text() == "music box♪,"


def test_what_scc_cannot_hold_is_said_per_cue_before_writing(tmp_path: Path) -> None:
    # A pop-on caption loaded and shown on a line that starts at the first frame: one word more
    # cannot start earlier, so the caption is shown a frame later, and that is said.
    document = read_document(FIXTURES / "spanish-pop-on.scc")
    first = document.cues[0]
    first.words[2] = replace(first.words[2], mark=",")
    assert "cue 1: shown 1 frame later" in left_out(document, "scc")
    # Marks that take a row past 32 columns.
    roll = read_document(FIXTURES / "roll-up.scc")
    row = roll.cues[3]
    for k, word in enumerate(row.words):
        row.words[k] = replace(word, mark=",")
    assert "cue 4: a row of 35 columns; CEA-608 shows 32" in left_out(roll, "scc")


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("hello\n", "bad.scc:1: no 'Scenarist_SCC V1.0' header: not SCC captions"),
        (
            "Scenarist_SCC V1.0\n\n00:00:01:00\t9420 9420 zz12\n",
            "bad.scc:3: 'zz12' is not an SCC caption word",
        ),
        ("Scenarist_SCC V1.0\n\n00:00:01:45\t9420\n", "bad.scc:3: SCC timecode 00:00:01:45 runs past"),
        ("Scenarist_SCC V1.0\n\nhello there\n", "bad.scc:3: unreadable SCC line 'hello there'"),
        (  # a pop-on caption loaded while a roll-up row is sent
            "Scenarist_SCC V1.0\n\n00:00:01:00\t9420 9420 c1c2 9425 9425 c3c4 9420 9420 c5c6 942f 942f\n",
            "bad.scc:3: two SCC captions are sent into two memories at once",
        ),
    ],
)
def test_a_malformed_scc_file_is_one_line_and_exit_3_and_nothing_is_written(
    content: str, said: str, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.scc"
    bad.write_text(content, encoding="utf-8")
    out = tmp_path / "out.scc"
    done = run_punctum_here("punctuate", str(bad), "-o", str(out))
    assert done.returncode == 3
    assert len(done.stderr.strip().splitlines()) == 1 and said in done.stderr, done.stderr
    assert not out.exists()


def test_scc_converts_to_and_from_the_other_formats_saying_what_it_leaves_out(tmp_path: Path) -> None:
    srt = tmp_path / "asr.srt"
    done = run_punctum_here("punctuate", str(FIXTURES / "asr.scc"), "-o", str(srt), "--apply", "none")
    assert done.returncode == 0, done.stderr
    assert "row positions have no place in SRT: left out" in done.stderr
    assert "cue 5: its mid-row style has no place in SRT: left out" in done.stderr
    converted = read_document(srt)
    assert converted.cues[0].text() == "hello and welcome to\nthe maple street"
    assert [(c.start, c.end) for c in converted.cues] == [
        (c.start, c.end) for c in read_document(FIXTURES / "asr.scc").cues
    ]
    # Into SCC, by pycaption's writer: pop-on captions whose words read back; rows wider than 32
    # columns are broken, and that is said.
    back = tmp_path / "again.scc"
    done = run_punctum_here("punctuate", str(srt), "-o", str(back), "--apply", "none")
    assert done.returncode == 0, done.stderr
    assert [text for _, _, text in _shown(back)] == [" ".join(c.text().split()) for c in converted.cues]
    sample = tmp_path / "sample.scc"
    done = run_punctum_here(
        "punctuate",
        str(FIXTURES.parent.parent / "resources" / "sample" / "sample.srt"),
        "-o",
        str(sample),
        "--apply",
        "none",
    )
    assert done.returncode == 0 and "is broken into rows of 32" in done.stderr, done.stderr
    # Each caption shown and cleared in its own frame, but the first: at 0.000 s it cannot be
    # loaded before it is shown, and that is said.
    moved = [line for line in done.stderr.splitlines() if " frame" in line]
    assert moved == ["punctum: warning: cue 1: shown 26 frames later"], moved
    source = read_document(FIXTURES.parent.parent / "resources" / "sample" / "sample.srt").cues
    written = read_document(sample).cues
    frames = [round((b.start - a.start) * 30 / 1001) for a, b in zip(source, written, strict=True)]
    assert frames[0] == 26 and all(abs(f) <= 1 for f in frames[1:])
    assert all(abs(b.end - a.end) * 30 / 1001 <= 1 for a, b in zip(source, written, strict=True))


def test_info_show_and_a_batch_take_scc(tiny_model: Path, tmp_path: Path) -> None:
    info = run_punctum_here("info", str(FIXTURES / "roll-up.scc"))
    assert info.returncode == 0 and "format:       SCC" in info.stdout and "cues:         16" in info.stdout
    shown = run_punctum_here("show", str(FIXTURES / "paint-on.scc"))
    assert shown.returncode == 0 and "Lorem ipsum dolor sit amet" in shown.stdout
    # The reference transcript's marks carried onto the captions' codes.
    carried = tmp_path / "carried.scc"
    reference = FIXTURES.parent.parent / "resources" / "sample" / "reference.txt"
    done = run_punctum_here("transfer", str(reference), str(FIXTURES / "asr.scc"), "-o", str(carried))
    assert done.returncode == 0, done.stderr
    assert read_document(carried).cues[0].text().startswith("Hello, and welcome to")
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(FIXTURES / "asr.scc", folder / "news.scc")
    project = tmp_path / "p.punctum"
    batch = run_punctum_here(
        "batch", str(folder), "--project", str(project), "--model", str(tiny_model), "--no-audio"
    )
    assert batch.returncode == 0, batch.stderr
    out = tmp_path / "out"
    exported = run_punctum_here("export", str(project), "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    written, read = _shown(out / "news.scc"), _shown(folder / "news.scc")
    assert [(s, e, _words(t)) for s, e, t in written] == [(s, e, _words(t)) for s, e, t in read]


def test_a_recut_scc_file_is_written_anew_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "recut.scc"
    done = run_punctum_here(
        "punctuate", str(FIXTURES / "asr.scc"), "-o", str(out), "--apply", "all", "--recut"
    )
    assert done.returncode == 0, done.stderr
    assert "written anew as pop-on SCC" in done.stderr
    words = " ".join(" ".join(cue.text().split()) for cue in read_document(FIXTURES / "asr.scc").cues)
    assert _words(" ".join(text for _, _, text in _shown(out))) == _words(words)


def test_subrip_tags_and_entities_become_scc_italics_and_characters_and_what_cannot_is_said() -> None:
    subrip = "1\n00:00:01,000 --> 00:00:03,000\nTom &amp; Jerry <i>rock</i> & roll…\n"
    document = parse_document(subrip.encode(), "srt")
    written = render_document(document, "scc")
    back = parse_document(written.encode(), "scc").cues[0]
    assert " ".join(back.text().split()) == "Tom & Jerry rock & roll..."
    assert "91ae" in written  # italics, as a mid-row code
    assert "cue 1: … has no place in SCC: written as '...'" in left_out(document, "scc")


def test_re_broken_rows_take_their_position_codes_along_and_hold_32_columns(tmp_path: Path) -> None:
    path = FIXTURES / "asr.scc"
    out = tmp_path / "rebroken.scc"
    done = run_punctum_here("punctuate", str(path), "-o", str(out), "--apply", "all", "--rebreak")
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr, done.stderr
    written = read_document(out)
    assert written.cues[0].text().split("\n") == ["Hello.", "And welcome to the Maple Street"]
    assert all(len(row) <= 32 for cue in written.cues for row in cue.text().split("\n"))
    before, after = _shown(path), _shown(out)
    assert [(s, e, _words(t)) for s, e, t in after] == [(s, e, _words(t)) for s, e, t in before]


def test_a_row_a_caption_did_not_have_gets_a_position_code_on_the_row_below() -> None:
    row = "9420 9420 94ae 94ae 94d0 94d0 68e5 ecec ef20 f468 e5f2 e520 e6f2 e9e5 6e64 942f 942f"
    document = _one_caption(row)
    cue = document.cues[0]
    assert cue.text() == "hello there friend"
    cue.words[1] = replace(cue.words[1], mark=",")
    cue.layout[cue.layout.index(" ", cue.layout.index(" ") + 1)] = "\n"  # "hello there,\nfriend"
    written = render_document(document)
    # After "there," a position code, sent twice as the file sends them, on row 15 under row 14.
    code = re.search(r"e52c (\w{4}) \1 e6f2", written)
    assert code is not None and cea608.pac_row(code.group(1)) == 15
    again = parse_document(written.encode(), "scc").cues[0]
    assert again.text() == "hello there,\nfriend"
    assert (again.start, again.end) == (cue.start, cue.end)


def test_check_holds_scc_rows_to_32_characters(tmp_path: Path) -> None:
    document = read_document(FIXTURES / "roll-up.scc")
    row = document.cues[3]
    for k, word in enumerate(row.words):
        row.words[k] = replace(word, mark=",")
    wide = tmp_path / "wide.scc"
    wide.write_text(render_document(document), encoding="utf-8")
    done = run_punctum_here("check", str(wide))
    assert done.returncode == 1
    assert any(line.split()[0] == "4" and "(limit 32)" in line for line in done.stdout.splitlines()), (
        done.stdout
    )


def test_the_editor_s_export_of_an_scc_file_says_what_writing_it_changed_on_screen(tmp_path: Path) -> None:
    from app.services.captions_export import export_captions

    document = read_document(FIXTURES / "spanish-pop-on.scc")
    first = document.cues[0]
    first.words[2] = replace(first.words[2], mark=",")
    exported = export_captions(document, tmp_path / "out.scc", "es")
    assert exported.summaries() == ["written: cue 1: shown 1 frame later"]
