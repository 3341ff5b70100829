"""A language given with ``--language`` that the text is plainly not in is told, as a detected
language the model does not know is."""

from __future__ import annotations

from tests.conftest import SAMPLE, run_punctum_here


def test_a_language_given_that_the_text_is_not_in_is_warned_about() -> None:
    english = str(SAMPLE / "sample.srt")
    told = run_punctum_here("punctuate", english, "--language", "fr", "--apply", "none")
    assert told.returncode == 0, told.stderr
    assert "warning: the text looks like English (en), not French (fr)" in told.stderr, told.stderr
    right = run_punctum_here("punctuate", english, "--language", "en", "--apply", "none")
    assert right.returncode == 0 and "looks like" not in right.stderr, right.stderr
