"""A suggestion's confidence is the calibrated chance that it is right, and triage settles by a
precision target: the surest settle while the expected share right holds it, and the user is told
how many of those may still be wrong."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from app.ml.confidence import ConfidenceError, shipped_confidence
from tests.conftest import ROOT, SAMPLE, run_punctum_here


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
        "--apply", "triage", "--target", "0.6",
    )  # fmt: skip
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "between 0.90 and 0.99" in result.stderr
    assert not (tmp_path / "out.srt").exists()


def test_a_damaged_calibration_file_is_one_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "confidence.json"
    broken.write_text('{"marks": {"inputs": ["logit_combined"], "weights": [1.0], "bias": 0}}')
    with pytest.raises(ConfidenceError, match=r"confidence\.json: its marks read"):
        shipped_confidence(broken)


def test_each_input_is_named_beside_its_value() -> None:
    from app.ml.confidence import CAPITAL_INPUTS, MARK_INPUTS, capital_inputs, mark_inputs

    shipped = json.loads((ROOT / "models" / "confidence" / "confidence.json").read_text(encoding="utf-8"))
    assert list(MARK_INPUTS) == shipped["marks"]["inputs"]
    assert list(CAPITAL_INPUTS) == shipped["capitals"]["inputs"]
    combined = [0.1, 0.2, 0.6, 0.05, 0.03, 0.02]  # a full stop, led by a comma
    values = dict(zip(MARK_INPUTS, mark_inputs(2, combined, combined, None, 0.4, True, "fr"), strict=True))
    assert values["class_."] == 1 and values["class_,"] == values["class_?"] == 0
    assert values["heard"] == values["logit_heard"] == values["readers_agree"] == 0
    assert values["timed"] == 1 and values["pause"] == values["pause_full_stop"] == 0.4
    assert values["cue_end"] == 1 and values["english"] == 0 and values["logit_comma"] == 0
    assert values["logit_combined"] == values["logit_full_stop"] == pytest.approx(math.log(0.6 / 0.4))
    assert values["margin"] == pytest.approx(math.log(0.6 / 0.4) - math.log(0.2 / 0.8))
    assert dict(zip(CAPITAL_INPUTS, capital_inputs(0.5, True, "en"), strict=True)) == {
        "logit_capital": 0.0,
        "cue_start": 1.0,
        "english": 1.0,
    }


def test_the_fitter_recovers_a_known_logistic_relation() -> None:
    from app.ml.confidence import sigmoid
    from app.training.confidence_fit import fit_logistic

    rng = np.random.default_rng(5)
    inputs = rng.normal(size=(20_000, 3))
    weights, bias = np.array([1.5, -2.0, 0.5]), -0.3
    chance = np.array([sigmoid(float(score)) for score in inputs @ weights + bias])
    right = (rng.random(len(chance)) < chance).astype(np.float64)
    fitted = fit_logistic(inputs, right)
    assert np.allclose(fitted.weights, weights, atol=0.1) and fitted.bias == pytest.approx(bias, abs=0.1)


def test_calibration_error_is_measured_one_way() -> None:
    import torch

    from app.training import calibrate, reliability
    from tests.benchmarks import bench_confidence

    # Bins of a tenth: 0.1 and 0.15 share one (mean 0.125, half right), 0.9 and 0.95 another (all
    # right): (0.375 * 2 + 0.075 * 2) / 4.
    confidence, right = np.array([0.1, 0.15, 0.9, 0.95]), np.array([0, 1, 1, 1])
    assert reliability.expected_calibration_error(confidence, right, bins=10) == pytest.approx(0.225)
    assert [b.count for b in reliability.reliability_bins([0.0, 1.0, 0.5], [0, 1, 1], bins=2)] == [1, 2]
    assert reliability.expected_calibration_error([], []) == 0.0
    # The model's mark probabilities: the ECE of each word's most likely mark, by the same bins.
    torch.manual_seed(2)
    probabilities = torch.softmax(3 * torch.randn(500, 6), dim=-1)
    labels = torch.randint(0, 6, (500,))
    top, chosen = probabilities.max(dim=-1)
    assert calibrate.expected_calibration_error(probabilities, labels) == pytest.approx(
        reliability.expected_calibration_error(top.double().numpy(), (chosen == labels).numpy())
    )
    assert bench_confidence.expected_calibration_error is reliability.expected_calibration_error


def _readings(count: int = 4000) -> dict[str, np.ndarray]:
    """Development readings of made-up gaps, as ``tests.benchmarks.dev_readings`` caches them."""
    rng = np.random.default_rng(7)
    read = rng.dirichlet([8, 1, 1, 0.5, 0.2, 0.2], size=count).astype(np.float32)
    gold = np.where(rng.random(count) < 0.7, read.argmax(1), rng.integers(0, 6, count)).astype(np.int8)
    heard = rng.dirichlet([8, 1, 1, 0.5, 0.2, 0.2], size=count).astype(np.float32)
    heard[count // 2 :] = np.nan  # the second recording not heard
    casing = rng.dirichlet([2, 1, 0.2], size=count).astype(np.float32)
    return {
        "set": np.repeat(["speech", "calls"], count // 2),
        "recording": np.repeat(["a", "b"], count // 2),
        "language": np.repeat(["en", "fr"], count // 2),
        "cue": np.arange(count, dtype=np.int32) // 10,
        "gold": gold,
        "word_capital": np.where(rng.random(count) < casing[:, 1:].sum(1), 1, 0).astype(np.int8),
        "read": read,
        "heard": heard,
        "casing": casing,
        "timed": rng.random(count) < 0.8,
        "pause": rng.exponential(0.3, count).astype(np.float32),
        "cue_end": np.arange(count) % 10 == 9,
    }


def test_the_confidence_is_fitted_by_a_command_that_checks_it_reproduces(tmp_path: Path) -> None:
    readings, output = tmp_path / "readings.npz", tmp_path / "confidence.json"
    np.savez_compressed(readings, **_readings())  # type: ignore[arg-type]
    fitted = run_punctum_here("fit-confidence", "--readings", str(readings), "--output", str(output))
    assert fitted.returncode == 0, fitted.stderr
    assert json.loads(fitted.stdout)["written"] and shipped_confidence(output).marks.weights
    checked = run_punctum_here(
        "fit-confidence", "--readings", str(readings), "--output", str(output), "--check"
    )
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["largest_change"] <= 1e-6
    missing = run_punctum_here("fit-confidence", "--readings", str(tmp_path / "none.npz"), "--check")
    assert missing.returncode == 3 and missing.stderr.count("\n") == 1
    assert "tests.benchmarks.dev_readings" in missing.stderr


def test_the_readers_combination_fit_finds_the_combination_the_marks_were_drawn_from() -> None:
    from app.training.combination_fit import RecordingReadings, combination_of, fit

    generator = np.random.default_rng(7)
    gaps = 3000
    text = generator.dirichlet(np.ones(6) * 0.7, gaps)
    heard = [list(row) for row in generator.dirichlet(np.ones(6) * 0.7, gaps)]
    truth = combination_of(0.6, 0.3, 0.25, -0.25)
    combined = truth.combine_heard(text, heard)
    gold = np.asarray([generator.choice(6, p=row / row.sum()) for row in combined])
    found = fit([RecordingReadings(text, heard, gold)], [np.arange(gaps)])
    assert (found.weights, found.biases, found.temperature) == (truth.weights, truth.biases, 1.0)
