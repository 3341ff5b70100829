"""Reference transfer: the hard cases of aligning ASR words to a human transcript."""

from __future__ import annotations

import json
import random
from pathlib import Path

from app.align.alignment import align
from app.align.normalize import tokens
from app.align.transfer import MEDIUM_CONFIDENCE, NEITHER_NEIGHBOUR, transfer
from app.core.model import Casing, Word
from app.formats.cuetext import tokenize
from tests.test_cli import punctum


def words(text: str) -> list[Word]:
    return tokenize(text, 0, 0)[0]


def carried(captions: str, reference: str, language: str = "en") -> dict[str, str]:
    """Caption word (with its position) -> carried mark, e.g. {'3:home': '.'}."""
    caption_words = words(captions)
    result = transfer(caption_words, words(reference), language)
    return {f"{s.gap}:{caption_words[s.gap].text}": s.mark for s in result.suggestions if s.casing is None}


def test_normalised_forms() -> None:
    assert tokens("Don’t") == tokens("dont") == ("dont",)
    assert tokens("high-functioning") == ("high", "functioning")
    assert tokens("75") == ("seventy", "five")
    assert tokens("1990") == ("nineteen", "ninety")
    assert tokens("3rd") == ("third",)
    assert tokens("50%") == ("fifty", "percent")
    assert tokens("10,000") == ("ten", "thousand")
    assert tokens("75", "de") == ("fünfundsiebzig",)
    assert tokens("--") == ()


def test_plain_transfer_puts_each_mark_after_its_word() -> None:
    assert carried("so what is this it works", "So, what is this? It works.") == {
        "0:so": ",",
        "3:this": "?",
        "5:works": ".",
    }


def test_misrecognised_word_between_two_marks() -> None:
    caption_words = words("yes rose we will")
    result = transfer(caption_words, words("Yes, Rosa. We will."), "en")
    marks = {s.gap: (s.mark, s.confidence) for s in result.suggestions if s.casing is None}
    assert marks[0] == (",", MEDIUM_CONFIDENCE)  # "yes" right, "rosa" misheard
    assert marks[1] == (".", MEDIUM_CONFIDENCE)  # "rosa" misheard, "we" right
    assert marks[3][0] == "."
    assert result.alignment is not None
    assert result.alignment.substitutions == 1


def test_mark_of_a_word_wrong_on_both_sides_is_not_carried() -> None:
    result = transfer(words("we saw rose tea and left"), words("We saw Rosa. Then we left."), "en")
    assert result.report["marks"]["skipped"] == {NEITHER_NEIGHBOUR: 1}  # type: ignore[index]


def test_numbers_as_digits_or_words() -> None:
    assert carried(
        "i paid seventy five dollars it cost a hundred then", "I paid 75 dollars. It cost 100, then."
    ) == {
        "4:dollars": ".",
        "8:hundred": ",",
        "9:then": ".",
    }
    assert carried("it was 75 years ago", "It was seventy-five years, ago.") == {"3:years": ",", "4:ago": "."}


def test_mark_at_a_deleted_word_goes_before_the_next_recognised_word() -> None:
    assert carried("we left then we ate", "We left early. Then we ate.") == {"1:left": ".", "4:ate": "."}


def test_inserted_fillers_do_not_pull_marks() -> None:
    assert carried("so um we uh went home uh it rained", "So, we went home. It rained.") == {
        "0:so": ",",
        "5:home": ".",
        "8:rained": ".",
    }


def test_reference_longer_than_the_captions() -> None:
    reference = "First we ate. Then, after a while, we went to the park. Later it rained hard."
    assert carried("after a while we went to the park", reference) == {"2:while": ",", "7:park": "."}


def test_captions_longer_than_the_reference() -> None:
    captions = "hello there after a while we went to the park and then it rained all day long"
    got = carried(captions, "After a while, we went to the park.")
    assert got == {"4:while": ",", "9:park": "."}


def test_capitals_of_sentence_starts_and_names_come_across() -> None:
    caption_words = words("we met anna in paris it was fun")
    result = transfer(caption_words, words("We met Anna in Paris. It was fun."), "en")
    casing = {caption_words[s.gap].text: s.casing for s in result.suggestions if s.casing is not None}
    assert casing == {
        "we": Casing.CAPITALISED,
        "anna": Casing.CAPITALISED,
        "paris": Casing.CAPITALISED,
        "it": Casing.CAPITALISED,
    }


def test_reference_for_another_video_carries_nothing() -> None:
    captions = "the weather today is sunny with a light breeze from the west and warm afternoon"
    reference = "Our quarterly revenue grew, and margins improved. We thank the board for its support."
    result = transfer(words(captions), words(reference), "en")
    assert result.suggestions == []
    assert "another video" in result.report["warnings"][0]  # type: ignore[index]


def test_empty_reference_carries_nothing() -> None:
    result = transfer(words("some words here"), [], "en")
    assert result.suggestions == []
    assert "no words" in result.report["warnings"][0]  # type: ignore[index]


def test_long_texts_align_through_anchors() -> None:
    rng = random.Random(3)
    vocabulary = [f"w{n}" for n in range(3000)]
    reference = [rng.choice(vocabulary) for _ in range(20_000)]
    hypothesis = []
    for token in reference:
        roll = rng.random()
        if roll < 0.05:
            continue  # deletion
        hypothesis.append(token + "x" if roll < 0.10 else token)  # substitution
        if roll > 0.95:
            hypothesis.append("um")  # insertion
    alignment = align(hypothesis, reference)
    assert alignment.matches >= 0.89 * len(reference)
    assert 0.13 < alignment.word_error_rate < 0.17


def test_transfer_command_writes_captions_and_report(tmp_path: Path, fixtures: Path) -> None:
    reference = tmp_path / "reference.txt"
    reference.write_text("So this is the first line of captions. Tom & Jerry were there! Did you see it?\n")
    out, report = tmp_path / "out.srt", tmp_path / "report.json"
    result = punctum(
        "transfer", str(reference), str(fixtures / "styled.srt"), "-o", str(out), "--report", str(report)
    )
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "<i>So this is</i> the first\nline of {\\an8}captions.\n" in text
    assert '<font color="#ffff00">Tom &amp; Jerry</font> were there!' in text
    assert "X1:40 X2:600 Y1:20 Y2:50\n<b>Did</b> you see it?\n" in text
    facts = json.loads(report.read_text())
    assert facts["marks"]["carried"] == 3
    assert facts["alignment"]["matches"] == 16


def test_transfer_exports_like_every_other_path_sentence_starts_capitalised_unless_casing_is_off(
    tmp_path: Path, fixtures: Path
) -> None:
    reference = tmp_path / "reference.txt"  # a transcript typed without capitals
    reference.write_text("so this is the first line of captions. tom & jerry were there! did you see it?\n")
    out, kept = tmp_path / "out.srt", tmp_path / "kept.srt"
    assert punctum("transfer", str(reference), str(fixtures / "styled.srt"), "-o", str(out)).returncode == 0
    text = out.read_text()
    assert (
        "<i>So this is</i>" in text and ">Tom &amp; jerry</font> were there!" in text and "<b>Did</b>" in text
    )
    no_casing = punctum(
        "transfer", str(reference), str(fixtures / "styled.srt"), "-o", str(kept), "--no-casing"
    )
    assert no_casing.returncode == 0
    text = kept.read_text()
    assert (
        "<i>so this is</i>" in text and ">tom &amp; jerry</font> were there!" in text and "<b>did</b>" in text
    )


def test_transfer_command_bad_input(tmp_path: Path, fixtures: Path) -> None:
    missing = punctum(
        "transfer", str(tmp_path / "none.txt"), str(fixtures / "styled.srt"), "-o", str(tmp_path / "o.srt")
    )
    assert missing.returncode == 3
    assert "none.txt" in missing.stderr
    unrelated = tmp_path / "unrelated.txt"
    unrelated.write_text("Completely different words about quarterly revenue and margins.")
    result = punctum("transfer", str(unrelated), str(fixtures / "styled.srt"), "-o", str(tmp_path / "o.srt"))
    assert result.returncode == 0
    assert "another video" in result.stderr
    assert (tmp_path / "o.srt").read_bytes() == (fixtures / "styled.srt").read_bytes()


def test_transfer_command_never_writes_over_its_inputs(tmp_path: Path, fixtures: Path) -> None:
    reference = tmp_path / "reference.txt"
    reference.write_text("So this is the first line of captions.\n")
    captions = tmp_path / "captions.srt"
    captions.write_bytes((fixtures / "styled.srt").read_bytes())
    out = tmp_path / "out.srt"
    for outputs, message in (
        (["-o", str(reference)], "will not overwrite"),
        (["-o", str(out), "--report", str(captions)], "will not overwrite"),
        (["-o", str(out), "--report", str(out)], "will not overwrite"),
        (["-o", str(out), "--report", str(tmp_path / "missing" / "r.json")], "does not exist"),
        (["-o", str(tmp_path)], "is a folder"),
    ):
        result = punctum("transfer", str(reference), str(captions), *outputs)
        assert result.returncode == 2, (outputs, result.stderr)
        assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
        # Refused before any work: the inputs are as they were and no output was half written.
        assert reference.read_text() == "So this is the first line of captions.\n"
        assert captions.read_bytes() == (fixtures / "styled.srt").read_bytes()
        assert not out.exists()


def test_iwslt2011_asr_transfer_reaches_f1_90() -> None:
    from tests.benchmarks.eval_transfer_iwslt import evaluate
    from tests.conftest import shared_data

    result = evaluate(shared_data("iwslt2011"))
    assert result["scores"]["overall"]["f1"] >= 90.0  # type: ignore[index]
