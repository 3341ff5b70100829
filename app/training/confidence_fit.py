"""Fitting the suggestions' confidence (``app.ml.confidence``, ``models/confidence/confidence.json``)
on the development readings: ``punctum fit-confidence``.

The readings are every development gap's, read once and cached outside the repository by
``.venv/bin/python -m tests.benchmarks.dev_readings`` (its docstring says what each array holds). A
mark suggestion is a gap whose combined reading chooses a mark (the captions have none), right when
the reference has that mark there; a capital suggestion is a word the casing head capitalises
(``capital_suggestions`` says which), right when the reference capitalises it. Each kind is a
logistic regression over its inputs (``MARK_INPUTS``, ``CAPITAL_INPUTS``): scikit-learn's, with a
small L2 penalty on the weights (not the intercept).

What ships is fitted on every gap, with the readers' combination Punctum ships;
``tests/benchmarks/bench_confidence.py`` measures the same fitting cross-fitted (fitted on one half
of every recording, scored on the other).
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.core.bundled import confidence_dir
from app.core.errors import PunctumError
from app.ml.base_encoder import cache_root
from app.ml.combination import Combination, shipped_combination
from app.ml.confidence import (
    CAPITAL_INPUTS,
    MARK_INPUTS,
    Confidence,
    ConfidenceError,
    Logistic,
    capital_inputs,
    mark_inputs,
)
from app.services.suggestions import CAPITAL_PROBABILITY

#: The development readings, one array per name (``tests/benchmarks/dev_readings.py``).
Readings = dict[str, np.ndarray]
#: The arrays the fit reads from them.
READING_ARRAYS = (
    "read", "heard", "cue_end", "language", "set", "recording", "gold", "timed", "pause", "casing",
    "word_capital",
)  # fmt: skip

#: The L2 penalty on the weights, per suggestion fitted on: the weights minimise the mean log-loss
#: plus ``PENALTY / 2`` times their squared norm.
PENALTY = 1e-5
#: ``--check`` calls a refit the shipped file when no weight or bias moves further than this.
REPRODUCED_WITHIN = 1e-6


class ConfidenceFitError(PunctumError):
    pass


def default_readings() -> Path:
    """Where ``tests.benchmarks.dev_readings`` caches the development readings."""
    return cache_root() / "bench" / "dev_readings.npz"


def load_readings(path: Path) -> Readings:
    if not path.is_file():
        raise ConfidenceFitError(
            f"{path}: no development readings there; make them with"
            " `.venv/bin/python -m tests.benchmarks.dev_readings`"
        )
    try:
        with np.load(path, allow_pickle=False) as stored:
            readings = {key: stored[key] for key in stored.files}
    except OSError as error:
        raise ConfidenceFitError(f"{path}: cannot read it ({error.strerror or error})") from None
    except (ValueError, EOFError, zipfile.BadZipFile):  # not an npz, or a damaged one
        raise ConfidenceFitError(f"{path}: not development readings (not an .npz file)") from None
    missing = sorted(set(READING_ARRAYS) - set(readings))
    if missing:
        raise ConfidenceFitError(
            f"{path}: not development readings (no {', '.join(missing)}); make them with"
            " `.venv/bin/python -m tests.benchmarks.dev_readings`"
        )
    return readings


@dataclass(frozen=True)
class Suggestions:
    """The suggestions of one kind found in the readings, a row each."""

    at: np.ndarray  # the row of the readings: the gap after the word (marks), the word (capitals)
    set: np.ndarray
    file: np.ndarray  # the recording
    inputs: np.ndarray  # suggestions x inputs
    right: np.ndarray  # 1.0 where right, 0.0 where wrong
    raw: np.ndarray  # the readers' own probability of what is suggested


def heard_gaps(readings: Readings) -> tuple[np.ndarray, np.ndarray]:
    """The listener's distribution per gap (NaN rows where unheard) and which gaps it heard."""
    heard = np.asarray(readings["heard"], dtype=np.float64)
    return heard, np.asarray(~np.isnan(heard).any(axis=1), dtype=bool)


def combined_reading(readings: Readings, combination: Combination) -> np.ndarray:
    """Per gap, the readers' distribution as ``combination`` combines them (the text model's where
    the gap was not heard)."""
    combined = np.asarray(readings["read"], dtype=np.float64).copy()
    heard, known = heard_gaps(readings)
    rows = np.flatnonzero(known)
    combined[rows] = combination.combine_heard(readings["read"][rows].tolist(), heard[rows].tolist())
    return combined


def mark_suggestions(
    readings: Readings, combined: np.ndarray, heard: np.ndarray, known: np.ndarray
) -> Suggestions:
    """Every gap where ``combined`` chooses a mark, with its inputs; ``known`` says which gaps
    ``heard`` holds."""
    chosen = combined.argmax(1)
    gaps = np.flatnonzero(chosen != 0)
    inputs = [
        mark_inputs(
            int(chosen[g]),
            combined[g],
            readings["read"][g],
            heard[g] if known[g] else None,
            _pause_feature(readings, int(g)),
            bool(readings["cue_end"][g]),
            str(readings["language"][g]),
        )
        for g in gaps
    ]
    return Suggestions(
        gaps,
        np.asarray(readings["set"])[gaps],
        np.asarray(readings["recording"])[gaps],
        np.asarray(inputs, dtype=np.float64).reshape(-1, len(MARK_INPUTS)),
        (np.asarray(readings["gold"])[gaps] == chosen[gaps]).astype(np.float64),
        combined[gaps, chosen[gaps]],
    )


def _pause_feature(readings: Readings, gap: int) -> float | None:
    """The gap's pause as the model's gap vector encodes it (``app.audio.gap_features``)."""
    if not readings["timed"][gap] or np.isnan(readings["pause"][gap]):
        return None
    return float(np.log1p(10 * max(0.0, float(readings["pause"][gap]))) / 3)


def capital_suggestions(readings: Readings, combined: np.ndarray) -> Suggestions:
    """Every word the casing head capitalises, but a recording's first and one whose reference casing
    is unknown, with its inputs. Words after a sentence end ``combined`` suggests are among them,
    though export capitalises those and Punctum never suggests them: the shipped model was fitted so,
    and fitting it without them is not better on every set (the model card)."""
    casing = np.asarray(readings["casing"], dtype=np.float64)
    capital = casing[:, 1] + casing[:, 2]
    recording = np.asarray(readings["recording"])
    first = np.ones(len(capital), dtype=bool)
    first[1:] = recording[1:] != recording[:-1]
    known = np.asarray(readings["word_capital"]) >= 0
    words = np.flatnonzero((capital > CAPITAL_PROBABILITY) & ~first & known)
    cue_start = np.zeros(len(capital), dtype=bool)
    cue_start[1:] = np.asarray(readings["cue_end"])[:-1]
    inputs = [
        capital_inputs(float(capital[w]), bool(cue_start[w]), str(readings["language"][w])) for w in words
    ]
    return Suggestions(
        words,
        np.asarray(readings["set"])[words],
        recording[words],
        np.asarray(inputs, dtype=np.float64).reshape(-1, len(CAPITAL_INPUTS)),
        (np.asarray(readings["word_capital"])[words] == 1).astype(np.float64),
        capital[words],
    )


def fit_logistic(inputs: np.ndarray, right: np.ndarray, penalty: float = PENALTY) -> Logistic:
    """The weights and bias most likely to give ``right`` (1 or 0) from ``inputs`` (rows), with
    ``PENALTY`` on the weights: scikit-learn's logistic regression, solved by Newton's method."""
    from sklearn.linear_model import LogisticRegression

    x = np.asarray(inputs, dtype=np.float64)
    # scikit-learn minimises |w|^2 / 2 + C * (the summed log-loss): C = 1 / (penalty * n).
    model = LogisticRegression(
        C=1 / (penalty * len(x)), l1_ratio=0.0, solver="newton-cholesky", tol=1e-10, max_iter=100
    )
    model.fit(x, np.asarray(right, dtype=np.float64))
    return Logistic(tuple(float(w) for w in model.coef_[0]), float(model.intercept_[0]))


def fit_confidence(readings: Readings) -> tuple[Confidence, dict[str, int]]:
    """Both models fitted on every suggestion of the readings, read with the shipped combination;
    and how many suggestions of each kind they were fitted on."""
    combined = combined_reading(readings, shipped_combination())
    marks = mark_suggestions(readings, combined, *heard_gaps(readings))
    capitals = capital_suggestions(readings, combined)
    confidence = Confidence(
        fit_logistic(marks.inputs, marks.right), fit_logistic(capitals.inputs, capitals.right)
    )
    return confidence, {"marks": len(marks.right), "capitals": len(capitals.right)}


def largest_change(before: Confidence, after: Confidence) -> float:
    """The most any weight or bias moved between two calibrations."""
    return max(
        abs(a - b)
        for old, new in ((before.marks, after.marks), (before.capitals, after.capitals))
        for a, b in zip((*old.weights, old.bias), (*new.weights, new.bias), strict=True)
    )


def refit(readings_path: Path | None, output: Path | None, check: bool) -> dict[str, object]:
    """Fit the confidence on the readings (``default_readings()`` unless given) and write it to
    ``output`` (the shipped file unless given), saying how far it moved from what was there; with
    ``check``, write nothing and fail unless the refit is that file within ``REPRODUCED_WITHIN``."""
    readings_path = readings_path or default_readings()
    output = output or confidence_dir() / "confidence.json"
    confidence, fitted_on = fit_confidence(load_readings(readings_path))
    before = _read(output) if output.is_file() else None
    moved = None if before is None else largest_change(before, confidence)
    if check and (moved is None or moved > REPRODUCED_WITHIN):
        raise ConfidenceFitError(
            f"the refit on {readings_path} is not {output}: "
            + ("there is no such file" if moved is None else f"a weight moved by {moved:.3g}")
        )
    if not check:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(confidence.as_json(), indent=2) + "\n", encoding="utf-8")
    return {
        "readings": str(readings_path),
        "suggestions": fitted_on,
        "file": str(output),
        "written": not check,
        "largest_change": moved,
        **confidence.as_json(),
    }


def _read(path: Path) -> Confidence:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfidenceFitError(f"{path}: cannot read the calibration there ({error})") from None
    try:
        return Confidence.from_json(data)
    except ConfidenceError as error:
        raise ConfidenceFitError(f"{path}: {error}") from None
