"""Re-cutting a punctuated document's cues at sentence ends (``core.resegment``), as a caption
editor sees the result: whole sentences per cue, nothing in the words changed, styled and
positioned cues where they were, and cues a viewer can read."""

from __future__ import annotations

import dataclasses
import itertools
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.checks import STYLE_GUIDE_LIMITS, visible_lines
from app.core.cue_segmentation import TRANSCRIPT_LIMITS, TimedWord, ends_sentence, plan_cues
from app.core.cut_checks import cut_checks
from app.core.model import Document
from app.core.resegment import (
    DESCRIPTION,
    DIALOGUE,
    POSITIONED,
    STYLED,
    TIMING,
    resegment,
)
from app.formats import FormatError, parse_document, read_document, render_document
from app.formats.encoding import encode
from tests.conftest import shared_data
from tests.corpus import caption_files


def _clock(millis: int, separator: str = ",") -> str:
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, fraction = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{separator}{fraction:03d}"


def _srt(cues: list[tuple[int, int, str]], newline: str = "\n") -> Document:
    blocks = [
        f"{n}\n{_clock(start)} --> {_clock(end)}\n{text}\n" for n, (start, end, text) in enumerate(cues, 1)
    ]
    return parse_document("\n".join(blocks).replace("\n", newline).encode(), "srt")


def _timed_fragments(
    fragments: list[str], word_ms: int = 300, pause_after: int = 0
) -> tuple[Document, list[tuple[int, int]]]:
    """An SRT of cues cut by the clock through ``fragments``' words, one word every ``word_ms``
    (a pause of ``pause_after`` ms after each sentence), and the words' heard times."""
    cues, times, clock = [], [], 0
    for fragment in fragments:
        start = clock
        for word in fragment.split():
            times.append((clock, clock + word_ms - 50))
            clock += word_ms + (pause_after if word[-1] in ".?!" else 0)
        cues.append((start, times[-1][1], fragment))
    return _srt(cues), times


def _words(text: str, file_format: str) -> list[tuple[str, str, str]]:
    """The words of a rendered file as read back: prefix, text and mark."""
    document = parse_document(text.encode(), file_format)
    return [(word.prefix, word.text, word.mark) for word in document.words()]


def _texts(document: Document) -> list[str]:
    return [cue.plain_text() for cue in document.cues]


TWO_SENTENCES = [
    "We walked down to",
    "the river early this",
    "morning with the dogs. The",
    "water was higher than",
    "any of us had",
    "ever seen it.",
]


def test_fragments_cut_by_the_clock_become_one_sentence_a_cue() -> None:
    document, times = _timed_fragments(TWO_SENTENCES)
    result = resegment(document, times)
    assert _texts(result.document) == [
        "We walked down to the river early this morning with the dogs.",
        "The water was higher than any of us had ever seen it.",
    ]
    assert (result.cues_before, result.cues_after, result.kept, result.estimated) == (6, 2, {}, False)
    # Each cue starts with its first word and the second keeps two frames from the first.
    first, second = result.document.cues
    assert (first.start, second.start) == (0, times[12][0])
    assert second.start - first.end >= STYLE_GUIDE_LIMITS.min_gap_ms
    assert cut_checks(document).sentence_ends == 1 and cut_checks(document).dangling_starts == 1
    after = cut_checks(result.document)
    assert (after.cues, after.sentence_ends, after.dangling_starts) == (2, 2, 0)
    # The input is not changed.
    assert _texts(document)[2] == "morning with the dogs. The" and len(document.cues) == 6


def test_a_long_sentence_is_split_at_its_comma_and_short_ones_share_a_cue() -> None:
    document, times = _timed_fragments(
        [
            "When the water finally went down",
            "again at the end of the week after",
            "the storm, every family in the village",
            "came out to help clean the streets.",
            "Yes. No. Maybe.",
        ],
        pause_after=400,
    )
    texts = _texts(resegment(document, times).document)
    assert texts[0].endswith("storm,")
    assert texts[1] == "every family in the village came out to help clean the streets."
    assert texts[2] == "Yes. No. Maybe."


def test_new_cues_keep_to_the_limits() -> None:
    sentences = [
        "It rained all night.",
        "By the morning the lane behind the farm had turned into a brown river of mud and stones,",
        "and the old tractor was stuck up to its axles in the middle of the yard.",
        "Nobody said anything.",
        "We just stood at the window and watched the water rise over the lowest step of the barn.",
    ]
    words = " ".join(sentences).split()
    fragments = [" ".join(words[n : n + 5]) for n in range(0, len(words), 5)]
    # Said at about 16 characters a second: every cue can be read at 17 where it stays up after
    # its words.
    document, times = _timed_fragments(fragments, word_ms=370, pause_after=300)
    cues = resegment(document, times).document.cues
    for cue, later in zip(cues, [*cues[1:], None], strict=True):
        lines = visible_lines(cue)
        assert len(lines) <= 2 and all(len(line) <= 42 for line in lines), lines
        assert 833 <= cue.duration <= 7000
        assert len("".join(lines)) <= 17 * cue.duration / 1000
        assert later is None or later.start - cue.end >= 84
    checks = cut_checks(resegment(document, times).document)
    assert (checks.over_lines, checks.over_duration, checks.over_speed, checks.short_gaps) == (0, 0, 0, 0)
    assert checks.sentence_ends >= 4


def test_one_long_word_may_go_over_a_limit_alone() -> None:
    document, times = _timed_fragments(["Pneumonoultramicroscopicsilicovolcanoconiosis-like-symptoms."])
    result = resegment(document, times)
    assert _texts(result.document) == ["Pneumonoultramicroscopicsilicovolcanoconiosis-like-symptoms."]
    assert cut_checks(result.document).over_lines == 0


STYLED_SRT = (
    "1\n00:00:01,000 --> 00:00:02,000\nso we went\n\n"
    "2\n00:00:02,000 --> 00:00:03,000\nhome. And then\n\n"
    "3\n00:00:03,000 --> 00:00:04,500\n<i>Who's there?</i>\n\n"
    "4\n00:00:04,600 --> 00:00:05,500\n{\\an8}Up here!\n\n"
    "5\n00:00:05,600 --> 00:00:06,400\n(laughing)\n\n"
    "6\n00:00:06,400 --> 00:00:06,450\n-Hi.\n-Hello.\n\n"
    '7\n00:00:06,500 --> 00:00:07,500\n"Très bien", dit-il\n\n'
    "8\n00:00:07,500 --> 00:00:09,000\nÇA VA. iPhone e.g. NASA.\n"
)


def test_words_marks_capitals_and_styling_stay_exactly_as_they_were() -> None:
    document = parse_document(STYLED_SRT.encode(), "srt")
    result = resegment(document, None)
    written = render_document(result.document)
    assert _words(written, "srt") == _words(STYLED_SRT, "srt")
    for styled in (
        "00:00:03,000 --> 00:00:04,500\n<i>Who's there?</i>\n",
        "{\\an8}Up here!",
        "(laughing)",
        "-Hi.\n-Hello.\n",
    ):
        assert styled in written
    # The styled cues are barriers: the plain cues either side are cut on their own. "And then"
    # alone would flash by in under half a second, so it stays with the sentence before it, as
    # it was.
    assert _texts(result.document)[:2] == ["so we went home. And then", "Who's there?"]
    # Two frames before the styled cue, though the cue it replaces ran right up to it.
    assert result.document.cues[0].end == 3000 - STYLE_GUIDE_LIMITS.min_gap_ms
    assert result.kept == {STYLED: 2, DESCRIPTION: 1, DIALOGUE: 1}
    assert _texts(result.document)[-1] == '"Très bien", dit-il ÇA VA. iPhone e.g. NASA.'
    # Numbered 1..N again, as the file was.
    assert [cue.index for cue in parse_document(written.encode(), "srt").cues] == list(range(1, 7))
    assert "\n\n7\n" not in written


def test_positioned_cues_and_vtt_identifiers() -> None:
    vtt = (
        "WEBVTT\n\nintro\n00:01.000 --> 00:02.000\nso we went\n\n"
        "00:02.000 --> 00:03.000\nhome. And\n\n"
        "top\n00:03.100 --> 00:04.000 line:0\nthen we ate\n\n"
        "NOTE kept where it was\n\n"
        "00:04.100 --> 00:05.000\nsome cake.\n\n"
        "outro\n00:05.000 --> 00:06.000\nThe end.\n"
    )
    result = resegment(parse_document(vtt.encode(), "vtt"), None)
    written = render_document(result.document)
    assert result.kept == {POSITIONED: 1}
    assert "top\n00:03.100 --> 00:04.000 line:0\nthen we ate\n\nNOTE kept where it was\n\n" in written
    assert "intro" not in written and "outro" not in written  # identifiers of cues cut afresh
    # New timing lines are written as the file writes them: no hours.
    assert "\n00:01.000 --> " in written
    assert _words(written, "vtt") == _words(vtt, "vtt")
    assert _texts(result.document)[-1] == "some cake. The end."


def test_a_cue_already_cut_as_planned_is_written_as_it_was_read() -> None:
    vtt = "WEBVTT\n\nintro\n00:01.000  -->  00:03.000\nWe went home.\n\n00:05.000 --> 00:07.000\nIt rained.\n"
    result = resegment(parse_document(vtt.encode(), "vtt"))
    assert render_document(result.document) == vtt
    assert result.kept == {} and result.document.changes_since_save == 0


def test_srt_numbers_follow_the_files_own_counting() -> None:
    cues = "00:00:01,000 --> 00:00:02,000\nso we\n\n00:00:02,000 --> 00:00:03,000\nwent home.\n"
    unnumbered = render_document(resegment(parse_document(cues.encode(), "srt")).document)
    assert unnumbered == "00:00:01,000 --> 00:00:03,000\nso we went home.\n"
    from_zero = "0\n" + cues.replace("\n\n", "\n\n1\n")
    assert render_document(resegment(parse_document(from_zero.encode(), "srt")).document).startswith("0\n")
    skipping = "3\n" + cues.replace("\n\n", "\n\n9\n") + "\n10\n00:00:03,000 --> 00:00:04,000\n<i>Bye.</i>\n"
    written = render_document(resegment(parse_document(skipping.encode(), "srt")).document)
    assert written.startswith("3\n") and "\n10\n00:00:03,000" in written


def test_line_endings_and_timing_style_are_the_documents_own() -> None:
    text = "1\r\n00:00:01.000 --> 00:00:02.000\r\nso we\r\n\r\n2\r\n00:00:02.000 --> 00:00:03.000\r\nwent home.\r\n"
    document = parse_document(text.encode(), "srt")
    result = resegment(document, None)
    data = encode(render_document(result.document), document.encoding, document.bom, document.line_ending)
    assert data == b"1\r\n00:00:01.000 --> 00:00:03.000\r\nso we went home.\r\n"


def test_without_times_each_word_is_estimated_within_its_own_cue() -> None:
    document = _srt([(1000, 2000, "so we went"), (2500, 4000, "home. And then"), (4000, 5000, "we slept.")])
    result = resegment(document, None)
    assert result.estimated
    bounds = [(cue.start, cue.end) for cue in document.cues for _ in cue.words]
    for (start, end), (cue_start, cue_end) in zip(result.word_times, bounds, strict=True):  # type: ignore[misc]
        assert cue_start <= start <= end <= cue_end
    # Two short sentences share a cue.
    assert _texts(result.document) == ["so we went home. And then we slept."]
    assert result.document.cues[0].start == 1000


def test_the_documents_own_word_times_win_over_heard_ones() -> None:
    document = _srt([(1000, 2000, "Hi."), (2000, 3000, "there")])  # one-word cues time their word
    result = resegment(document, [(5000, 6000), (7000, 8000)])
    assert result.word_times == [(1000, 2000), (2000, 3000)]
    assert not result.estimated


def test_overlapping_and_backwards_cues_keep_their_cut_and_nothing_new_overlaps() -> None:
    document = _srt(
        [
            (1000, 2000, "so we"),
            (2000, 3000, "went home."),
            (2500, 3500, "Then we"),  # overlaps the one before
            (5000, 4000, "ate some"),  # ends before it starts
            (6000, 7000, "cake. And"),
            (7000, 8000, "slept."),
        ]
    )
    result = resegment(document, None)
    assert result.kept == {TIMING: 3}
    cues = result.document.cues
    assert [(c.start, c.end) for c in cues[1:4]] == [(2000, 3000), (2500, 3500), (5000, 4000)]
    assert _texts(result.document)[0] == "so we" and _texts(result.document)[-1] == "cake. And slept."
    assert [w.text for w in result.document.words()] == [w.text for w in document.words()]


def test_heard_times_far_from_the_cues_stay_within_them() -> None:
    document, times = _timed_fragments(TWO_SENTENCES)
    shifted = [(start + 60_000, end + 60_000) for start, end in times]
    cues = resegment(document, shifted).document.cues
    assert cues[-1].end <= document.cues[-1].end


def test_plan_cues_for_transcription_is_unchanged_by_the_new_limits() -> None:
    words = [
        TimedWord(text, n * 200, n * 200 + 150) for n, text in enumerate(["Hi.", "I", "am", "here.", "Yes."])
    ]
    assert plan_cues(words) == plan_cues(words, TRANSCRIPT_LIMITS)
    assert [(cue.start, cue.end) for cue in plan_cues(words)] == [(0, 1000)]
    assert ends_sentence("here.", "Yes.") and not ends_sentence("e.g.", "apples")


def test_a_gap_wider_than_the_pauses_never_cuts_a_cue_to_nothing() -> None:
    """``--min-gap 5000`` on the sample wrote cues of 1 ms holding two lines, each pushed 5 s on
    from the one before: a gap is kept only where the speech leaves room, and a cue still lasts
    until its last word is (nearly) said and starts when its first word is."""
    import dataclasses

    from app.core.checks import STYLE_GUIDE_LIMITS

    words = [TimedWord(f"w{n}{'.' if n % 6 == 5 else ''}", n * 400, n * 400 + 350) for n in range(30)]
    wide = dataclasses.replace(STYLE_GUIDE_LIMITS, min_gap_ms=5000)
    cues = plan_cues(words, wide)
    assert [word for cue in cues for word in cue.words] == words
    for cue in cues:
        assert cue.start <= cue.words[0].start + 120 and cue.end >= cue.words[-1].end - 120, cue
    assert all(later.start >= cue.end for cue, later in itertools.pairwise(cues))


_VOCABULARY = ["we", "went", "Home", "e.g.", "the", "NASA", "river", "«oui»", "it's", "U.S."]
_MARKS = ["", "", "", ",", ".", "?", "!", "…"]


@st.composite
def _documents(draw: st.DrawFn) -> tuple[Document, list[tuple[int, int] | None] | None]:
    cues, clock = [], draw(st.integers(0, 2000))
    for _ in range(draw(st.integers(1, 12))):
        words = draw(
            st.lists(st.tuples(st.sampled_from(_VOCABULARY), st.sampled_from(_MARKS)), min_size=1, max_size=9)
        )
        duration = draw(st.sampled_from([draw(st.integers(1, 6000)), 0, -300]))  # odd times too
        text = " ".join(word + mark for word, mark in words)
        if draw(st.integers(0, 9)) == 0:
            text = f"<i>{text}</i>"
        cues.append((clock, max(0, clock + duration), text))
        clock = max(0, clock + duration + draw(st.sampled_from([0, 0, 1, 40, 84, 500, 3000, -200])))
    document = _srt(cues)
    times: list[tuple[int, int] | None] | None = None
    if draw(st.booleans()):
        times = []
        for _ in range(document.word_count):
            start = draw(st.integers(0, clock + 1000))
            times.append(draw(st.sampled_from([None, (start, start + draw(st.integers(-50, 900)))])))
    return document, times


@settings(max_examples=150, deadline=None)
@given(_documents())
def test_any_document_keeps_its_words_in_order_and_cues_apart(
    case: tuple[Document, list[tuple[int, int] | None] | None],
) -> None:
    document, times = case
    result = resegment(document, times)
    written = render_document(result.document)
    assert _words(written, "srt") == [(w.prefix, w.text, w.mark) for w in document.words()]
    kept = {(c.start, c.end, c.original_text) for c in document.cues}
    new = [(c.start, c.end, c.original_text) not in kept for c in result.document.cues]
    for (cue, is_new), (later, later_new) in itertools.pairwise(zip(result.document.cues, new, strict=True)):
        if is_new or later_new:  # cues kept as they were may overlap as they did
            assert later.start >= cue.end
            assert (cue.start < cue.end or not is_new) and (later.start < later.end or not later_new)
        if is_new and later_new:
            assert later.start - cue.end >= STYLE_GUIDE_LIMITS.min_gap_ms
    for index, span in enumerate(result.word_times):
        if span is not None and times is None:
            cue = document.cues[document.locate(index).cue]
            assert cue.start <= span[0] <= span[1] <= cue.end


def test_every_real_world_file_keeps_its_words_and_styled_cues() -> None:
    root = shared_data("subtitles")
    began = time.monotonic()
    checked = 0
    before = after = cut_checks(Document([], "srt"))
    problems: dict[str, str] = {}
    for path in caption_files(root):
        try:
            document = read_document(path)
        except FormatError:
            continue  # refused cleanly; the corpus test counts those
        result = resegment(document, None)
        written = render_document(result.document)
        again = (
            parse_document(written.encode(), document.format) if document.format != "txt" else result.document
        )
        checked += 1
        before, after = before + cut_checks(document), after + cut_checks(result.document)
        if [(w.prefix, w.text, w.mark) for w in again.words()] != [
            (w.prefix, w.text, w.mark) for w in document.words()
        ]:
            problems[str(path.relative_to(root))] = "words changed"
        shown = {(cue.start, cue.end, cue.text()) for cue in again.cues}
        for cue in document.cues:
            styled = cue.settings.strip() or any(isinstance(p, str) and p.strip() for p in cue.layout)
            if styled and cue.words and (cue.start, cue.end, cue.text()) not in shown:
                problems[str(path.relative_to(root))] = f"styled cue changed: {cue.text()!r}"
    assert checked >= 300
    assert problems == {}
    assert after.share_at_sentence_end > before.share_at_sentence_end
    assert after.dangling_starts <= before.dangling_starts
    assert time.monotonic() - began < 30
    print(f"re-cutting the real-world files: {before} -> {after}")


def test_srt_cues_stay_numbered_when_re_cut_a_second_time() -> None:
    """The editor re-cuts the same captions again after a decision: the cues the first re-cut
    numbered afresh have no number line of their own, and a new cue must still get one."""
    text = (
        "1\n00:00:01,000 --> 00:00:04,000\nso we went home and it rained all day long\n\n"
        "2\n00:00:04,000 --> 00:00:06,000\nthen we slept.\n"
    )
    first = resegment(parse_document(text.encode(), "srt")).document
    for cue in first.cues:  # a full stop accepted between the two re-cuts
        cue.words = [dataclasses.replace(w, mark=".") if w.text == "home" else w for w in cue.words]
    again = render_document(resegment(first).document)
    blocks = again.strip("\n").split("\n\n")
    assert len(blocks) > 1
    assert [block.split("\n")[0] for block in blocks] == [str(n) for n in range(1, len(blocks) + 1)]


def test_the_summary_counts_the_words_whose_times_were_estimated() -> None:
    """Media heard most of the words: the summary says how many were not, rather than that none
    were heard."""
    from app.services.captions_export import RecutReport

    document = _srt([(1000, 3000, "so we went"), (3000, 5000, "home. And then"), (5000, 6000, "we slept.")])
    heard = [
        (1000, 1400),
        (1500, 1900),
        (2000, 2400),
        (3000, 3400),
        None,
        (4000, 4400),
        (5000, 5400),
        (5500, 5900),
    ]
    result = resegment(document, heard)
    assert (result.estimated_words, result.cut_words) == (1, 8)
    told = RecutReport(
        cut_checks(document), cut_checks(result.document), result.estimated_words, result.cut_words, 7
    )
    assert told.summary().endswith("; times of 1 of 8 words estimated from their cues (not heard)")
    nothing_heard = resegment(document, None)
    assert (nothing_heard.estimated_words, nothing_heard.cut_words) == (8, 8)
    none = RecutReport(cut_checks(document), cut_checks(nothing_heard.document), 8, 8, 0)
    assert none.summary().endswith("; times estimated from the cues (no media heard the words)")


def test_an_answer_is_kept_apart_from_the_question_it_answers() -> None:
    """A dialogue's re-cut made "Many shops will print them for you. / Really?" and "Great. /
    Maybe I should get a digital camera too.": an answer joined to what it answers. After a
    question (or a sentence and a long pause) another speaker may start: a new cue where the
    limits allow, else a line of its own."""
    from app.core.checks import STYLE_GUIDE_LIMITS
    from app.core.cue_segmentation import line_words
    from app.core.weak_words import weak_words

    said = [
        "Do",
        "you",
        "print",
        "them",
        "yourself?",
        "Yes,",
        "at",
        "home.",
        "And",
        "the",
        "ink?",
        "It",
        "lasts",
        "for",
        "months.",
    ]
    words, clock = [], 0
    for text in said:
        words.append(TimedWord(text, clock, clock + 300))
        clock += 330 + (400 if text.endswith((".", "?")) else 0)
    cues = plan_cues(words, STYLE_GUIDE_LIMITS, weak=weak_words("en"), turns=True)
    for cue in cues:
        inside = [w.text for w in cue.words[:-1]]
        assert not any(text.endswith("?") for text in inside), [w.text for w in cue.words]
    # Where one cue must hold both, each starts its own line, though one line would hold them.
    assert line_words(["Really?", "Yes,", "you", "can."], STYLE_GUIDE_LIMITS, turns={0}) == [1, 3]
    assert line_words(["Really?", "Yes,", "you", "can."], STYLE_GUIDE_LIMITS) == [4]


def test_a_quick_sentence_shares_a_cue_rather_than_go_over_the_reading_speed() -> None:
    """Re-cut dialogues had more cues over 17 characters a second than their own cut (1 -> 6):
    a cue a little over cost less than any break, so a quick sentence got a cue of its own at
    18 cps where sharing one with the slower sentence after it reads at 14."""
    from app.core.weak_words import weak_words

    def timed(sentence: str, start: int, seconds: float) -> list[TimedWord]:
        texts = sentence.split()
        step = seconds * 1000 / len(texts)
        return [
            TimedWord(text, round(start + k * step), round(start + (k + 1) * step) - 20)
            for k, text in enumerate(texts)
        ]

    words = (
        timed("Many shops will print them for you.", 0, 1.9)
        + timed("That is a very good idea indeed.", 2000, 2.3)
        + timed("So we went home.", 6500, 1.5)
    )
    for cue in plan_cues(words, STYLE_GUIDE_LIMITS, weak=weak_words("en")):
        characters = len(" ".join(word.text for word in cue.words))
        assert characters * 1000 / (cue.end - cue.start) <= 17, [w.text for w in cue.words]
