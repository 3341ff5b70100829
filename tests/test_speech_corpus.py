"""Synthesised training speech: spoken by espeak-ng, analysed like a user's media, stored, read back."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

from app.training.data import from_punctuated_text
from app.training.gaps import SIZE as GAP_SIZE
from app.training.speech_corpus import build_speech_corpus, read_speech_corpus

TEXT = (
    "We walked to the station in the morning. The train was late, so we waited. "
    "Did you bring the tickets? I think they are in my bag. Then we sat down, and the train came. "
    "Where are we going now? To the sea, of course. It was cold, but the sun was out. "
) * 2


@pytest.mark.skipif(
    shutil.which("espeak-ng") is None or importlib.util.find_spec("librosa") is None,
    reason="needs espeak-ng and the speech extra (make train-setup)",
)
def test_spoken_corpus_keeps_words_and_hears_sentence_ends(tmp_path: Path) -> None:
    text = from_punctuated_text(TEXT, "en", "test")
    folder = tmp_path / "speech"
    build_speech_corpus(
        [text], "en-us", folder, words=len(text), seed=3, piece_words=len(text), log=lambda _: None
    )
    (document,) = read_speech_corpus(folder, "en", "speech_test")
    assert document.words == text.words and document.labels == text.labels
    gaps = document.extras["gaps"]
    assert isinstance(gaps, list) and len(gaps) == len(document.words)
    assert all(g is not None and len(g) == GAP_SIZE for g in gaps[:-1])
    # The voice pauses at sentence ends: the estimated pauses there are longer than inside sentences.
    pause = [g[0] if g is not None else 0.0 for g in gaps]
    sentence_ends = [p for p, label in zip(pause, document.labels, strict=True) if label in (2, 3)]
    inside = [p for p, label in zip(pause, document.labels, strict=True) if label == 0]
    assert np.mean(sentence_ends) > 2 * np.mean(inside)
    # Built once: a second call leaves the folder as it is.
    stamp = (folder / "0000.npz").stat().st_mtime_ns
    build_speech_corpus([text], "en-us", folder, words=len(text), seed=3, log=lambda _: None)
    assert (folder / "0000.npz").stat().st_mtime_ns == stamp
