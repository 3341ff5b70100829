"""A folder of 20 one-hour caption files (text path, no media) from import to export; prints JSON.

Each file has 900 cues of 10 words (9,000 words, an hour of speech at 150 words a minute) drawn from
the bundled sample's vocabulary. Measured: import, processing with the shipped model (worker
processes sized to the machine), export; peak memory of the main process and of the workers.
Goal: under 3 minutes in all on this 2-core machine.

``--ray``: the same files processed twice in one run, by the local pool and on a Ray cluster of this
machine's cores (``punctum batch --ray``), each into a project of its own. Goal: Ray within 15% of
the pool's processing time, and one model load per Ray worker, not one per file.
Run: `.venv/bin/python -m tests.benchmarks.bench_batch [--files N] [--ray]`
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CUES, WORDS_PER_CUE = 900, 10


def write_hour(path: Path, rng: random.Random, vocabulary: list[str], cues: int = CUES) -> None:
    """An hour of captions (fewer minutes with fewer ``cues``) of words drawn from ``vocabulary``."""
    lines = []
    for number in range(cues):
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
    parser.add_argument("--ray", action="store_true", help="the local pool against a local Ray cluster")
    args = parser.parse_args()

    text = (ROOT / "resources" / "sample" / "reference.txt").read_text(encoding="utf-8")
    vocabulary = [w.strip(".,?!:;\"'").lower() for w in text.split()]
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in"
        source.mkdir()
        for index in range(args.files):
            write_hour(source / f"hour{index:02d}.srt", rng, vocabulary)
        if args.ray:
            result = _pool_against_ray(source, Path(folder), args)
        else:
            result = _pool(source, Path(folder), args)
    json.dump(result, sys.stdout, indent=2)
    print()


def _pool(source: Path, folder: Path, args: argparse.Namespace) -> dict[str, object]:
    from app.services.analysis import AudioUse
    from app.services.batch import export_project, import_folder, run_batch
    from app.services.batch_scheduler import BatchSettings
    from app.store.project import Project

    began = time.perf_counter()
    with Project(folder / "bench.punctum", create=True) as project:
        import_folder(source, project)
        imported = time.perf_counter()
        summary = run_batch(project, BatchSettings(audio=AudioUse.TEXT, int8=args.int8))
        processed = time.perf_counter()
        written = export_project(project, folder / "out").written
        exported = time.perf_counter()
    return {
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


def _pool_against_ray(source: Path, folder: Path, args: argparse.Namespace) -> dict[str, object]:
    """Processing time of the local pool and of a local Ray cluster (started by the run, as
    ``punctum batch --ray`` does, and counted in its time) on the same files."""
    from app.services.analysis import AudioUse
    from app.services.batch import import_folder, run_batch
    from app.services.batch_scheduler import BatchSettings
    from app.services.cluster import ClusterSettings, run_batch_on_ray
    from app.store.project import Project

    settings = BatchSettings(audio=AudioUse.TEXT, int8=args.int8)
    seconds: dict[str, float] = {}
    for backend in ("pool", "ray"):
        with Project(folder / f"{backend}.punctum", create=True) as project:
            import_folder(source, project)
            began = time.perf_counter()
            if backend == "pool":
                pool = run_batch(project, settings)
            else:
                ray = run_batch_on_ray(project, settings, ClusterSettings())
            seconds[backend] = time.perf_counter() - began
    ratio = seconds["ray"] / seconds["pool"]
    words = args.files * CUES * WORDS_PER_CUE
    return {
        "files": args.files,
        "words": words,
        "cores": os.cpu_count(),
        "pool_processed": pool.done,
        "ray_processed": ray.done,
        "failed": pool.failed + ray.failed,
        "pool_seconds": round(seconds["pool"], 1),
        "ray_seconds": round(seconds["ray"], 1),
        "ray_to_pool": round(ratio, 3),
        "goal_ray_to_pool_at_most": 1.15,
        "ray_within_goal": ratio <= 1.15,
        "ray_workers": sum(len(node.workers) for node in ray.nodes.values()),
        "ray_model_loads": ray.model_loads,
        "ray_retried": len(ray.retried),
        "ray_nodes": ray.node_lines(),
        "files_per_hour_per_core": round(ray.done * 3600 / seconds["ray"] / (os.cpu_count() or 1), 1),
        "driver_commit_ms_per_file": round(1000 * ray.commit_seconds / max(ray.done, 1)),
        "words_per_second_pool": round(words / seconds["pool"]),
        "words_per_second_ray": round(words / seconds["ray"]),
    }


if __name__ == "__main__":
    main()
