"""A suggestion's confidence is the calibrated chance that it is right, and triage settles by a
precision target: the surest settle while the expected share right holds it, and the user is told
how many of those may still be wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.ml.confidence import ConfidenceError, shipped_confidence
from tests.conftest import SAMPLE, run_punctum_here


def test_triage_settles_the_surest_within_the_target_and_says_how_many_may_be_wrong(tmp_path: Path) -> None:
    out, listing = tmp_path / "out.srt", tmp_path / "suggestions.json"
    result = run_punctum_here(
        "punctuate", str(SAMPLE / "sample.srt"), "-o", str(out), "--apply", "triage",
        "--suggestions", str(listing), "--audio", "timings",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    suggestions = json.loads(listing.read_text(encoding="utf-8"))["suggestions"]
    model = [s for s in suggestions if s["source"] == "model"]
    settled = [s for s in model if s["status"] == "accepted" and not s["casing"]]
    left = [s for s in model if s["status"] == "pending"]
    # The surest settled first, as many as keep their expected share right at 97%.
    assert settled and sum(s["confidence"] for s in settled) / len(settled) >= 0.97
    assert min(s["confidence"] for s in settled) >= max(s["confidence"] for s in left)
    wrong = sum(1 - s["confidence"] for s in settled)
    assert f"{len([s for s in suggestions if s['status'] == 'accepted'])} applied" in result.stdout
    assert f"(about {wrong:.0f} may be wrong)" in result.stdout
    # Each confidence is a probability of being right, not the mark's own probability.
    assert all(0 < s["confidence"] < 1 for s in suggestions)
    assert any(
        abs(s["confidence"] - max(s["probabilities"].values())) > 0.01 for s in suggestions if not s["casing"]
    )


def test_a_triage_target_outside_90_to_99_percent_is_refused_in_one_line(tmp_path: Path) -> None:
    result = run_punctum_here(
        "punctuate", str(SAMPLE / "sample.srt"), "-o", str(tmp_path / "out.srt"),
        "--apply", "triage", "--min-confidence", "0.6",
    )  # fmt: skip
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "between 0.90 and 0.99" in result.stderr
    assert not (tmp_path / "out.srt").exists()


def test_a_damaged_calibration_file_is_one_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "confidence.json"
    broken.write_text('{"marks": {"inputs": ["logit_combined"], "weights": [1.0], "bias": 0}}')
    with pytest.raises(ConfidenceError, match=r"confidence\.json: its marks read"):
        shipped_confidence(broken)
