"""A capital is one letter: the word's first, in title case, never a letter turned into two."""

from __future__ import annotations

from pathlib import Path

from app.core.model import Casing, apply_casing
from app.formats import parse_document, render_document
from app.services.captions_export import as_exported
from app.services.suggestions import TextReading, suggestions_from
from tests.conftest import run_punctum_here


def _exported(text: str, language: str) -> str:
    document = parse_document(f"1\n00:00:01,000 --> 00:00:02,000\n{text}\n".encode(), "srt")
    return render_document(as_exported(document, language)).split("\n")[2]


def test_a_sharp_s_that_takes_a_capital_stays_one_letter() -> None:
    assert _exported("ß ist. ß", "de") == "ẞ ist. ẞ"
    assert apply_casing("ß", Casing.UPPER) == "ẞ"
    assert apply_casing("straße", Casing.UPPER) == "STRAẞE"


def test_punctuate_keeps_a_sharp_s_one_letter(tmp_path: Path) -> None:
    source = tmp_path / "de.txt"
    source.write_text("ich heiße ß\n", encoding="utf-8")
    result = run_punctum_here("punctuate", str(source), "--language", "de")
    assert result.returncode == 0, result.stderr
    assert "SS" not in result.stdout and "heiße" in result.stdout, result.stdout


def test_a_word_in_title_case_is_left_alone() -> None:
    # "ǅ" is one letter in title case: the word already has its capital.
    assert _exported("ǅemal je. ǆemal", "hr") == "ǅemal je. ǅemal"
    assert apply_casing("ǆemal", Casing.CAPITALISED) == "ǅemal"


def test_an_abbreviation_written_in_lowercase_never_takes_all_capitals() -> None:
    document = parse_document(b"1\n00:00:01,000 --> 00:00:02,000\nfruit e.g. apples\n", "srt")
    lower, upper = [0.9, 0.05, 0.05], [0.05, 0.15, 0.8]
    # The casing head asks for all capitals on "e.g." (as the shipped model does after "there").
    reading = TextReading(
        ["fruit", "e.g", "apples"],
        "en",
        [[1.0, 0, 0, 0, 0, 0]] * 3,
        [lower, upper, lower],
        ["text"] * 3,
        False,
    )
    suggestions, _ = suggestions_from(document, reading)
    assert [s.casing for s in suggestions if s.casing is not None] == []
    assert _exported("e.g.", "en") == "E.g."  # a sentence start: its first letter only


def test_an_abbreviations_full_stop_starts_no_sentence() -> None:
    # Export capitalises sentence starts: not the word after "e.g." or "U.S.".
    assert _exported("fruit, e.g. apples. the u.s. team won", "en") == "Fruit, e.g. apples. The u.s. team won"
