"""Word times heard: where the listener hears each caption word said, on the sample's opening
(one window) and on audio made up for the purpose. One recogniser is loaded for the module."""

from __future__ import annotations

import numpy as np
import pytest

from app.formats import read_document
from app.ml.word_alignment import across_the_pauses, monotonic, pauses, silent_frames, to_the_sound
from tests.conftest import SAMPLE, cue_words, decoded_audio

#: Where the sample's speaker starts a sentence after a pause in its first 23 s, seconds: the end of
#: each silence of 0.25 s or more, read from the audio's energy in 10 ms frames (as
#: ``bench_word_times`` finds them).
SENTENCE_ONSETS = {"every": 3.86, "nobody": 9.30, "so": 14.09, "mostly": 15.86, "last": 19.79}


@pytest.fixture(scope="module")
def listener():  # type: ignore[no-untyped-def]
    from app.ml.listener import Listener

    return Listener(threads=2)


@pytest.fixture(scope="module")
def opening():  # type: ignore[no-untyped-def]
    """The sample's first 8 cues with the full stops and the question mark a text model writes
    after its sentences, and the 23 s of audio they span."""
    from app.ml.listener import Listening

    document = read_document(SAMPLE / "sample.srt")
    document.cues = document.cues[:8]
    words, times, cues = cue_words(document)
    marks = [0] * len(words)
    for sentence_end in ("cafe", "together", "warm", "radio"):
        marks[words.index(sentence_end)] = 2
    marks[words.index("bring")] = 3  # "So what do people bring?"
    capitals = [False] * len(words)
    listening = Listening(words, times, cues, "en", capitals, marks)
    return listening, decoded_audio(SAMPLE / "sample.mp4", 23)


def test_heard_words_start_where_the_speaker_resumes_after_a_sentences_pause(listener, opening) -> None:  # type: ignore[no-untyped-def]
    listening, audio = opening
    hearing = listener.read(listening, audio)
    words = list(listening.words)
    assert all(times is not None for times in hearing.word_times)
    for word, onset in SENTENCE_ONSETS.items():
        start, _ = hearing.word_times[words.index(word)]
        assert abs(start - onset) <= 0.05, (word, start, onset)
    # The talk starts after half a second of silence, not at the audio's start.
    assert abs(hearing.word_times[0][0] - 0.53) <= 0.05
    # Times never go back, and each word lies within a second of its cue.
    flat = [edge for times in hearing.word_times for edge in times]
    assert flat == sorted(flat)
    for (start, end), (cue_start, cue_end) in zip(hearing.word_times, listening.times, strict=True):
        assert cue_start - 1 <= start <= end <= cue_end + 1


def test_captions_the_audio_does_not_say_get_no_times(listener, opening) -> None:  # type: ignore[no-untyped-def]
    from app.ml.listener import Listening

    listening, audio = opening
    reordered = list(reversed(listening.words))  # the same times, words the audio does not say there
    wrong = Listening(
        reordered, listening.times, listening.cues, "en", listening.capitals, [0] * len(reordered)
    )
    hearing = listener.read(wrong, audio)
    assert hearing.word_times == [None] * len(reordered)
    # A listener asked for no times hears the marks alone.
    assert listener.read(listening, audio, word_times=False).word_times == [None] * len(listening.words)


def test_a_pause_goes_between_the_words_and_edges_in_silence_move_to_the_sound() -> None:
    rate = 16_000
    tone = (0.3 * np.sin(2 * np.pi * 220 * np.arange(rate) / rate)).astype(np.float32)
    # Sound 0.0-1.0 s, silence 1.0-1.6 s, sound 1.6-2.6 s, silence to 3.0 s; the audio starts at 10 s.
    audio = np.concatenate(
        [tone, np.zeros(int(0.6 * rate), np.float32), tone, np.zeros(int(0.4 * rate), np.float32)]
    )
    silent = silent_frames(audio)
    found = pauses(silent, 10.0)
    assert found == [pytest.approx((11.0, 11.6)), pytest.approx((12.6, 13.0))]
    # The aligner gave the pause to the second word, and ran it on to the audio's end.
    aligned = [(10.0, 10.9), (10.9, 13.0)]
    assert to_the_sound(across_the_pauses(aligned, found), silent, 10.0) == [
        pytest.approx((10.0, 11.0)),
        pytest.approx((11.6, 12.6)),
    ]
    # An edge in silence too short to be a pause still moves to the sound.
    assert to_the_sound([(10.0, 11.1)], silent, 10.0) == [pytest.approx((10.0, 11.0))]
    assert monotonic([(1.0, 2.0), None, (1.5, 1.4), (3.0, 4.0)]) == [(1.0, 2.0), None, (2.0, 2.0), (3.0, 4.0)]
