"""Captions planned from recognised words: the cues and lines an editor would keep, and the files."""

from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.checks import CaptionLimits
from app.core.cue_segmentation import TRANSCRIPT_LIMITS, PlannedCue, TimedWord, plan_cues
from app.formats import parse_document
from app.formats.timings import read_timings
from app.formats.transcript import transcript_text, words_json

RULES = TRANSCRIPT_LIMITS


def timed(
    text: str, *, step: int = 300, length: int = 250, pauses: dict[int, int] | None = None
) -> list[TimedWord]:
    """The words of ``text`` spoken one every ``step`` ms; ``pauses`` adds silence before a word."""
    words, time = [], 0
    for index, token in enumerate(text.split()):
        time += (pauses or {}).get(index, 0)
        words.append(TimedWord(token, time, time + length))
        time += step
    return words


def line_text(line: tuple[TimedWord, ...]) -> str:
    return " ".join(word.text for word in line)


def cue_texts(cues: list[PlannedCue]) -> list[str]:
    return [" ".join(line_text(line) for line in cue.lines) for cue in cues]


def assert_good_captions(
    words: list[TimedWord], cues: list[PlannedCue], rules: CaptionLimits = RULES
) -> None:
    """What every caption file must keep to, whatever the words."""
    assert [word for cue in cues for word in cue.words] == words  # every word once, in order
    for number, cue in enumerate(cues):
        assert 1 <= len(cue.lines) <= rules.max_lines
        assert all(line for line in cue.lines)
        for line in cue.lines:
            assert len(line_text(line)) <= rules.max_line_chars or len(line) == 1
        assert cue.start == cue.words[0].start
        assert cue.end >= max(word.end for word in cue.words)
        if len(cue.words) > 1:
            assert cue.end - cue.start <= rules.max_ms
        following = cues[number + 1] if number + 1 < len(cues) else None
        if following is not None:
            assert cue.end <= following.start  # no overlap, in time order
        if cue.end - cue.start < rules.min_ms:
            assert following is not None and cue.end == following.start


LONG_RUN = (
    "so what we are going to do today is look at the way the model handles long runs of words "
    "without any punctuation at all and see what happens when it has to split them into cues "
    "that a person can actually read on a screen while the speaker keeps talking and talking "
    "about everything and nothing for minutes on end without ever stopping for breath"
)


def test_a_long_run_of_words_keeps_to_two_lines_of_42_characters() -> None:
    words = timed(LONG_RUN)
    cues = plan_cues(words)
    assert_good_captions(words, cues)
    assert max(len(line_text(line)) for cue in cues for line in cue.lines) <= 42
    assert max(len(cue.lines) for cue in cues) == 2


def test_no_cue_lasts_over_seven_seconds_of_slow_speech() -> None:
    words = timed("a b c d e f g h i j k l m n o p q r s t u v w x y z", step=900, length=800)
    cues = plan_cues(words)
    assert_good_captions(words, cues)
    assert len(cues) >= 4
    assert all(cue.end - cue.start <= 7000 for cue in cues)


def test_a_cue_ends_at_a_nearby_sentence_end() -> None:
    words = timed(
        "We went down to the old market early yesterday morning. "
        "Then we came home and cooked a big dinner for everyone."
    )
    cues = plan_cues(words)
    assert_good_captions(words, cues)
    assert cue_texts(cues) == [
        "We went down to the old market early yesterday morning.",
        "Then we came home and cooked a big dinner for everyone.",
    ]


def test_a_sentence_end_may_have_a_closing_quote_after_it() -> None:
    words = timed(
        "She looked at the crowd and said “we will never leave this town.” "
        "Nobody in the hall said a word for a long while after that."
    )
    cues = plan_cues(words)
    assert cues[0].words[-1].text == "town.”"


def test_a_cue_ends_at_a_long_pause() -> None:
    words = timed(LONG_RUN, pauses={12: 800})  # silence before "way"
    cues = plan_cues(words)
    assert_good_captions(words, cues)
    assert cues[0].words[-1].text == "the" and cues[1].words[0].text == "way"


def test_a_long_sentence_is_split_evenly_rather_than_leaving_a_scrap() -> None:
    words = timed(
        "the committee will meet again next week to go over the figures and decide "
        "what the town should spend on the new library."
    )
    cues = plan_cues(words)
    assert_good_captions(words, cues)
    assert len(cues) == 2
    assert min(len(text) for text in cue_texts(cues)) >= 30


def test_short_sentences_share_a_cue() -> None:
    words = timed("Hello. How are you? Fine.")
    assert cue_texts(plan_cues(words)) == ["Hello. How are you? Fine."]


def test_short_cues_are_extended_to_a_second_without_overlapping_the_next() -> None:
    rules = dataclasses.replace(RULES, max_line_chars=10, max_lines=1)
    words = [TimedWord("Stop!", 0, 300), TimedWord("Wait!", 600, 900)]
    cues = plan_cues(words, rules)
    assert [(cue.start, cue.end) for cue in cues] == [(0, 600), (600, 1600)]
    assert_good_captions(words, cues, rules)


def test_a_short_cue_before_a_silence_lasts_a_second() -> None:
    words = timed("Yes. I will be there at noon tomorrow, I promise.", pauses={1: 3000})
    cues = plan_cues(words)
    assert_good_captions(words, cues)
    assert cue_texts(cues)[0] == "Yes."
    assert (cues[0].start, cues[0].end) == (0, 1000)


def test_a_word_longer_than_a_line_stays_whole_on_a_line_of_its_own() -> None:
    long_word = "pneumonoultramicroscopicsilicovolcanoconiosis-related"
    words = timed(f"the doctor said it was {long_word} and nothing else at all")
    cues = plan_cues(words)
    assert_good_captions(words, cues)
    lines = [line for cue in cues for line in cue.lines]
    assert (words[5],) in lines
    assert all(len(line_text(line)) <= 42 for line in lines if len(line) > 1)


def test_the_two_lines_of_a_cue_are_balanced() -> None:
    words = timed("the weather this weekend looks much better than it did on Monday")
    (cue,) = plan_cues(words)
    first, second = (len(line_text(line)) for line in cue.lines)
    assert abs(first - second) <= 6


def test_a_line_breaks_after_a_comma_at_a_small_cost_in_balance() -> None:
    words = timed("If it rains tomorrow, we will stay at home and read")
    (cue,) = plan_cues(words)
    # 21 and 29 characters, rather than 24 and 26 with "we" left at the end of the top line.
    assert [line_text(line) for line in cue.lines] == [
        "If it rains tomorrow,",
        "we will stay at home and read",
    ]


def test_text_that_fits_stays_on_one_line() -> None:
    (cue,) = plan_cues(timed("Thank you all for coming tonight."))
    assert len(cue.lines) == 1


def test_no_words_give_no_cues() -> None:
    assert plan_cues([]) == []
    assert transcript_text([], "vtt") == "WEBVTT\n"
    assert transcript_text([], "srt") == ""


def test_rules_that_cannot_be_kept_are_refused() -> None:
    with pytest.raises(ValueError, match="shortest"):
        CaptionLimits(min_ms=8000)
    with pytest.raises(ValueError, match="one character"):
        CaptionLimits(max_line_chars=0)


def test_words_that_overlap_in_time_still_give_cues_that_do_not() -> None:
    rules = dataclasses.replace(RULES, max_line_chars=5, max_lines=1)
    words = [TimedWord("one", 0, 900), TimedWord("two", 500, 1200), TimedWord("three", 1100, 1300)]
    cues = plan_cues(words, rules)
    assert [word for cue in cues for word in cue.words] == words
    assert all(a.end <= b.start for a, b in itertools.pairwise(cues))
    assert all(cue.end >= cue.words[-1].end for cue in cues)


SPEECH = (
    "Good evening, everyone. Tonight we look at how the river has changed over the last hundred "
    "years, and what the people who live beside it think should happen next. First, the "
    "fishermen: they say the water is cleaner than it has been for decades. Is that true?"
)


def test_vtt_gives_every_word_its_start_time_when_read_back() -> None:
    words = timed(SPEECH, pauses={3: 700, 30: 400})
    cues = plan_cues(words)
    text = transcript_text(cues, "vtt")
    assert text.startswith("WEBVTT\n\n") and text.endswith("\n") and not text.endswith("\n\n")
    assert "\nGood <00:00:00.300>evening, <00:00:00.600>everyone.\n" in text
    document = parse_document(text.encode(), "vtt")
    assert document.warnings == []
    assert [(cue.start, cue.end) for cue in document.cues] == [(cue.start, cue.end) for cue in cues]
    read = [(w.prefix + w.text + w.mark, w.start) for cue in document.cues for w in cue.words]
    assert read == [(word.text, word.start) for word in words]
    untimed = [re.sub(r"<[^>]*>", "", cue.text()) for cue in document.cues]
    assert [text.split("\n") for text in untimed] == [[line_text(line) for line in cue.lines] for cue in cues]


def test_vtt_escapes_what_would_read_as_markup() -> None:
    words = [TimedWord("AT&T", 0, 400), TimedWord("<unk>", 500, 900), TimedWord("-->", 1000, 1200)]
    text = transcript_text(plan_cues(words), "vtt")
    assert "AT&amp;T <00:00:00.500>&lt;unk&gt; <00:00:01.000>--&gt;" in text
    assert len(parse_document(text.encode(), "vtt").cues) == 1


def test_srt_gives_the_same_words_and_timings_when_read_back() -> None:
    words = timed(SPEECH, pauses={3: 700})
    cues = plan_cues(words)
    text = transcript_text(cues, "srt")
    assert text.startswith("1\n00:00:00,000 --> ")
    document = parse_document(text.encode(), "srt")
    assert document.warnings == []
    assert [cue.index for cue in document.cues] == list(range(1, len(cues) + 1))
    assert [(cue.start, cue.end) for cue in document.cues] == [(cue.start, cue.end) for cue in cues]
    read = [w.prefix + w.text + w.mark for cue in document.cues for w in cue.words]
    assert read == [word.text for word in words]
    assert "<" not in text


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="ass"):
        transcript_text(plan_cues(timed("hello")), "ass")


def test_the_word_list_reads_back_with_the_same_times(tmp_path: Path) -> None:
    words = [*timed(SPEECH), TimedWord("Ça", 99_000, 99_400), TimedWord("va ?", 99_500, 99_900)]
    path = tmp_path / "talk.words.json"
    path.write_text(words_json(words), encoding="utf-8")
    read = read_timings(path)
    assert [(w.text, w.start, w.end) for w in read] == [(w.text, w.start, w.end) for w in words]


letters = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJéüß"), min_size=1, max_size=13)
marks = st.sampled_from(["", "", "", "", ",", ".", "?", "!", ";", ":", '."', "?”"])


@st.composite
def spoken_words(draw: st.DrawFn) -> list[TimedWord]:
    words, time = [], draw(st.integers(0, 5_000))
    for _ in range(draw(st.integers(0, 80))):
        time += draw(st.sampled_from([0, 0, 20, 80, 200, 450, 500, 900, 3_000]))
        length = draw(st.integers(0, 1_200) | st.just(9_000))  # now and then a word held past max_ms
        words.append(TimedWord(draw(letters) + draw(marks), time, time + length))
        time += length
    return words


@settings(max_examples=150, deadline=None)
@given(spoken_words())
def test_any_words_give_captions_that_keep_the_rules_and_read_back(words: list[TimedWord]) -> None:
    cues = plan_cues(words)
    assert_good_captions(words, cues)
    document = parse_document(transcript_text(cues, "vtt").encode(), "vtt") if cues else None
    if document is not None:
        assert [(c.start, c.end) for c in document.cues] == [(c.start, c.end) for c in cues]
        read = [(w.prefix + w.text + w.mark, w.start) for c in document.cues for w in c.words]
        assert read == [(word.text, word.start) for word in words]
