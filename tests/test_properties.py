"""Property tests: timecodes and whole documents survive a write and a read."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.model import Document
from app.formats import parse_document, render_document, srt, vtt
from app.formats.common import make_cue
from app.formats.encoding import encode

MAX_SRT = (999 * 3600 + 59 * 60 + 59) * 1000 + 999


@given(st.integers(0, MAX_SRT), st.integers(0, MAX_SRT))
def test_srt_timecodes_round_trip(start: int, end: int) -> None:
    line = f"{srt.format_time(start)} --> {srt.format_time(end)}"
    assert srt.parse_timing(line) == (start, end, "")


@given(st.integers(0, 10**10), st.integers(0, 10**10))
def test_vtt_timecodes_round_trip(start: int, end: int) -> None:
    line = f"{vtt.format_time(start)} --> {vtt.format_time(end)} align:start"
    assert vtt.parse_timing(line) == (start, end, "align:start")


word = st.from_regex(r"[a-zA-Zéàüßçñ0-9][a-zA-Zéàüßçñ0-9'’-]{0,8}[a-zA-Zéàüßçñ0-9]|[a-zA-Z]", fullmatch=True)
mark = st.sampled_from(["", "", "", ",", ".", "?", "!", ":", ";", "...", '."', "?”"])
tag = st.sampled_from([("<i>", "</i>"), ("<b>", "</b>"), ('<font color="red">', "</font>"), ("{\\an8}", "")])


@st.composite
def cue_text(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        tokens = [draw(word) + draw(mark) for _ in range(draw(st.integers(1, 7)))]
        if draw(st.booleans()):
            opening, closing = draw(tag)
            tokens[0] = opening + tokens[0]
            tokens[-1] += closing
        lines.append(" ".join(tokens))
    return "\n".join(lines)


@st.composite
def documents(draw: st.DrawFn, format: str) -> Document:
    cues = []
    time = draw(st.integers(0, 10_000))
    for number in range(draw(st.integers(0, 6))):
        start = time + draw(st.integers(0, 5_000))
        end = start + draw(st.integers(1, 8_000))
        time = end
        cues.append(make_cue(number + 1, start, end, draw(cue_text())))
    return Document(cues, format)


def _content(document: Document) -> list[tuple[int, int, str, list[tuple[str, str, str]]]]:
    return [(c.start, c.end, c.text(), [(w.prefix, w.text, w.mark) for w in c.words]) for c in document.cues]


@settings(max_examples=100, deadline=None)
@given(documents("srt"))
def test_srt_write_then_read_gives_the_same_document(document: Document) -> None:
    again = parse_document(render_document(document).encode(), "srt")
    assert _content(again) == _content(document)
    assert [c.index for c in again.cues] == [c.index for c in document.cues]


@settings(max_examples=100, deadline=None)
@given(documents("vtt"))
def test_vtt_write_then_read_gives_the_same_document(document: Document) -> None:
    document.preamble = "WEBVTT\n\n"
    again = parse_document(render_document(document).encode(), "vtt")
    assert _content(again) == _content(document)


@settings(max_examples=60, deadline=None)
@given(
    documents("srt"), st.sampled_from(["utf-8", "utf-16-le", "cp1252"]), st.sampled_from(["\n", "\r\n", "\r"])
)
def test_encodings_and_line_endings_round_trip(document: Document, encoding: str, ending: str) -> None:
    text = render_document(document)
    try:
        data = encode(text, encoding, encoding.startswith("utf-16"), ending)
    except UnicodeEncodeError:
        return  # characters the legacy code page lacks
    again = parse_document(data, "srt")
    if encoding != "cp1252":  # a few legacy bytes cannot tell one code page from another
        assert _content(again) == _content(document)
    assert again.line_ending == ending or not document.cues
    assert encode(render_document(again), again.encoding, again.bom, again.line_ending) == data
