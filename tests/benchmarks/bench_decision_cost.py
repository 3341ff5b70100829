"""What a person waits for as a project grows: a decision, reopening the project, its status.

An Earnings-22 dev call cut to its first N minutes (10, 30 and 60 by default; cues of ten words,
timed by its word timings), batched without audio into a project, then reviewed through
``ReviewSession`` as a person works: the queue's first pending gap accepted, every fourth turned
down, every seventh given a full stop by hand, ``--decisions`` times. Figures per length: each
decision's milliseconds (median, p95, worst), reopening the project and ``project_status`` in
seconds, and the project's size in MB.

Run: `PUNCTUM_DATA=../shared/data .venv/bin/python -m tests.benchmarks.bench_decision_cost
[--minutes 10,30,60] [--decisions 400]`; prints JSON ``{"lengths": {"<minutes>": R}, "cpu": ...}``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from app.services.batch import project_status
from app.services.review import ReviewSession
from app.store.project import Project
from app.training.data import earnings_split, read_rev
from tests.benchmarks import cpu_flags
from tests.conftest import SHARED_DATA

CUE_WORDS = 10


def _at(seconds: float) -> str:
    ms = round(seconds * 1000)
    return f"{ms // 3600000:02}:{ms // 60000 % 60:02}:{ms // 1000 % 60:02},{ms % 1000:03}"


def call_captions(minutes: float, target: Path) -> int:
    """The longest dev call's first ``minutes`` as bare captions at ``target``; its word count."""
    folder = SHARED_DATA / "earnings22" / "force_aligned_nlp_references"
    calls = [read_rev(p) for p in earnings_split(folder)["dev"]]
    call = max(calls, key=lambda c: len(c.words))
    starts, ends = call.extras["starts"], call.extras["ends"]
    timed = [
        (w, s, e) for w, s, e in zip(call.words, starts, ends, strict=True) if s is not None and e is not None
    ]
    first = timed[0][1]
    kept = [t for t in timed if t[1] - first < minutes * 60]
    blocks = []
    for n in range(0, len(kept), CUE_WORDS):
        group = kept[n : n + CUE_WORDS]
        text = " ".join(w.lower() for w, _, _ in group)
        start, end = group[0][1] - first, max(group[-1][2] - first, group[0][1] - first + 0.2)
        blocks.append(f"{n // CUE_WORDS + 1}\n{_at(start)} --> {_at(end)}\n{text}\n")
    target.write_text("\n".join(blocks), encoding="utf-8")
    return len(kept)


def review(project: Path, decisions: int) -> list[float]:
    """``decisions`` answers in queue order; each one's seconds."""
    session = ReviewSession.open_project(project)
    took = []
    try:
        for turn in range(decisions):
            row = next((r for r in session.queue() if r.pending), None)
            if row is None:
                break
            chosen = next(s for s in row.suggestions if s.status.value == "pending")
            started = time.perf_counter()
            if turn % 7 == 6:
                session.set_mark(chosen.gap, ".")
            elif turn % 4 == 3:
                session.reject_gap(chosen.id)
            else:
                session.accept_gap(chosen.id)
            took.append(time.perf_counter() - started)
    finally:
        session.close()
    return took


def measure(minutes: float, decisions: int, scratch: Path) -> dict[str, object]:
    folder = scratch / f"call{minutes:g}"
    folder.mkdir()
    words = call_captions(minutes, folder / "call.srt")
    project = scratch / f"call{minutes:g}.punctum"
    punctum = Path(sys.executable).with_name("punctum")
    command = [str(punctum), "batch", str(folder), "--project", str(project), "--no-audio", "--workers", "1"]
    subprocess.run(command, check=True, capture_output=True)
    took = sorted(review(project, decisions))
    started = time.perf_counter()
    ReviewSession.open_project(project).close()
    reopen = time.perf_counter() - started
    started = time.perf_counter()
    opened = Project(project, read_only=True)
    try:
        project_status(opened)
    finally:
        opened.close()
    status = time.perf_counter() - started
    return {
        "words": words,
        "decisions": len(took),
        "decision_ms": {
            "median": round(statistics.median(took) * 1000, 1),
            "p95": round(took[int(0.95 * (len(took) - 1))] * 1000, 1),
            "worst": round(took[-1] * 1000, 1),
        },
        "reopen_s": round(reopen, 2),
        "status_s": round(status, 2),
        "project_mb": round(project.stat().st_size / 1e6, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", default="10,30,60")
    parser.add_argument("--decisions", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        lengths = {m: measure(float(m), args.decisions, Path(scratch)) for m in args.minutes.split(",")}
    print(json.dumps({"lengths": lengths, "cpu": cpu_flags()}, indent=1))


if __name__ == "__main__":
    main()
