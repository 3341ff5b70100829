"""Sliding windows: every word covered, budgets kept, each word owned by its most central window."""

from __future__ import annotations

import itertools

from app.ml.windows import Encoded, central_windows, make_batch, plan_windows, window_end


def encoded_of(lengths: list[int]) -> Encoded:
    ids, starts, ends = [], [], []
    for number, length in enumerate(lengths):
        starts.append(len(ids))
        ids.extend([100 + number] * length)
        ends.append(len(ids))
    return Encoded(ids, starts, ends)


def test_windows_cover_every_word_within_budget() -> None:
    encoded = encoded_of([1, 2, 3, 1, 1, 4, 2, 1, 1, 1, 3, 2] * 20)
    windows = plan_windows(encoded, budget=20, stride=0.5)
    covered = set()
    for first, stop in windows:
        assert encoded.tokens_between(first, stop) <= 20
        covered.update(range(first, stop))
    assert covered == set(range(len(encoded)))
    assert all(b[0] > a[0] for a, b in itertools.pairwise(windows))
    assert len(windows) > 2


def test_a_word_longer_than_the_budget_gets_a_window_of_its_own() -> None:
    encoded = encoded_of([2, 50, 2])
    assert window_end(encoded, 1, 10) == 2
    windows = plan_windows(encoded, budget=10)
    assert set().union(*(range(a, b) for a, b in windows)) == {0, 1, 2}


def test_each_word_keeps_its_most_central_window() -> None:
    windows = [(0, 10), (5, 15), (10, 20)]
    owner = central_windows(windows, 20)
    assert owner[0] == 0 and owner[2] == 0  # document start: no missing left context
    assert owner[9] == 1 and owner[10] == 1  # middle of the second window
    assert owner[19] == 2


def test_batch_marks_each_words_last_token_and_the_next_one() -> None:
    encoded = encoded_of([1, 3, 2])
    batch = make_batch([(encoded, 0, 3), (encoded, 1, 2)], start_id=0, end_id=2, pad_id=1)
    assert batch.input_ids[0].tolist() == [0, 100, 101, 101, 101, 102, 102, 2]
    assert batch.last_index[0].tolist() == [1, 4, 6]
    assert batch.next_index[0].tolist() == [2, 5, 7]
    assert batch.first_index[0].tolist() == [1, 2, 5]
    assert batch.input_ids[1].tolist()[:5] == [0, 101, 101, 101, 2]
    assert batch.attention_mask[1].tolist() == [1, 1, 1, 1, 1, 0, 0, 0]
    assert batch.word_mask[1].tolist() == [True, False, False]
