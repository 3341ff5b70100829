"""The editor's responsiveness; prints JSON.

1. First paint: a two-hour caption file (2,000 cues, 20,000 words) whose suggestions the shipped
   model made (through the batch pipeline, stored in a project), opened in a new window; seconds
   from creating the window to the transcript's first painted frame. Goal: under 1 s.
2. Scrolling: the transcript paged from top to bottom; milliseconds per page.
3. Watchdog: a 10 ms timer on the UI thread while the window reads the sample's audio, starts the
   model and makes its suggestions, the recogniser listening (``sample_analysis_seconds``: until
   the heard suggestions are shown; goal 5 s); the longest gap between ticks is the longest the
   window froze.
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass
class Watch:
    """What a 10 ms timer on the UI thread saw while a window opened and punctuated a file."""

    seconds: float  # from the open request to the suggestions
    opened: float  # seconds until the session was there
    gaps: list[float]  # between ticks, sorted
    heard: bool = False  # whether the suggestions at the end were the recogniser's too

    @property
    def longest_ms(self) -> float | None:
        return round(self.gaps[-1] * 1000, 1) if self.gaps else None

    @property
    def p99_ms(self) -> float | None:
        return round(self.gaps[int(0.99 * (len(self.gaps) - 1))] * 1000, 1) if self.gaps else None

    @property
    def over_100ms(self) -> int:
        return sum(1 for gap in self.gaps if gap > 0.1)


def watch(app: Any, settings: Any, open_file: Callable[[Any], object]) -> Watch:
    from PySide6.QtCore import QTimer

    from app.ui.window import MainWindow

    window = MainWindow(settings=settings)
    window.show()
    ticks: list[float] = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start(10)
    began = time.perf_counter()
    open_file(window)
    opened: float | None = None
    while window.session is None or window.worker.busy or not window.session.analysed:
        app.processEvents()
        time.sleep(0.001)
        if opened is None and window.session is not None:
            opened = time.perf_counter() - began
        if time.perf_counter() - began > 600:
            break
    seconds = time.perf_counter() - began
    heard = (
        window.session is not None
        and window.session.project.report(window.session.file_id).get("evidence") == "heard"
    )
    for _ in range(50):  # let the views settle after the suggestions arrive
        app.processEvents()
        time.sleep(0.002)
    timer.stop()
    window.close()
    return Watch(seconds, opened or 0.0, sorted(b - a for a, b in itertools.pairwise(ticks)), heard)


def main() -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    with tempfile.TemporaryDirectory() as folder:
        os.environ["PUNCTUM_DATA_DIR"] = str(Path(folder) / "data")
        result = run(Path(folder))
    print(json.dumps(result, indent=2))


def run(folder: Path) -> dict[str, object]:
    from PySide6.QtCore import QEvent, QObject, QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from app.services.analysis import AudioUse
    from app.services.batch import import_folder, run_batch
    from app.services.batch_scheduler import BatchSettings
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
        run_batch(project, BatchSettings(audio=AudioUse.TEXT, workers=1))
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
    window.files.open_project(project_path)  # loaded on a worker thread; the paint marks its arrival
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
    sample_watch = watch(
        app,
        settings,
        lambda w: w.files.open_captions(
            sample / "sample.srt", sample / "sample.mp4", sample / "reference.txt"
        ),
    )

    # The same watchdog while the two-hour file (no media) is opened fresh, on a worker thread,
    # and punctuated.
    long_watch = watch(app, settings, lambda w: w.files.open_captions(source / "two-hours.srt"))

    return {
        "cues": CUES,
        "words": CUES * WORDS_PER_CUE,
        "suggestions": suggestions,
        "first_paint_seconds": round(first_paint, 3),
        "goal_first_paint_seconds": 1.0,
        "scroll_pages": pages,
        "scroll_ms_per_page": round(per_page * 1000, 1),
        "sample_analysis_seconds": round(sample_watch.seconds, 1),
        "sample_heard": sample_watch.heard,  # whether those seconds include the recogniser listening
        "goal_sample_heard_seconds": 5.0,
        "ui_longest_freeze_ms": sample_watch.longest_ms,
        "ui_freeze_p99_ms": sample_watch.p99_ms,
        "long_file_open_seconds": round(long_watch.opened, 2),
        "long_file_analysis_seconds": round(long_watch.seconds, 1),
        "long_file_analysis_longest_freeze_ms": long_watch.longest_ms,
        "long_file_analysis_freezes_over_100ms": long_watch.over_100ms,
        "goal_longest_freeze_ms": 100,
        "peak_rss_mb_ui_process": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


if __name__ == "__main__":
    main()
