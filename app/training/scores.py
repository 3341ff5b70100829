"""Scoring the model on labelled documents the way the punctuation literature does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from app.core.marks import MODEL_MARKS, mark_class
from app.core.metrics import punctuation_scores
from app.ml.inference import LoadedModel, predict_probabilities
from app.ml.model_settings import ModelSettings
from app.training.data import LabelledText
from app.training.gaps import document_gaps, restrict


def predict_documents(
    model: LoadedModel,
    documents: Sequence[LabelledText],
    settings: ModelSettings,
    use_timings: bool = True,
) -> list[np.ndarray]:
    """Mark probabilities per document, with the inference options a model's ``settings`` call for
    in the document's language; word timings a document carries feed a gap branch unless
    ``use_timings`` is off. Settings without temperature and biases give raw probabilities."""
    results = []
    for d in documents:
        gaps = None
        if use_timings and model.gap_features:
            gaps = restrict(document_gaps(d.extras, d.words), settings.gap_inputs)
        options = settings.inference_options(d.language)
        results.append(predict_probabilities(model, d.words, options, gaps)[0])
    return results


def document_classes(document: LabelledText, probabilities: np.ndarray) -> tuple[list[str], list[str]]:
    """The reference and the predicted class of each gap of one document."""
    gold = [mark_class(MODEL_MARKS[label]) for label in document.labels]
    predicted = [mark_class(MODEL_MARKS[int(i)]) for i in probabilities.argmax(axis=-1).tolist()]
    return gold, predicted


def scores_from(
    documents: Sequence[LabelledText], probabilities: Sequence[np.ndarray], digits: int = 1
) -> dict[str, Any]:
    classes = [document_classes(d, p) for d, p in zip(documents, probabilities, strict=True)]
    gold = [c for document_gold, _ in classes for c in document_gold]
    predicted = [c for _, document_predicted in classes for c in document_predicted]
    return punctuation_scores(gold, predicted, digits=digits)


def evaluate_documents(
    model: LoadedModel,
    documents: Sequence[LabelledText],
    window_tokens: int,
    gap_inputs: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Overall scores and scores per source (the gap branch shown only ``gap_inputs``, if given)."""
    settings = ModelSettings(
        window_tokens=window_tokens, gap_inputs=tuple(gap_inputs) if gap_inputs is not None else None
    )
    probabilities = predict_documents(model, documents, settings)
    result: dict[str, Any] = {"overall": scores_from(documents, probabilities)}
    for source in sorted({d.source for d in documents}):
        chosen = [i for i, d in enumerate(documents) if d.source == source]
        result[source] = scores_from([documents[i] for i in chosen], [probabilities[i] for i in chosen])
    return result
