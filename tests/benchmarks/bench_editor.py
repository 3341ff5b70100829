"""The editor's responsiveness; prints JSON.

1. First paint: a two-hour caption file (2,000 cues, 20,000 words) whose suggestions the shipped
   model made (through the batch pipeline, stored in a project), opened in a new window; seconds
   from creating the window to the transcript's first painted frame. Goal: under 1 s.
2. Scrolling: the transcript paged from top to bottom; milliseconds per page.
3. Watchdog: a 10 ms timer on the UI thread while the window reads the sample's audio, starts the
   model and makes its suggestions; the longest gap between ticks is the longest the window froze.
   Then the same while the two-hour file is opened afresh (read and parsed on a worker thread) and
   punctuated. Goal: under 100 ms.

Run: `.venv/bin/python -m tests.benchmarks.bench_editor` (offscreen Qt unless QT_QPA_PLATFORM is set).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CUES, WORDS_PER_CUE, CUE_MS = 2000, 10, 3600


def write_two_hours(path: Path) -> None:
    text = (ROOT / "resources" / "sample" / "reference.txt").read_text(encoding="utf-8")
    vocabulary = [w.strip(".,?!:;\"'").lower() for w in text.split()]
    rng = random.Random(11)
    blocks = []
    for number in range(CUES):
        start = number * CUE_MS
        words = [rng.choice(vocabulary) for _ in range(WORDS_PER_CUE)]
        lines = " ".join(words[:5]) + "\n" + " ".join(words[5:])
        blocks.append(f"{number + 1}\n{_time(start)} --> {_time(start + CUE_MS - 200)}\n{lines}\n")
    path.write_text("\n".join(blocks), encoding="utf-8")


def _time(ms: int) -> str:
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def main() -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    with tempfile.TemporaryDirectory() as folder:
        os.environ["PUNCTUM_DATA_DIR"] = str(Path(folder) / "data")
        result = run(Path(folder))
    print(json.dumps(result, indent=2))


def run(folder: Path) -> dict[str, object]:
    from PySide6.QtCore import QEvent, QObject, QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from app.services.batch import BatchSettings, import_folder, run_batch
    from app.store.project import Project
    from app.ui.window import MainWindow

    app = QApplication.instance() or QApplication([])
    settings = QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat)

    source = folder / "long"
    source.mkdir()
    write_two_hours(source / "two-hours.srt")
    project_path = folder / "long.punctum"
    with Project(project_path, create=True) as project:
        import_folder(source, project)
        run_batch(project, BatchSettings(use_audio=False, workers=1))
        suggestions = project.db.execute("SELECT COUNT(*) FROM suggestions").fetchone()[0]

    class FirstPaint(QObject):
        at: float | None = None

        def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
            if event.type() == QEvent.Type.Paint and self.at is None:
                QTimer.singleShot(0, self._painted)  # after the paint has been handled
            return False

        def _painted(self) -> None:
            if self.at is None:
                self.at = time.perf_counter()

    began = time.perf_counter()
    window = MainWindow(settings=settings)
    watcher = FirstPaint()
    window.transcript.viewport().installEventFilter(watcher)
    window.show()
    window.open_project(project_path)  # loaded on a worker thread; the paint marks its arrival
    while watcher.at is None and time.perf_counter() - began < 30:
        app.processEvents()
    first_paint = (watcher.at or time.perf_counter()) - began

    # Scrolling: page down through the whole transcript, painting each page.
    scrollbar = window.transcript.verticalScrollBar()
    pages = 0
    scroll_began = time.perf_counter()
    while scrollbar.value() < scrollbar.maximum():
        scrollbar.setValue(scrollbar.value() + scrollbar.pageStep())
        window.transcript.viewport().repaint()
        pages += 1
    per_page = (time.perf_counter() - scroll_began) / max(1, pages)
    window.close()

    # Watchdog: the UI thread's longest freeze while the sample is read and punctuated.
    sample = folder / "sample"
    shutil.copytree(ROOT / "resources" / "sample", sample)
    window = MainWindow(settings=settings)
    window.show()
    ticks: list[float] = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start(10)
    analysis_began = time.perf_counter()
    window.open_captions(sample / "sample.srt", sample / "sample.mp4", sample / "reference.txt")
    while window.session is None or window.worker.busy or not window.session.analysed:
        app.processEvents()
        time.sleep(0.001)
        if time.perf_counter() - analysis_began > 300:
            break
    analysis_seconds = time.perf_counter() - analysis_began
    timer.stop()
    gaps = sorted(b - a for a, b in itertools.pairwise(ticks))
    window.close()

    # The same watchdog while the two-hour file (no media) is opened fresh and punctuated.
    window = MainWindow(settings=settings)
    window.show()
    long_ticks: list[float] = []
    long_timer = QTimer()
    long_timer.timeout.connect(lambda: long_ticks.append(time.perf_counter()))
    long_timer.start(10)
    long_began = time.perf_counter()
    window.open_captions(source / "two-hours.srt")  # read and parsed on a worker thread
    long_opened: float | None = None
    while window.session is None or window.worker.busy or not window.session.analysed:
        app.processEvents()
        time.sleep(0.001)
        if long_opened is None and window.session is not None:
            long_opened = time.perf_counter()
        if time.perf_counter() - long_began > 600:
            break
    for _ in range(50):  # let the views settle after the suggestions arrive
        app.processEvents()
        time.sleep(0.002)
    long_timer.stop()
    long_gaps = sorted(b - a for a, b in itertools.pairwise(long_ticks))
    window.close()
    return {
        "cues": CUES,
        "words": CUES * WORDS_PER_CUE,
        "suggestions": suggestions,
        "first_paint_seconds": round(first_paint, 3),
        "goal_first_paint_seconds": 1.0,
        "scroll_pages": pages,
        "scroll_ms_per_page": round(per_page * 1000, 1),
        "sample_analysis_seconds": round(analysis_seconds, 1),
        "ui_longest_freeze_ms": round(gaps[-1] * 1000, 1) if gaps else None,
        "ui_freeze_p99_ms": round(gaps[int(0.99 * (len(gaps) - 1))] * 1000, 1) if gaps else None,
        "long_file_open_seconds": round((long_opened or long_began) - long_began, 2),
        "long_file_analysis_seconds": round(time.perf_counter() - long_began, 1),
        "long_file_analysis_longest_freeze_ms": round(long_gaps[-1] * 1000, 1) if long_gaps else None,
        "long_file_analysis_freezes_over_100ms": sum(1 for g in long_gaps if g > 0.1),
        "goal_longest_freeze_ms": 100,
        "peak_rss_mb_ui_process": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


if __name__ == "__main__":
    main()
