"""A folder of 20 one-hour caption files (text path, no media) from import to export; prints JSON.

Each file has 900 cues of 10 words (9,000 words, an hour of speech at 150 words a minute) drawn from
the bundled sample's vocabulary. Measured: import, processing with the shipped model (worker
processes sized to the machine), export; peak memory of the main process and of the workers.
Goal: under 3 minutes in all on this 2-core machine.
Run: `.venv/bin/python -m tests.benchmarks.bench_batch [--files N]`
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CUES, WORDS_PER_CUE = 900, 10


def write_hour(path: Path, rng: random.Random, vocabulary: list[str]) -> None:
    lines = []
    for number in range(CUES):
        start, end = number * 4000, number * 4000 + 3800
        words = " ".join(rng.choice(vocabulary) for _ in range(WORDS_PER_CUE))
        lines.append(f"{number + 1}\n{_time(start)} --> {_time(end)}\n{words}\n")
    path.write_text("\n".join(lines), encoding="utf-8")


def _time(ms: int) -> str:
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--int8", action="store_true")
    args = parser.parse_args()

    from app.services.batch import BatchSettings, export_project, import_folder, run_batch
    from app.store.project import Project

    text = (ROOT / "resources" / "sample" / "reference.txt").read_text(encoding="utf-8")
    vocabulary = [w.strip(".,?!:;\"'").lower() for w in text.split()]
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in"
        source.mkdir()
        for index in range(args.files):
            write_hour(source / f"hour{index:02d}.srt", rng, vocabulary)
        began = time.perf_counter()
        with Project(Path(folder) / "bench.punctum", create=True) as project:
            import_folder(source, project)
            imported = time.perf_counter()
            summary = run_batch(project, BatchSettings(use_audio=False, int8=args.int8))
            processed = time.perf_counter()
            written = export_project(project, Path(folder) / "out")
            exported = time.perf_counter()
    result = {
        "files": args.files,
        "words": args.files * CUES * WORDS_PER_CUE,
        "processed": summary.done,
        "failed": summary.failed,
        "exported": len(written),
        "import_seconds": round(imported - began, 1),
        "process_seconds": round(processed - imported, 1),
        "export_seconds": round(exported - processed, 1),
        "total_seconds": round(exported - began, 1),
        "goal_seconds": 180,
        "words_per_second": round(args.files * CUES * WORDS_PER_CUE / (processed - imported)),
        "peak_rss_mb_main": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "peak_rss_mb_largest_worker": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
    }
    json.dump(result, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
