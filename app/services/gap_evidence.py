"""What the captions' timings and the media say about each word gap, for the model and for people."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.core.gap_features import GapMeasure
from app.core.model import Document, Evidence

#: Below this share of the captions' time with speech found, a media's audio is taken to be
#: noise, music or silence: nothing is read from it. Silero finds speech in 92% of the LJSpeech
#: clips' time and in none of white noise, a tone, chords or silence.
MIN_SPEECH_SHARE = 0.2


@dataclass
class GapEvidence:
    """What timings and audio say about each word gap: model inputs and their provenance."""

    vectors: list[list[float] | None]
    kinds: list[Evidence]  # per gap: text or timing
    media: str | None = None
    measures: list[GapMeasure] | None = None  # what the media says in a person's units, per word
    warnings: list[str] = field(default_factory=list)
    past_the_end: bool = False  # the captions run past the media's end (one of the warnings says so)


def too_little_speech(document: Document, track: Any) -> str | None:
    """Why the media's audio (``AudioTrack``) is not listened to, when speech fills under
    ``MIN_SPEECH_SHARE`` of the captions' time; None when there is enough."""
    share = track.speech_share([(c.start / 1000, c.end / 1000) for c in document.cues])
    if share >= MIN_SPEECH_SHARE:
        return None
    return (
        f"speech found in only {share:.0%} of the captions' time (noise, music or silence?): "
        "the audio was not listened to"
    )


def gap_evidence(document: Document, media: Path | None = None, track: Any = None) -> GapEvidence:
    """Pauses from the captions' own timings, for the model; with ``media``, pauses and pitch
    measured in its audio for people to see (``measures``).

    The model reads the captions' timings only: on real speech (the LJSpeech clips) word times
    estimated from the audio lowered F1 (model card, "Audio"); what the audio says reaches the
    marks through the recogniser that listens along the words (``services.listening``). Audio
    with speech in under ``MIN_SPEECH_SHARE`` of the captions' time is not measured.
    ``track``: the media's ``AudioTrack`` when the caller has analysed it already (the editor does,
    for its waveform), so the audio is decoded once.
    """
    from app.audio.analysis import analyse_media
    from app.audio.gap_features import caption_gaps

    if track is None and media is not None:
        track = analyse_media(media)
    vectors, own_gaps, own_timings = caption_gaps(document, None)
    gaps, timings = own_gaps, own_timings
    beyond: list[str] = []  # the warnings: that the captions run past the media's end
    if track is not None:
        if too_little_speech(document, track) is None:
            _, gaps, timings = caption_gaps(document, track)
        beyond = _beyond_the_media(document, track.duration, gaps, timings, own_gaps, own_timings)
    return GapEvidence(
        vectors,
        [Evidence.TEXT if v is None else Evidence.TIMING for v in vectors],
        str(media) if media is not None else None,
        [
            GapMeasure(
                None if g.pause is None else round(g.pause * 1000),
                None if g.pitch_slope is None else round(g.pitch_slope, 1),
                None if t.end is None else round(t.end * 1000),
                None if g.pitch_change is None else round(g.pitch_change, 1),
            )
            for g, t in zip(gaps, timings, strict=True)
        ],
        beyond,
        past_the_end=bool(beyond),
    )


def _beyond_the_media(
    document: Document,
    duration: float,
    gaps: list[Any],
    timings: list[Any],
    own_gaps: list[Any],
    own_timings: list[Any],
) -> list[str]:
    """Where the captions run past the media's end there is no audio: the measures there take what
    the captions' own timings say (``own_gaps``, ``own_timings``; replaced in place), and a warning
    says so, once."""
    last = max((cue.end for cue in document.cues), default=0) / 1000
    if last <= duration + 1.0:
        return []
    cue_ends = [cue.end / 1000 for cue in document.cues for _ in cue.words]
    for index, (timing, cue_end) in enumerate(zip(timings, cue_ends, strict=True)):
        if (timing.end if timing.end is not None else cue_end) > duration:
            gaps[index], timings[index] = own_gaps[index], own_timings[index]
    return [
        f"the captions run to {_seconds(last)}, past the end of the media ({_seconds(duration)}): no audio"
        " evidence after it (is it the media of these captions?)"
    ]


def _seconds(seconds: float) -> str:
    """Seconds as people read them: tenths under a minute (0.5 s is not "0 s"), whole ones above."""
    return f"{seconds:.1f} s" if seconds < 60 else f"{seconds:.0f} s"
