"""Benchmarks write inside the tree only when asked: running one leaves tracked files alone."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks import review_effort


def _drawn(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *argv: str) -> list[Path]:
    """Where ``review_effort`` drew its PNG when run with ``argv`` (its sets stubbed: no data read)."""
    (tmp_path / "earnings22").mkdir(exist_ok=True)
    drawn: list[Path] = []

    def one_set(*_: Any, **__: Any) -> dict[str, Any]:
        return {"set": "stub"}

    monkeypatch.setattr(review_effort, "Punctuator", lambda model: None)
    monkeypatch.setattr(review_effort, "bundled_sample", lambda punctuator: {})
    monkeypatch.setattr(review_effort, "earnings", one_set)
    monkeypatch.setattr(review_effort, "iwslt_asr", one_set)
    monkeypatch.setattr(review_effort, "draw", lambda results, target: drawn.append(target))
    monkeypatch.setattr(sys, "argv", ["review_effort", "--data", str(tmp_path), *argv])
    assert review_effort.main() == 0
    return drawn


def test_review_effort_draws_its_png_only_where_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _drawn(monkeypatch, tmp_path) == []  # the tracked resources/docs/review-effort.png stays
    assert _drawn(monkeypatch, tmp_path, "--png", str(tmp_path / "curve.png")) == [tmp_path / "curve.png"]
