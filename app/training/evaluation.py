"""``punctum eval``: score a model on labelled data in one of the corpus formats."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from app.formats import FormatError


def evaluate_path(
    data: Path,
    format: str,
    model: str | None,
    language: str,
    quantize: bool | None = None,
    timings: bool = True,
    engine: str = "onnx",
) -> dict[str, Any]:
    from app.services.model import Punctuator
    from app.training.data import read_any

    if not data.exists():
        raise FormatError(data, None, "No such file or directory")
    try:
        documents = [d for d in read_any(data, format, language) if len(d)]
    except (OSError, ValueError, KeyError) as error:
        raise FormatError(data, None, f"not readable as {format}: {error}") from None
    if not documents:
        raise FormatError(data, None, f"no {format} documents with words found")
    result = score_documents(documents, Punctuator(model, quantize=quantize, engine=engine), timings)
    return {"data": str(data), "format": format, "documents": len(documents), **result}


def score_documents(
    documents: list[Any], punctuator: Any, timings: bool = True, digits: int = 1, per_document: bool = False
) -> dict[str, Any]:
    """Words, time, speed and scores of ``punctuator`` on labelled documents (percentages rounded
    to ``digits``); with ``per_document``, also each document's marks right, proposed and in the
    reference (``document_counts``)."""
    from app.core.metrics import mark_counts
    from app.training.scores import document_classes, predict_documents, scores_from

    model = punctuator.load()
    began = time.perf_counter()
    probabilities = predict_documents(model, documents, model.settings, use_timings=timings)
    seconds = time.perf_counter() - began
    words = sum(len(d) for d in documents)
    result: dict[str, Any] = {
        "words": words,
        "seconds": round(seconds, 1),
        "words_per_second": round(words / seconds) if seconds else None,
        "scores": scores_from(documents, probabilities, digits),
    }
    if per_document:
        result["document_counts"] = [
            mark_counts(*document_classes(d, p)) for d, p in zip(documents, probabilities, strict=True)
        ]
    return result
