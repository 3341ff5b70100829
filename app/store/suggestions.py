"""Suggestions and gap measures as a project keeps them: a suggestion is one row of the
suggestions table (its probabilities as JSON), a file's gap measures one JSON list in its row."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from typing import Any

from app.core.gap_features import GapMeasure
from app.core.model import Casing, Source, Suggestion


def measures_json(measures: Sequence[GapMeasure] | None) -> str | None:
    """Each measure's values in its fields' order, as ``Project.gap_measures`` reads them back."""
    if measures is None:
        return None
    return json.dumps([dataclasses.astuple(m) for m in measures])


def parse_measures(text: str) -> list[GapMeasure]:
    """The measures ``measures_json`` wrote (those of older projects have fewer values each); a
    ``ValueError`` saying what is wrong for anything else."""
    rows = json.loads(text)
    fields = len(dataclasses.fields(GapMeasure))
    if not isinstance(rows, list):
        raise ValueError("not a list")
    for row in rows:
        if not isinstance(row, list) or len(row) > fields:
            raise ValueError(f"a measure of {fields} values at most is a list, not {json.dumps(row)[:40]}")
        if not all(v is None or (type(v) in (int, float) and math.isfinite(v)) for v in row):
            raise ValueError(f"a measure holds numbers, not {json.dumps(row)[:40]}")
    return [GapMeasure(*row) for row in rows]


def suggestion_row(suggestion: Suggestion) -> dict[str, Any]:
    return {
        "id": suggestion.id,
        "gap": suggestion.gap,
        "mark": suggestion.mark,
        "confidence": suggestion.confidence,
        "source": suggestion.source.value,
        "evidence": suggestion.evidence,
        "casing": suggestion.casing.value if suggestion.casing else None,
        "probabilities": json.dumps(suggestion.probabilities, ensure_ascii=False),
        "readings": json.dumps(suggestion.readings, ensure_ascii=False) if suggestion.readings else None,
    }


def suggestion_from_row(row: tuple[Any, ...]) -> Suggestion:
    return Suggestion(
        id=int(row[0]),
        gap=int(row[1]),
        mark=str(row[2]),
        confidence=float(row[3]),
        source=Source(row[4]),
        evidence=str(row[5]),
        casing=Casing(row[6]) if row[6] else None,
        probabilities=json.loads(row[7]),
        readings={k: (str(v[0]), float(v[1])) for k, v in json.loads(row[8]).items()} if row[8] else {},
    )
