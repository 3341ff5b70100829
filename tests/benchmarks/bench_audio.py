"""Audio decoding and features for one hour of media: wall time and peak memory; prints JSON.

The hour is the bundled 62 s sample video looped (stream copy, no re-encoding) into one file.
Measured: decoding to 16 kHz mono, speech activity, loudness and pitch tracks in one streamed pass,
then word timings and prosody for an hour of captions with no word times (estimated from speech).
Goal: under 60 s; memory stays near one chunk, not the whole track. Decoding alone is measured
again on a 2-hour file in a fresh process (goal: about 300 MB at most), since the analysis process's
peak also holds the libraries it imports (ONNX Runtime for speech activity, Parselmouth for pitch).
Run: `.venv/bin/python -m tests.benchmarks.bench_audio`
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "resources" / "sample"
LOOPS = 58  # 58 x 62 s = 59.9 minutes
# Streams a file through the decoder and prints the process's peak resident memory in MB.
DECODE_ONLY = """
import resource, sys
from app.audio.decode import stream_audio
samples = sum(chunk.size for chunk in stream_audio(sys.argv[1]))
print(samples, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def loop_sample(target: Path, loops: int) -> None:
    """The sample video repeated ``loops`` times by stream copy (no re-encoding)."""
    subprocess.run(
        ["ffmpeg", "-v", "error", "-stream_loop", str(loops - 1), "-i", str(SAMPLE / "sample.mp4"),
         "-c", "copy", str(target)],
        check=True,
    )  # fmt: skip


def decode_only_peak(media: Path) -> tuple[float, float]:
    """(seconds of audio, peak RSS in MB) of a fresh process that only decodes ``media``."""
    done = subprocess.run(
        [sys.executable, "-c", DECODE_ONLY, str(media)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    samples, peak = done.stdout.split()
    return int(samples) / 16_000, float(peak)


def main() -> None:
    from app.audio.analysis import analyse_media
    from app.audio.prosody import gap_prosody
    from app.audio.timing import word_timings
    from app.core.model import Document
    from app.formats import read_document
    from app.formats.common import make_cue

    with tempfile.TemporaryDirectory() as folder:
        media = Path(folder) / "hour.mp4"
        loop_sample(media, LOOPS)
        two_hours = Path(folder) / "two-hours.mp4"
        loop_sample(two_hours, 2 * LOOPS)
        decoded_seconds, decode_peak = decode_only_peak(two_hours)
        import onnxruntime  # noqa: F401  (imported before measuring, so the baseline below includes them)
        import parselmouth  # noqa: F401

        imports_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        began = time.perf_counter()
        track = analyse_media(media)
        analysed = time.perf_counter() - began

        one = read_document(SAMPLE / "sample.srt")
        cues = []
        for loop in range(LOOPS):
            for cue in one.cues:
                shift = loop * 62_000
                text = " ".join(w.text for w in cue.words)
                cues.append(make_cue(len(cues) + 1, cue.start + shift, cue.end + shift, text))
        captions = Document(cues, "srt")
        began = time.perf_counter()
        timings = word_timings(captions, track)
        gaps = gap_prosody([w.text for w in captions.words()], timings, track)
        timed = time.perf_counter() - began
    result = {
        "media_seconds": round(track.duration, 1),
        "decode_and_features_seconds": round(analysed, 1),
        "timings_and_prosody_seconds": round(timed, 1),
        "words": len(gaps),
        "total_seconds": round(analysed + timed, 1),
        "goal_seconds": 60,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "rss_after_imports_mb": round(imports_rss),
        "decode_only_2h_media_seconds": round(decoded_seconds, 1),
        "decode_only_2h_peak_rss_mb": round(decode_peak),
        "decode_goal_mb": 300,
        "frame_tracks_mb": round((track.energy_db.nbytes + track.f0.nbytes + track.speech.nbytes) / 2**20, 1),
    }
    json.dump(result, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
