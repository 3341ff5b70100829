"""How long a user waits: `punctum punctuate` on a 10-word text file (fresh processes, cache
warm), split into imports, model load and inference; the editor from opening the bundled sample
to its first suggestions; the first run with an empty cache (a fresh clone: base encoder
conversion and model export included); and `punctum batch` on 200 small caption files. Prints JSON.

Goals: punctuate <= 1.5 s (median of 5) and <= 450 MB peak resident memory, the editor from
launch to its first suggestions <= 3 s, batch of 200 files <= 60 s.
Run: `.venv/bin/python -m tests.benchmarks.bench_startup [--skip-cold] [--skip-batch]`
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.benchmarks import cpu_flags

ROOT = Path(__file__).resolve().parents[2]
PUNCTUM = Path(sys.executable).with_name("punctum")
TEN_WORDS = "so this is the sample we talked about is it ready\n"
RUNS = 5

# One fresh process: the three stages a `punctuate` call goes through, timed from inside.
_STAGES = """
import json, sys, time
began = time.perf_counter()
from app.cli import main  # noqa: F401  (everything the command imports before it reads the file)
from app.services.model import Punctuator
from app.services.suggestions import suggestions_from, text_reading
from app.formats import read_document
imported = time.perf_counter()
punctuator = Punctuator()
punctuator.load()
loaded = time.perf_counter()
document = read_document(sys.argv[1])
suggestions_from(document, text_reading(document, punctuator))
done = time.perf_counter()
print(json.dumps({"imports": imported - began, "model_load": loaded - imported, "inference": done - loaded}))
"""

# The editor: open the bundled sample (with its reference) and wait for the first suggestions.
_EDITOR = """
import json, os, sys, time
began = time.perf_counter()
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from pathlib import Path
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication
from app.ui.window import MainWindow
sample = Path(sys.argv[1])
app = QApplication([])
window = MainWindow(settings=QSettings(sys.argv[2], QSettings.Format.IniFormat))
window.show()
shown = time.perf_counter()
window.files.open_captions(sample / "sample.srt", None, sample / "reference.txt")
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    app.processEvents()
    session = window.session
    if session is not None and session.analysed and any(True for _ in session.document.suggestions):
        break
    time.sleep(0.005)
first = time.perf_counter()
# Then the same suggestions refined by the recogniser listening along the words (on by default).
while time.monotonic() < deadline:
    app.processEvents()
    if any(s.evidence == "heard" for s in window.session.document.suggestions) and not window.worker.busy:
        break
    time.sleep(0.005)
heard = time.perf_counter()
print(json.dumps({"window_shown": shown - began, "open_to_suggestions": first - shown,
                  "start_to_suggestions": first - began, "open_to_heard_suggestions": heard - shown}))
"""


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def punctuate_warm(folder: Path) -> dict[str, object]:
    text = folder / "ten.txt"
    text.write_text(TEN_WORDS, encoding="utf-8")
    subprocess.run([PUNCTUM, "punctuate", str(text)], check=True, capture_output=True)  # cache warm
    walls = []
    for _ in range(RUNS):
        began = time.perf_counter()
        subprocess.run([PUNCTUM, "punctuate", str(text)], check=True, capture_output=True)
        walls.append(time.perf_counter() - began)
    # The largest resident set of any child so far: these runs are the first children.
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    stages = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", _STAGES, str(text)],
                check=True,
                capture_output=True,
                text=True,
                cwd=ROOT,
            ).stdout.splitlines()[-1]
        )
        for _ in range(RUNS)
    ]
    return {
        "wall_seconds_median": _median(walls),
        "wall_seconds": [round(w, 2) for w in walls],
        "peak_rss_mb": round(peak),
        "split_median_seconds": {key: _median([s[key] for s in stages]) for key in stages[0]},
        "goal_seconds": 1.5,
        "goal_peak_rss_mb": 450,
    }


def editor_first_suggestions(folder: Path) -> dict[str, object]:
    """Each run with an empty data folder: no autosave of an earlier run to restore."""
    runs = [
        json.loads(
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    _EDITOR,
                    str(ROOT / "resources" / "sample"),
                    str(folder / f"e{n}.ini"),
                ],
                check=True,
                capture_output=True,
                text=True,
                cwd=ROOT,
                env={**os.environ, "PUNCTUM_DATA_DIR": str(folder / f"editor-data-{n}")},
            ).stdout.splitlines()[-1]
        )
        for n in range(3)
    ]
    return {
        "open_to_suggestions_median": _median([r["open_to_suggestions"] for r in runs]),
        "start_to_suggestions_median": _median([r["start_to_suggestions"] for r in runs]),
        "open_to_heard_suggestions_median": _median([r["open_to_heard_suggestions"] for r in runs]),
        "runs": runs,
        "goal_seconds": 3.0,
    }


def punctuate_cold(folder: Path) -> dict[str, object]:
    """An empty cache, as after a fresh clone before set-up built it."""
    text = folder / "ten.txt"
    text.write_text(TEN_WORDS, encoding="utf-8")
    env = {**os.environ, "PUNCTUM_CACHE": str(folder / "cold-cache")}
    began = time.perf_counter()
    subprocess.run([PUNCTUM, "punctuate", str(text)], check=True, capture_output=True, env=env)
    cold = time.perf_counter() - began
    began = time.perf_counter()
    subprocess.run([PUNCTUM, "punctuate", str(text)], check=True, capture_output=True, env=env)
    return {"first_run_seconds": round(cold, 1), "second_run_seconds": round(time.perf_counter() - began, 2)}


def caption_files(folder: Path, files: int = 200, cues: int = 10) -> Path:
    """``files`` lowercase SRT files of ``cues`` cues each, words drawn from the bundled sample."""
    reference = (ROOT / "resources" / "sample" / "reference.txt").read_text(encoding="utf-8")
    vocabulary = [w.strip(".,?!:;\"'").lower() for w in reference.split()]
    rng = random.Random(7)
    target = folder / "captions"
    target.mkdir()
    for number in range(files):
        blocks = []
        for cue in range(cues):
            start, end = cue * 3000, cue * 3000 + 2500
            stamp = [f"00:{t // 60000:02d}:{t // 1000 % 60:02d},{t % 1000:03d}" for t in (start, end)]
            words = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(6, 10)))
            blocks.append(f"{cue + 1}\n{stamp[0]} --> {stamp[1]}\n{words}\n")
        (target / f"file{number:03d}.srt").write_text("\n".join(blocks), encoding="utf-8")
    return target


def batch_of_small_files(folder: Path) -> dict[str, object]:
    captions = caption_files(folder)
    began = time.perf_counter()
    done = subprocess.run(
        [PUNCTUM, "batch", str(captions), "--project", str(folder / "p.punctum")],
        check=True,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - began
    summary = done.stdout.strip().splitlines()[-1]  # "P: N processed, M failed, K already done"
    return {
        "files": 200,
        "cues_per_file": 10,
        "seconds": round(seconds, 1),
        "summary": summary,
        "goal_seconds": 60,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-cold", action="store_true", help="leave out the empty-cache run")
    parser.add_argument("--skip-batch", action="store_true", help="leave out the batch of 200 files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="punctum-startup-") as scratch:
        folder = Path(scratch)
        result: dict[str, object] = {
            "benchmark": "startup",
            "cpu_count": os.cpu_count(),
            "cpu_avx_flags": cpu_flags(),
            "punctuate_10_words": punctuate_warm(folder),
            "editor_sample": editor_first_suggestions(folder),
        }
        if not args.skip_batch:
            result["batch_200_files"] = batch_of_small_files(folder)
        if not args.skip_cold:
            result["punctuate_cold_cache"] = punctuate_cold(folder)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
