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
from tests.conftest import SAMPLE, cut_media, run_punctum_here, sample_opening


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


def test_windows_hold_whole_cues_never_run_backwards_and_keep_to_the_decoders_budget() -> None:
    from app.ml.listening_windows import plan_windows, spread

    cues = [c for c in range(10) for _ in range(5)]  # ten cues of five words, 5 s each
    forwards = [(5.0 * c, 5.0 * c + 5) for c in cues]
    plan = plan_windows(spread(forwards, cues), cues, [2] * 50, 52.0, 144)
    spans = [(w.first, w.stop) for w in plan.windows]
    assert spans == [(0, 25), (25, 50)]  # whole cues, up to 29 s
    assert all(w.end - w.start <= 29 for w in plan.windows) and plan.past_the_end == 0
    # A file whose cues run backwards in time: each stretch of audio heard for its own cue.
    backwards = [(5.0 * (9 - c), 5.0 * (9 - c) + 5) for c in cues]
    plan = plan_windows(spread(backwards, cues), cues, [2] * 50, 52.0, 144)
    assert [(w.first, w.stop) for w in plan.windows] == [(5 * c, 5 * c + 5) for c in range(10)]
    assert [w.start for w in plan.windows] == [5.0 * (9 - c) for c in range(10)]
    # One cue of more tokens than the budget is cut between its words; words past the audio's end
    # are left out and counted.
    plan = plan_windows(spread([(0.0, 20.0)] * 100, [0] * 100), [0] * 100, [3] * 100, 10.0, 144)
    assert all(sum([3] * (w.stop - w.first)) <= 144 for w in plan.windows)
    assert plan.windows[-1].stop == 52 and plan.past_the_end == 48  # the tail: 0.6 s after the end


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
    from app.services.suggestions import TextReading, model_word

    words = [model_word(w) for w in document.words()]
    read, casing = Punctuator().probabilities(words, language)
    reading = TextReading(words, language, read, casing, ["text"] * len(words), hears=False)
    return read, listen(document, reading, track, lambda: listener)


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


def test_media_shorter_than_the_captions_is_heard_where_it_lasts(listener, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from app.audio.analysis import analyse_media

    short = cut_media(SAMPLE / "sample.mp4", tmp_path / "short.wav", 20)
    document = read_document(SAMPLE / "sample.srt")
    _, readings = _heard(document, analyse_media(short), listener)
    # Told apart from the other warnings, so that it is said once where the gap evidence says it too.
    assert readings.warnings == []
    assert "captions run past the end of the media (20.0 s)" in (readings.past_the_end or "")
    spans = [(cue.start / 1000, cue.end / 1000) for cue in document.cues for _ in cue.words]
    assert all(h is not None for h, (_, end) in zip(readings.heard, spans, strict=True) if end <= 20)
    assert all(h is None for h, (start, _) in zip(readings.heard, spans, strict=True) if start >= 20.6)


def _listening(words: list[str], times: list[tuple[float, float]], cues: list[int], language: str = "en"):  # type: ignore[no-untyped-def]
    from app.ml.listener import Listening

    return Listening(words, times, cues, language, [False] * len(words), [0] * len(words))


def test_a_language_the_recogniser_lacks_or_whose_marks_it_cannot_read_is_not_listened_to(listener) -> None:  # type: ignore[no-untyped-def]
    silence = np.zeros(16_000, np.float32)
    hearing = listener.read(_listening(["hello"], [(0.0, 1.0)], [0], "tlh"), silence)
    assert hearing.marks == [None] and hearing.warnings == [
        "the recogniser does not know the language 'tlh': not listened to"
    ]
    # Japanese is written without spaces and with marks of its own (。、): Whisper knows it, but its
    # reading of ", . ?" would say nothing.
    japanese = listener.read(_listening(["こんにちは", "世界"], [(0.0, 1.0)] * 2, [0, 0], "ja"), silence)
    assert japanese.marks == [None, None] and japanese.warnings == [
        "the recogniser cannot read the marks of the language 'ja': not listened to"
    ]


def test_a_cue_longer_than_the_decoder_can_follow_is_heard_in_parts(listener) -> None:  # type: ignore[no-untyped-def]
    silence = np.zeros(16_000 * 20, np.float32)
    words = ["antidisestablishmentarianism"] * 60  # one cue of more tokens than the decoder holds
    hearing = listener.read(_listening(words, [(0.0, 20.0)] * 60, [0] * 60), silence)
    assert all(m is not None for m in hearing.marks) and not hearing.warnings and hearing.windows > 1
    # A single "word" longer than the decoder can hold cannot be cut: the text reading, said once.
    giant = "".join(chr(0x4E00 + 7 * i) for i in range(200))
    alone = listener.read(_listening(["so", giant], [(0.0, 20.0)] * 2, [0, 0]), silence)
    assert alone.marks[1] is None
    assert alone.warnings[0] == "1 word longer than the recogniser can follow: not listened to"


def test_words_are_forced_as_the_captions_write_them(listener) -> None:  # type: ignore[no-untyped-def]
    from app.ml.listener import Listening
    from app.ml.listening_windows import Window

    words = ["we", "work", "at", "NASA", "in", "houston"]
    # The text model writes a full stop after "work" and a capital on "houston".
    listening = Listening(words, [(0.0, 3.0)] * 6, [0] * 6, "en", [False] * 5 + [True], [0, 2, 0, 0, 0, 2])
    forced, _, _ = listener.text.window_text(listening, Window(0, 6, 0.0, 3.0), listening.first_marks)
    # An acronym keeps its capitals: "Nasa" would be a word Whisper hardly ever wrote.
    assert listener.text.tokenizer.decode(forced) == " We work. At NASA in Houston."


def test_cues_that_run_backwards_are_each_heard_where_they_are_said(listener, sample_track) -> None:  # type: ignore[no-untyped-def]
    document = read_document(SAMPLE / "sample.srt")
    document.cues = document.cues[:4][::-1]  # the file lists its cues last first, each with its own times
    document.reindex()
    _, readings = _heard(document, sample_track, listener)
    assert not readings.warnings  # each stretch is heard against its own audio: the words match
    assert all(h is not None for h in readings.heard)


def test_a_video_that_says_the_captions_only_in_part_is_heard_where_it_does(listener, sample_track) -> None:  # type: ignore[no-untyped-def]
    document = read_document(SAMPLE / "sample.srt")
    # From 28 s on, the cues carry the words of other cues, reversed: as if another video took over.
    late = [cue for cue in document.cues if cue.start >= 28_000]
    texts = [cue.words for cue in late][::-1]
    for cue, words in zip(late, texts, strict=True):
        cue.words = words
    document.reindex()
    _, readings = _heard(document, sample_track, listener)
    assert len(readings.warnings) == 1
    assert len(readings.warnings) == 1 and readings.warnings[0].startswith(
        "the audio does not say the captions' words in 3 of 4 stretches (from 0:28)"
    )
    starts = [cue.start for cue in document.cues for _ in cue.words]
    assert all(h is not None for h, start in zip(readings.heard, starts, strict=True) if start < 25_000)
    # Each window of up to 29 s has its own verdict.
    assert all(h is None for h, start in zip(readings.heard, starts, strict=True) if start >= 28_000)


def test_a_recogniser_failure_leaves_the_text_reading_with_a_warning(listener) -> None:  # type: ignore[no-untyped-def]
    class Failing:  # CTranslate2 running out of memory, say, in the middle of a file
        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def encode(self, *args: object, **options: object) -> object:
            raise RuntimeError("std::bad_alloc")

    real = listener._model
    listener._model = Failing()
    try:
        hearing = listener.read(
            _listening(["so", "it", "goes"], [(0.0, 2.0)] * 3, [0] * 3), np.zeros(32_000, np.float32)
        )
    finally:
        listener._model = real
    assert hearing.marks == [None] * 3
    assert hearing.warnings == ["the recogniser failed on 1 stretch (std::bad_alloc): not listened to there"]


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


def test_captions_putting_more_words_in_the_audio_than_anyone_says_are_not_listened_to(listener) -> None:  # type: ignore[no-untyped-def]
    """5,000 one-word cues in 10 s of speech: no window is decoded (the decoder, given a text that
    repeats itself, took it for heard, window after window, for minutes), one warning says why."""
    from tests.conftest import decoded_audio

    class Counting:  # the real decoder, its calls counted: one per window heard
        calls = 0

        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def generate(self, *args: object, **options: object) -> object:
            Counting.calls += 1
            return real.generate(*args, **options)

    words = [("apple", "ladder", "quantum", "violin", "harbour")[i % 5] for i in range(5000)]
    times = [(i * 0.002, i * 0.002 + 0.001) for i in range(5000)]
    audio = decoded_audio(SAMPLE / "sample.mp4", 10)
    real = listener._model
    listener._model = Counting()
    try:
        hearing = listener.read(_listening(words, times, list(range(5000))), audio)
    finally:
        listener._model = real
    assert hearing.warnings == [
        "the captions put 5000 words where the audio has time for far fewer (are these its captions?):"
        " not listened to there"
    ]
    assert Counting.calls == 0 and hearing.windows == 0 and all(m is None for m in hearing.marks)


def test_transcribing_and_listening_share_one_loaded_recogniser(listener) -> None:  # type: ignore[no-untyped-def]
    from app.audio.decode import decode_audio
    from app.ml.transcriber import Transcriber

    transcriber = Transcriber()
    assert transcriber.model.model is listener._model  # one Whisper in the process, not two
    recognition = transcriber.transcribe(decode_audio(SAMPLE / "sample.mp4")[: 16_000 * 8], "en")
    assert recognition.words  # and it still transcribes


def test_a_second_pass_that_does_not_fit_the_decoder_leaves_the_first_pass_reading(
    listener, sample_track, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The second pass took its new gaps before checking that its text fits the decoder; when it
    did not, the first reading was read at the second pass's rows, and the IndexError that
    followed failed the whole file. Here every window's second text is made too long to fit."""
    real = listener.text.window_text
    calls: dict[int, int] = {}

    def too_long_the_second_time(listening, window, written):  # type: ignore[no-untyped-def]
        tokens, gaps, firsts = real(listening, window, written)
        calls[window.first] = calls.get(window.first, 0) + 1
        if calls[window.first] == 1:
            return tokens, gaps, firsts
        padding = listener.decoder.dimensions.positions  # rows past anything the first pass read
        longer = tokens + tokens[:1] * padding  # more tokens than the decoder has positions
        return longer, {i: row + padding for i, row in gaps.items()}, [(r + padding, t) for r, t in firsts]

    monkeypatch.setattr(listener.text, "window_text", too_long_the_second_time)
    document = read_document(SAMPLE / "sample.srt")
    document.cues = document.cues[:8]
    _, readings = _heard(document, sample_track, listener)
    assert any(count > 1 for count in calls.values())  # a second pass was tried
    assert not readings.warnings and all(h is not None for h in readings.heard)


def test_a_one_file_run_lets_the_text_model_go_while_the_recogniser_listens_and_reads_the_same(
    tmp_path: Path,
) -> None:
    """`punctuate --media` held the text model through the listening, idle: on a 10-minute file
    its 390 MB came on top of the listener's (whole-process peak 1,424 MB, 1,047 MB after). A
    process reading one file now lets it go first; what is read does not change."""
    from app.ml.runtime import exports_open
    from app.services.analysis import AnalysisRequest, AudioUse, analyse
    from app.services.model import Punctuator

    captions, clip = sample_opening(tmp_path)
    request = AnalysisRequest.from_file(captions, media=clip, audio=AudioUse.LISTEN)
    kept = analyse(request, Punctuator())
    lean = Punctuator(one_file=True)
    held_while_listening: list[int] = []
    load_listener = lean.listener

    def listener():  # type: ignore[no-untyped-def]
        held_while_listening.append(exports_open())
        return load_listener()

    lean.listener = listener  # type: ignore[method-assign]
    freed = analyse(request, lean)
    assert held_while_listening == [0]

    def marks(analysis):  # type: ignore[no-untyped-def]
        return [(s.gap, s.mark, s.confidence, s.casing) for s in analysis.suggestions]

    assert marks(freed) == marks(kept) and any(s.readings for s in freed.suggestions)
