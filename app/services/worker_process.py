"""Slow work in a child process: reading audio, transcribing it and running the model.

Model loading and parts of decoding hold Python's global lock for a second or more at a time, which
would freeze a window running them on a thread. In a child process they cannot: the caller only
waits on a pipe. The child keeps the loaded model and the last audio it measured, so later calls
are quick; cancelling ends the child at once, and the next call starts a fresh one.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from app.core.errors import PunctumError, failure_line

if TYPE_CHECKING:
    from app.services.analysis import Analysis, AnalysisRequest, Progress
    from app.services.suggestions import TextReading
    from app.services.transcribe import Transcript
    from app.services.waveform import Waveform


class BackgroundError(PunctumError):
    """The background process failed or stopped."""


class WorkerProcess:
    """A child process that reads audio and runs the model; each call waits for its answer."""

    def __init__(self) -> None:
        self._process: Any = None
        self._connection: Connection | None = None
        self._busy = False  # between sending a call and its answer

    def _ensure(self) -> Connection:
        if self._process is None or not self._process.is_alive() or self._connection is None:
            self.stop()
            context = multiprocessing.get_context("spawn")
            parent, child = context.Pipe()
            self._process = context.Process(target=_serve, args=(child,), daemon=True, name="punctum-worker")
            self._process.start()
            child.close()
            self._connection = parent
        return self._connection

    def read_audio(
        self, media: Path, progress: Progress | None = None, cancelled: Callable[[], bool] | None = None
    ) -> Waveform:
        """The media's waveform; the child keeps its audio analysis for the next ``analyse``."""
        return cast("Waveform", self._call(_read_audio, (media,), progress, cancelled))

    def analyse(
        self,
        request: AnalysisRequest,
        model: str | None = None,
        progress: Progress | None = None,
        cancelled: Callable[[], bool] | None = None,
        reading: TextReading | None = None,
    ) -> Analysis:
        """``app.services.analysis.analyse`` in the child, with ``model`` (the shipped one if None)
        loaded once and kept, and ``reading``, an earlier analysis's text reading, reused. The
        caller stores the results: the child writes no project."""
        return cast("Analysis", self._call(_analyse, (request, model, reading), progress, cancelled))

    def transcribe(
        self,
        media: Path,
        output: Path,
        progress: Progress | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> Transcript:
        """``app.services.transcribe.transcribe_media`` in the child, the recogniser loaded once and
        kept (the listener's is another); a cancel ends the child at once."""
        return cast("Transcript", self._call(_transcribe, (media, output), progress, cancelled))

    def _call(
        self,
        function: Callable[..., Any],
        arguments: tuple[Any, ...],
        progress: Progress | None,
        cancelled: Callable[[], bool] | None,
    ) -> Any:
        """Have the child run ``function`` (of this module) on ``arguments`` and its progress, and
        return its answer; ``InterruptedError`` when cancelled."""
        connection = self._ensure()
        connection.send((function, arguments))
        self._busy = True
        try:
            return self._answer(connection, progress, cancelled)
        finally:
            self._busy = False

    def _answer(
        self, connection: Connection, progress: Progress | None, cancelled: Callable[[], bool] | None
    ) -> Any:
        while True:
            if cancelled is not None and cancelled():
                self.stop()
                raise InterruptedError("cancelled")
            try:
                ready = connection.poll(0.05)
            except (EOFError, OSError):
                ready = False
            if not ready:
                if not self._process.is_alive():
                    code = self._process.exitcode
                    self.stop()
                    raise BackgroundError(f"the background process stopped unexpectedly (exit code {code})")
                continue
            try:
                kind, payload = connection.recv()
            except (EOFError, OSError):
                continue  # the liveness check above reports it
            if kind == "progress":
                if progress is not None:
                    progress(*payload)
            elif kind == "done":
                return payload
            else:
                raise BackgroundError(str(payload))

    def stop(self) -> None:
        """End the child. Closing the pipe lets an idle child return by itself: a killed one leaves
        the semaphores its libraries made registered, and Python then reports them as leaked on
        the user's terminal. A busy one (a cancel) is killed at once.

        An idle child usually returns within a fraction of a second; the 5 s allowed cover a
        machine busy with other work, where unloading torch takes longer."""
        if self._connection is not None:
            self._connection.close()
        if self._process is not None:
            if self._busy:
                self._process.terminate()
            self._process.join(5)
            if self._process.is_alive():
                self._process.terminate()
                self._process.join(5)
        self._process = None
        self._connection = None
        self._busy = False


# --- in the child -----------------------------------------------------------------------------

_STATE: dict[str, Any] = {}


def _read_audio(media: Path, progress: Progress) -> Waveform:
    from app.audio.analysis import analyse_media
    from app.services.waveform import Waveform

    progress("Reading the audio", 0.0)
    track = analyse_media(media, lambda fraction: progress("Reading the audio", fraction))
    _STATE["track"] = (str(media), track)
    return Waveform.from_track(track)


def _analyse(
    request: AnalysisRequest, model: str | None, reading: TextReading | None, progress: Progress
) -> Analysis:
    from app.services.analysis import analyse
    from app.services.model import ModelCache

    models: ModelCache = _STATE.setdefault("models", ModelCache())
    # Preparing a model the cache lacks takes about 20 s: the editor shows that message as progress.
    punctuator = models.punctuator(model, log=lambda text: progress(text[:1].upper() + text[1:], -1.0))
    media = request.media
    known = _STATE.get("track")
    track = known[1] if known and media is not None and known[0] == str(media) else None
    analysis = analyse(request, punctuator, progress, track=track, reading=reading)
    analysis.track = None  # the caller has the waveform; the frames stay here
    return analysis


def _transcribe(media: Path, output: Path, progress: Progress) -> Transcript:
    from app.services.transcribe import open_recogniser, transcribe_media

    if "recogniser" not in _STATE:
        progress("Loading the speech recogniser", -1.0)
        _STATE["recogniser"] = open_recogniser()
    return transcribe_media(
        media,
        output,
        _STATE["recogniser"],
        progress=lambda share: progress("Transcribing the speech", share),
    )


def _serve(connection: Connection) -> None:
    import warnings

    from app.services.parent_watch import start_worker_process

    start_worker_process()
    warnings.filterwarnings("ignore")

    def progress(text: str, fraction: float) -> None:
        connection.send(("progress", (text, fraction)))

    while True:
        try:
            function, arguments = connection.recv()
        except (EOFError, OSError):
            return  # the parent has gone
        try:
            result = function(*arguments, progress)
        except Exception as error:  # the parent shows it as one line in a dialog
            connection.send(("error", failure_line(error)))
        else:
            connection.send(("done", result))
