"""Fitting a house style (``app.ml.house_style``) to a person's decisions: each part a logistic (or
a softmax) under a Gaussian prior centred on the style it starts from, a few Newton steps on at
most a few thousand examples: milliseconds."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass, replace

import numpy as np

from app.ml.confidence import Confidence, shipped_confidence
from app.ml.house_style import (
    CLASSES,
    HouseStyle,
    Proposal,
    StyleExample,
    calibration_inputs,
    mark_logits,
    shipped_sure,
)


@dataclass(frozen=True)
class Priors:
    """The priors' standard deviations: how far the decisions may move each part of a style from
    the one it starts from (``bench_review --strength`` and ``--sweep`` scale them)."""

    mark: float = 1.0  # the bias of whether a mark goes (logit)
    scale: float = 0.25  # its scale on the model's own logit
    word: float = 1.0
    classes: float = 1.0
    calibration: float = 1.0

    def scaled(self, strength: float) -> Priors:
        """Every spread times ``strength`` (kept above zero)."""
        return Priors(*(max(1e-6, spread * strength) for spread in astuple(self)))


#: The priors as shipped.
PRIORS = Priors()


def fit_style(
    examples: Sequence[StyleExample],
    base: HouseStyle | None = None,
    priors: Priors = PRIORS,
    confidence: Confidence | None = None,
) -> HouseStyle:
    """The style ``examples`` teach, starting from ``base`` (the model's own when None), as far
    as ``priors`` let them move it."""
    base = base or HouseStyle()
    if not examples:
        return base
    confidence = confidence or shipped_confidence()
    combined = np.array([e.reading.combined for e in examples], dtype=float)
    chosen = np.array([e.chosen for e in examples])
    # Whether a mark goes: a logistic on the model's own logit, with a bias per next word, fitted
    # apart where the model proposes a mark (what the queue asks of) and where it proposes none
    # (what only a person's own marks, and their answers on added ones, say anything of).
    proposed = combined.argmax(axis=1) != 0
    has_mark = (chosen != 0).astype(float)
    logit = mark_logits(combined)
    next_words = [e.next_word for e in examples]
    kept = _fit_presence(
        logit[proposed],
        has_mark[proposed],
        [w for w, here in zip(next_words, proposed, strict=True) if here],
        (base.mark_bias, base.mark_scale, base.word_bias),
        priors,
    )
    added = _fit_presence(
        logit[~proposed],
        has_mark[~proposed],
        [w for w, here in zip(next_words, proposed, strict=True) if not here],
        (base.add_bias, base.add_scale, base.add_word_bias),
        priors,
    )
    # Which mark: a softmax over the marks, on the gaps where the person left one.
    marked = chosen != 0
    class_bias = np.array(base.class_bias, dtype=float)
    if marked.any():
        scores = np.log(np.clip(combined[marked, 1:], 1e-9, 1.0))
        onehot = np.eye(CLASSES - 1)[chosen[marked] - 1]
        class_bias[1:] = _newton_softmax(
            scores, onehot, class_bias[1:], np.array(base.class_bias[1:]), 1 / priors.classes**2
        )
    proposing = HouseStyle(
        *kept,
        class_bias=tuple(float(b) for b in class_bias),
        add_bias=added[0],
        add_scale=added[1],
        add_word_bias=added[2],
    )
    calibration, spread = _fit_calibration(examples, proposing, base, priors, confidence)
    return replace(
        proposing,
        calibration=calibration,
        calibration_spread=spread,
        decisions=len(examples),
        inherited=base.decisions + base.inherited,
    )


def _fit_presence(
    logit: np.ndarray,
    has_mark: np.ndarray,
    next_words: Sequence[str],
    base: tuple[float, float, dict[str, float]],
    priors: Priors,
) -> tuple[float, float, dict[str, float]]:
    """Bias, scale and word biases of whether a mark goes, ``sigmoid(bias + scale * logit +
    word)``, fitted on these gaps from ``base`` (the same three) under their priors."""
    bias, scale, word_bias = base
    if not len(logit):
        return base
    vocabulary = sorted(set(next_words))
    word_of = np.array([vocabulary.index(w) for w in next_words])
    word_centre = np.array([word_bias.get(w, 0.0) for w in vocabulary])
    words = word_centre.copy()
    params = np.array([bias, scale])
    centre = params.copy()
    precision = np.diag([1 / priors.mark**2, 1 / priors.scale**2])
    design = np.column_stack([np.ones_like(logit), logit])
    word_precision = 1 / priors.word**2
    for _ in range(3):
        params = _newton_logistic(design, has_mark, words[word_of], params, centre, precision)
        offset = design @ params
        for _ in range(6):  # every word's bias at once: each is a logistic of its own gaps
            p = 1 / (1 + np.exp(-np.clip(offset + words[word_of], -40, 40)))
            gradient = np.bincount(word_of, has_mark - p, len(vocabulary)) - word_precision * (
                words - word_centre
            )
            curvature = np.bincount(word_of, p * (1 - p), len(vocabulary)) + word_precision
            words += np.clip(gradient / curvature, -2.0, 2.0)
    learnt = {**word_bias, **{w: float(b) for w, b in zip(vocabulary, words, strict=True)}}
    return float(params[0]), float(params[1]), {w: b for w, b in learnt.items() if abs(b) >= 1e-3}


def _newton(
    gradient_and_hessian: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], start: np.ndarray, steps: int
) -> np.ndarray:
    """Newton steps to the maximum of a concave posterior, each step at most 2 in any parameter."""
    params = start.astype(float).copy()
    for _ in range(steps):
        gradient, hessian = gradient_and_hessian(params)
        step = np.linalg.solve(hessian, gradient)
        largest = float(np.abs(step).max())
        if largest > 2.0:
            step *= 2.0 / largest
        params -= step
        if largest < 1e-6:
            break
    return params


def _newton_logistic(
    design: np.ndarray,
    target: np.ndarray,
    offset: np.ndarray,
    params: np.ndarray,
    centre: np.ndarray,
    precision: np.ndarray,
    steps: int = 6,
) -> np.ndarray:
    """The MAP weights of ``sigmoid(offset + design @ weights)`` under a Gaussian prior."""

    def derivatives(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = 1 / (1 + np.exp(-np.clip(offset + design @ weights, -40, 40)))
        gradient = design.T @ (target - p) - precision @ (weights - centre)
        return gradient, -(design.T * (p * (1 - p))) @ design - precision

    return _newton(derivatives, params, steps)


def _newton_softmax(
    scores: np.ndarray,
    onehot: np.ndarray,
    bias: np.ndarray,
    centre: np.ndarray,
    precision: float,
    steps: int = 6,
) -> np.ndarray:
    """The MAP bias of a softmax over ``scores + bias`` under a Gaussian prior."""

    def derivatives(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = scores + values
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        gradient = (onehot - p).sum(axis=0) - precision * (values - centre)
        return gradient, -(np.diag(p.sum(axis=0)) - p.T @ p) - precision * np.eye(len(values))

    return _newton(derivatives, bias, steps)


def _fit_calibration(
    examples: Sequence[StyleExample],
    proposing: HouseStyle,
    base: HouseStyle,
    priors: Priors,
    confidence: Confidence,
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The calibration shift, fitted on whether each decided gap kept what ``proposing`` proposes,
    and its posterior covariance (flattened).

    The rows change with each fit (a gap the style stops proposing leaves them), which moves a
    long call's confidences up and back at successive decisions; fitted on the model's own
    proposals instead, they held still, but on the Earnings-22 dev calls what the style settled
    was less often right (97.7% -> 97.0% on one call), so they stay the style's own."""
    proposals: list[Proposal | None] = [None] * len(examples)
    for language in {e.language for e in examples}:  # the calibration reads the language
        rows_of = [n for n, e in enumerate(examples) if e.language == language]
        found = proposing.proposals(
            [examples[n].reading for n in rows_of],
            [examples[n].next_word for n in rows_of],
            [examples[n].original for n in rows_of],
            language,
            confidence,
        )
        for n, proposal in zip(rows_of, found, strict=True):
            proposals[n] = proposal
    # The inputs as a proposal's confidence is read (``HouseStyle._sure``): of the shipped
    # calibration before any cap.
    rows = [
        (
            calibration_inputs(p.mark, e.reading, shipped_sure(p.mark, e.reading, e.language, confidence)),
            float(e.chosen == p.mark),
        )
        for e, p in zip(examples, proposals, strict=True)
        if p is not None
    ]
    centre = np.array(base.calibration, dtype=float)
    if not rows:
        return tuple(float(w) for w in centre), base.calibration_spread
    x = np.array([inputs for inputs, _ in rows])
    y = np.array([right for _, right in rows])
    precision = np.eye(len(centre)) / priors.calibration**2
    weights = _newton_logistic(x, y, x[:, -1], centre, centre, precision, steps=8)
    p = 1 / (1 + np.exp(-np.clip(x[:, -1] + x @ weights, -40, 40)))
    covariance = np.linalg.inv((x.T * (p * (1 - p))) @ x + precision)
    return tuple(float(w) for w in weights), tuple(float(v) for v in covariance.ravel())
