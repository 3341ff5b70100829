"""What listening costs on a long file: time and peak memory of `punctum punctuate --media`, with
the recogniser listening (the default) and without (`--audio timings`), in one run; prints JSON.

The file: the bundled sample's audio looped to ten minutes (``--minutes``), its captions repeated
alongside, shifted by the sample's length each time. Each command runs as a process of its own;
its peak resident memory is read from the operating system when it ends (``os.wait4``).

Run: `.venv/bin/python -m tests.benchmarks.bench_listening_cost [--minutes 10]`
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pysrt

from tests.conftest import ROOT, SAMPLE

PUNCTUM = [sys.executable, "-m", "app"]


def long_file(folder: Path, minutes: float) -> tuple[Path, Path, float]:
    captions = pysrt.open(str(SAMPLE / "sample.srt"))
    length = 62.0  # the sample's seconds, and the step between repeats
    repeats = max(1, round(minutes * 60 / length))
    media = folder / "long.m4a"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-stream_loop", str(repeats - 1), "-i", str(SAMPLE / "sample.mp4"),
         "-vn", "-c:a", "copy", "-t", str(repeats * length), "-y", str(media)],
        check=True,
    )  # fmt: skip
    long = pysrt.SubRipFile()
    for repeat in range(repeats):
        for cue in captions:
            offset = round(repeat * length * 1000)
            start = pysrt.SubRipTime.from_ordinal(cue.start.ordinal + offset)
            end = pysrt.SubRipTime.from_ordinal(cue.end.ordinal + offset)
            long.append(pysrt.SubRipItem(len(long) + 1, start, end, cue.text))
    srt = folder / "long.srt"
    long.save(str(srt), encoding="utf-8")
    return srt, media, repeats * length


def timed_run(arguments: list[str]) -> dict[str, float]:
    began = time.perf_counter()
    process = subprocess.Popen(arguments, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - began
    stderr = process.stderr.read().decode() if process.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench_listening_cost: {' '.join(arguments)} failed: {stderr.strip()}")
    return {"seconds": round(seconds, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10.0)
    args = parser.parse_args()
    cpu = Path("/proc/cpuinfo").read_text(encoding="utf-8") if Path("/proc/cpuinfo").exists() else ""
    with tempfile.TemporaryDirectory() as scratch:
        srt, media, seconds = long_file(Path(scratch), args.minutes)
        base = [*PUNCTUM, "punctuate", str(srt), "--media", str(media), "-o", str(Path(scratch) / "out.srt")]
        text_only = timed_run([*base, "--audio", "timings"])
        listening = timed_run(base)
    extra = listening["seconds"] - text_only["seconds"]
    print(
        json.dumps(
            {
                "media_seconds": seconds,
                "cpu_flags": sorted(set(re.findall(r"\bavx[0-9a-z_]*", cpu))),
                "cores": os.cpu_count(),
                "no_listen": text_only,
                "listening": listening,
                "listening_extra_seconds": round(extra, 1),
                "listening_times_faster_than_real_time": round(seconds / extra, 1) if extra > 0 else None,
                "listening_extra_peak_rss_mb": listening["peak_rss_mb"] - text_only["peak_rss_mb"],
                "goals": {"times_faster_than_real_time": 40, "extra_peak_rss_mb": 350},
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
