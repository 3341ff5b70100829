"""Slow work off the UI thread: one serialized worker, results handed back on the UI thread.

Loading the model, decoding audio and running inference go through ``Worker.submit``. The function
gets ``progress(text, fraction)`` and ``cancelled()``; it must not touch widgets or the project
(both belong to the UI thread). Its result, or its error as one line, comes back through queued
signals, so callbacks run on the UI thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal

from app.core.errors import failure_line

Work = Callable[[Callable[[str, float], None], Callable[[], bool]], Any]


class _Signals(QObject):
    progress = Signal(str, float)
    done = Signal(object)
    failed = Signal(str)
    cancelled = Signal()


class Task(QRunnable):
    def __init__(self, name: str, work: Work) -> None:
        super().__init__()
        self.name = name
        self.work = work
        self.signals = _Signals()
        self._cancel = threading.Event()
        self.setAutoDelete(False)

    def cancel(self) -> None:
        self._cancel.set()

    def run(self) -> None:
        if self._cancel.is_set():
            self.signals.cancelled.emit()
            return
        try:
            result = self.work(self.signals.progress.emit, self._cancel.is_set)
        except InterruptedError:
            self.signals.cancelled.emit()
        except Exception as error:  # a model or decoder failure must reach the user as a dialog
            self.signals.failed.emit(failure_line(error))
        else:
            # Finished before the cancel took hold: the result is good (and may be saved already).
            self.signals.done.emit(result)


class Worker(QObject):
    """Runs tasks one at a time, in order (the model and the decoder are not shared between threads)."""

    busy_changed = Signal(bool)
    progress = Signal(str, float)
    #: A task's own follow-up (storing its result, say) failed: the task's name and the reason.
    follow_up_failed = Signal(str, str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)
        self._tasks: list[Task] = []

    @property
    def busy(self) -> bool:
        return bool(self._tasks)

    def submit(
        self,
        name: str,
        work: Work,
        on_done: Callable[[Any], None],
        on_failed: Callable[[str], None],
        on_cancelled: Callable[[], None] | None = None,
    ) -> Task:
        task = Task(name, work)
        queued = Qt.ConnectionType.QueuedConnection
        task.signals.progress.connect(self.progress.emit, queued)
        task.signals.done.connect(lambda result: self._finish(task, on_done, result), queued)
        task.signals.failed.connect(lambda reason: self._finish(task, on_failed, reason), queued)
        task.signals.cancelled.connect(
            lambda: self._finish(task, lambda _: on_cancelled and on_cancelled(), None), queued
        )
        self._tasks.append(task)
        if len(self._tasks) == 1:
            self.busy_changed.emit(True)
        self.pool.start(task)
        return task

    def _finish(self, task: Task, callback: Callable[[Any], None], value: Any) -> None:
        if task in self._tasks:
            self._tasks.remove(task)
        try:
            callback(value)
        except Exception as error:  # raised in a Qt slot it would reach stderr only, unseen
            self.follow_up_failed.emit(task.name, str(error) or type(error).__name__)
        finally:
            if not self._tasks:
                self.busy_changed.emit(False)

    def cancel_all(self) -> None:
        for task in self._tasks:
            task.cancel()

    def wait(self, milliseconds: int = -1) -> bool:
        return bool(self.pool.waitForDone(milliseconds))
