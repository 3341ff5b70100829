"""The recogniser listening along the captions' words: its tokenizer, what it hears on the sample's
video, and what it does with audio that cannot be heard (the wrong video, media too short, a
language it lacks). One recogniser is loaded for the module."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from app.core.model import Document
from app.formats import read_document
from app.ml.whisper_model import load_tokenizer, repair_tokenizer, whisper_model
from tests.conftest import SAMPLE, run_punctum_here, sample_opening

requires_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg")


def punctum(*args: str) -> subprocess.CompletedProcess[str]:
    return run_punctum_here(*args)


def test_the_recognisers_tokenizer_encodes_words_starting_with_t_as_the_model_knows_them(
    tmp_path: Path,
) -> None:
    from tokenizers import Tokenizer

    from app.ml.whisper_model import _part_dirs

    packaged = _part_dirs()[0] / "tokenizer.json"
    damaged = Tokenizer.from_file(str(packaged))
    # As shipped: " the" is a lone space and "the" (the first merge lost), which Whisper never saw.
    assert damaged.encode(" the", add_special_tokens=False).ids == [220, 3322]
    copy = tmp_path / "tokenizer.json"
    shutil.copyfile(packaged, copy)
    repair_tokenizer(copy)
    for tokenizer in (
        Tokenizer.from_file(str(copy)),
        load_tokenizer(whisper_model()),
        load_tokenizer(packaged.parent),
    ):

        def encode(text: str, tokenizer: Tokenizer = tokenizer) -> list[int]:
            return list(tokenizer.encode(text, add_special_tokens=False).ids)

        assert encode(" the") == [264] and encode(" to") == [281] and encode(" this") == [341]
        assert encode(" Printing, in the only sense.") == [34439, 278, 11, 294, 264, 787, 2020, 13]
        assert tokenizer.decode(encode(" that tune")) == " that tune"  # decoding unchanged
    repaired_once = copy.read_bytes()
    repair_tokenizer(copy)  # a repaired file is left as it is
    assert copy.read_bytes() == repaired_once


@pytest.fixture(scope="module")
def listener():  # type: ignore[no-untyped-def]
    from app.ml.listener import Listener

    return Listener(threads=1)


@pytest.fixture(scope="module")
def sample_track():  # type: ignore[no-untyped-def]
    from app.audio.analysis import analyse_media

    return analyse_media(SAMPLE / "sample.mp4")


def _heard(document: Document, track: object, listener: object, language: str = "en"):  # type: ignore[no-untyped-def]
    from app.services.listening import listen
    from app.services.model import Punctuator
    from app.services.suggestions import model_word

    words = [model_word(w) for w in document.words()]
    read, casing = Punctuator().probabilities(words, language)
    return read, listen(document, words, track, language, read, casing, lambda: listener)


@requires_ffmpeg
def test_the_listener_hears_the_samples_full_stops_and_questions(listener, sample_track) -> None:  # type: ignore[no-untyped-def]
    document = read_document(SAMPLE / "sample.srt")
    words = [w.text for w in document.words()]
    _, readings = _heard(document, sample_track, listener)
    assert not readings.warnings
    assert all(h is not None for h in readings.heard)
    heard = [int(np.argmax(h)) for h in readings.heard]  # type: ignore[arg-type]
    # The sample's speaker says "...fix them together. Nobody pays, nobody rushes..." and asks
    # "so what do people bring?"
    full_stops = [i for i, mark in enumerate(heard) if mark == 2]
    assert words.index("together") in full_stops
    assert heard[words.index("people") + 1] == 3
    assert heard[len(words) - 1] == 2  # the end of the talk
    combined = [int(np.argmax(c)) for c in readings.combined]
    assert sum(m != 0 for m in combined) >= len(words) // 12  # a mark every dozen words at least


@requires_ffmpeg
def test_captions_the_audio_does_not_say_keep_the_text_reading(listener, sample_track) -> None:  # type: ignore[no-untyped-def]
    document = read_document(SAMPLE / "sample.srt")
    document.cues = document.cues[:8]  # the first 20 s are enough to tell, and a third of the work
    # The same cues and timings with the talk's sentences in another order: captions of words the
    # audio does not say where they are shown (as another video's would be).
    texts = [cue.words for cue in document.cues][::-1]
    for cue, words in zip(document.cues, texts, strict=True):
        cue.words = words
    document.reindex()
    read, readings = _heard(document, sample_track, listener)
    assert readings.warnings == [
        "the audio does not say the captions' words (another video?): marks read from the text alone"
    ]
    assert readings.combined == [list(r) for r in read] and not readings.any_heard


@requires_ffmpeg
def test_media_shorter_than_the_captions_is_heard_where_it_lasts(listener, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from app.audio.analysis import analyse_media

    short = tmp_path / "short.wav"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(SAMPLE / "sample.mp4"), "-t", "20", "-ac", "1", str(short)],
        check=True,
    )
    document = read_document(SAMPLE / "sample.srt")
    _, readings = _heard(document, analyse_media(short), listener)
    assert (
        len(readings.warnings) == 1
        and "captions run past the end of the media (20.0 s)" in readings.warnings[0]
    )
    spans = [(cue.start / 1000, cue.end / 1000) for cue in document.cues for _ in cue.words]
    assert all(h is not None for h, (_, end) in zip(readings.heard, spans, strict=True) if end <= 20)
    assert all(h is None for h, (start, _) in zip(readings.heard, spans, strict=True) if start >= 20.6)


def test_a_language_the_recogniser_lacks_is_not_listened_to(listener) -> None:  # type: ignore[no-untyped-def]
    hearing = listener.read(["hello"], [(0.0, 1.0)], [0], np.zeros(16_000, np.float32), "tlh")
    assert hearing.marks == [None] and hearing.warnings == [
        "the recogniser does not know the language 'tlh': not listened to"
    ]


def test_a_window_longer_than_the_decoder_can_follow_is_heard_in_parts(listener) -> None:  # type: ignore[no-untyped-def]
    silence = np.zeros(16_000 * 20, np.float32)
    words = ["antidisestablishmentarianism"] * 60  # one cue of more tokens than the decoder holds
    hearing = listener.read(words, [(0.0, 20.0)] * 60, [0] * 60, silence, "en")
    assert all(m is not None for m in hearing.marks) and not hearing.warnings and hearing.windows > 1
    # A single "word" longer than the decoder can hold cannot be cut: the text reading, said once.
    giant = "".join(chr(0x4E00 + 7 * i) for i in range(200))
    alone = listener.read(["so", giant], [(0.0, 20.0)] * 2, [0, 0], silence, "en")
    assert alone.marks[1] is None
    assert alone.warnings == ["1 stretches hold more words than the recogniser can follow: not listened to"]


@requires_ffmpeg
def test_punctuate_listens_to_the_media_by_default_and_changes_no_word(tmp_path: Path) -> None:
    out, report = tmp_path / "out.srt", tmp_path / "suggestions.json"
    captions, clip = sample_opening(tmp_path)
    media = str(clip)
    heard = punctum(
        "punctuate",
        str(captions),
        "--media",
        media,
        "-o",
        str(out),
        "--suggestions",
        str(report),
    )
    assert heard.returncode == 0, heard.stderr
    suggestions = json.loads(report.read_text())
    assert suggestions["evidence"] == "heard"
    marks = [s for s in suggestions["suggestions"] if s.get("casing") is None and s["source"] == "model"]
    assert marks and all(s["evidence"] == "heard" for s in marks)
    assert all(set(s["readings"]) == {"read", "heard"} for s in marks)
    assert not heard.stderr.strip(), heard.stderr  # the media lasts as long as the captions
    original = captions.read_text()
    written = out.read_text()
    strip = lambda text: "".join(c.lower() for c in text if c.isalnum() or c.isspace())  # noqa: E731
    assert strip(written) == strip(original)  # marks and capitals only
    deaf_report = tmp_path / "deaf.json"
    deaf = punctum(
        "punctuate",
        str(captions),
        "--media",
        media,
        "--no-listen",
        "--suggestions",
        str(deaf_report),
    )
    assert deaf.returncode == 0, deaf.stderr
    assert json.loads(deaf_report.read_text())["evidence"] != "heard"
