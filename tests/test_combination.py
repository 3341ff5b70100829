"""The two readers' combination: where the text model and the listener chose the same mark, the
suggestion is that mark."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.marks import MODEL_MARKS
from app.ml.combination import shipped_combination

_DISTRIBUTION = st.lists(st.floats(0.001, 1.0), min_size=len(MODEL_MARKS), max_size=len(MODEL_MARKS)).map(
    lambda values: [v / sum(values) for v in values]
)


@settings(max_examples=500, deadline=None)
@given(read=_DISTRIBUTION, heard=_DISTRIBUTION)
def test_a_mark_both_readers_chose_is_the_suggestion(read: list[float], heard: list[float]) -> None:
    combined = shipped_combination().combine(read, heard)
    assert abs(sum(combined) - 1) < 1e-9
    clear = sorted(read)[-2] < max(read) - 1e-6 and sorted(heard)[-2] < max(heard) - 1e-6
    if clear and np.argmax(read) == np.argmax(heard):
        assert np.argmax(combined) == np.argmax(read)


def test_a_full_stop_read_and_heard_is_not_turned_into_a_comma() -> None:
    # "next saturday [.] we start": read "." 0.49 (comma 0.45), heard "." 0.67; the comma's bias
    # once made the suggestion a comma that neither reader chose.
    read = [0.02, 0.45, 0.49, 0.02, 0.01, 0.01]
    heard = [0.03, 0.25, 0.67, 0.03, 0.01, 0.01]
    combined = shipped_combination().combine(read, heard)
    assert MODEL_MARKS[int(np.argmax(combined))] == "."
