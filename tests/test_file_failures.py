"""One rule turns a file's failure into its outcome (local workers, Ray workers, transcribing a
folder) while bugs stay visible; the batch scheduling loop driven directly with fake workers; no
audio evidence where the media has no audio; ``status`` leaves nothing beside the project."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile

from app.core.errors import PunctumError
from app.services.batch_job import BatchJob, FileOutcome
from app.services.batch_scheduler import BatchSettings, BatchSummary, run_pending
from app.services.folder_pairing import FileGroup
from app.services.projects import add_caption_file
from app.store.project import DONE, FAILED, PENDING, FileResults, Project
from tests.conftest import SAMPLE, run_punctum

punctum = functools.partial(run_punctum, timeout=120)
CAPTIONS = "1\n00:00:01,000 --> 00:00:03,000\nhello there how are you\n"


# --- the rule ---------------------------------------------------------------------------------


class _Recogniser:
    """Stands in for Whisper: CTranslate2's RuntimeError on "bad", a bug on "buggy", words otherwise."""

    next = ""  # the name of the medium being recognised

    def check_language(self, language: str | None) -> None:
        pass

    def transcribe(self, audio: np.ndarray, language: Any = None, *_: Any) -> Any:
        from app.ml.transcriber import RecognisedWord, Recognition

        if self.next == "bad":
            raise RuntimeError("CTranslate2: the decoder failed on this input\nmore detail")
        if self.next == "buggy":
            raise KeyError("a bug")
        return Recognition([RecognisedWord("Hello.", 0.1, 0.5, 0.9)], "en", 1.0, len(audio) / 16_000)


def _folder_of_tones(folder: Path, names: list[str]) -> None:
    folder.mkdir()
    for name in names:
        tone = (0.2 * np.sin(np.arange(16_000) * 0.1)).astype(np.float32)
        soundfile.write(folder / f"{name}.wav", tone, 16_000)


def test_a_recogniser_error_on_one_file_fails_that_file_and_the_folder_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.services import transcribe

    recogniser = _Recogniser()
    monkeypatch.setattr(transcribe, "open_recogniser", lambda *_: recogniser)
    monkeypatch.setattr(transcribe, "decode_audio", lambda media: _tone_named(recogniser, media))
    folder = tmp_path / "talks"
    _folder_of_tones(folder, ["bad", "good"])
    done = transcribe.transcribe_folder(folder)
    assert [t.output.name for t in done.transcribed] == ["good.vtt"]
    assert list(done.failed.values()) == ["RuntimeError: CTranslate2: the decoder failed on this input"]
    assert not (folder / "bad.vtt").exists()
    # A bug is no file's fault: it is not passed off as one.
    (folder / "good.vtt").unlink()
    _folder_of_tones(tmp_path / "more", ["buggy"])
    with pytest.raises(KeyError):
        transcribe.transcribe_folder(tmp_path / "more")


def _tone_named(recogniser: _Recogniser, media: Path) -> np.ndarray:
    recogniser.next = media.stem
    return np.zeros(16_000, dtype=np.float32)


class _Punctuator:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def load(self) -> None:
        raise self.error


def _job(tmp_path: Path) -> BatchJob:
    from app.services.analysis import AnalysisRequest

    captions = tmp_path / "talk.srt"
    captions.write_text(CAPTIONS, encoding="utf-8")
    return BatchJob(1, AnalysisRequest.from_file(captions))


def test_a_worker_answers_a_file_s_failure_as_its_outcome_and_raises_a_bug(tmp_path: Path) -> None:
    from app.services.batch_job import process_job
    from app.services.local_pool import LocalPool

    job = _job(tmp_path)
    failed = process_job(job, lambda: _Punctuator(RuntimeError("onnxruntime: bad allocation")))  # type: ignore[arg-type, return-value]
    assert failed.error == "RuntimeError: onnxruntime: bad allocation"
    with pytest.raises(IndexError):
        process_job(job, lambda: _Punctuator(IndexError("list index out of range")))  # type: ignore[arg-type, return-value]
    # The pool hears the bug from its worker and records it as one, naming it.
    pool = LocalPool(None, 1, None)  # type: ignore[arg-type]
    pool._crashed(1, IndexError("list index out of range"))
    _, outcome = pool.finished.get()
    assert (
        outcome.error is not None
        and "a bug in Punctum (IndexError: list index out of range)" in outcome.error
    )


def test_a_ray_worker_tells_a_model_that_fails_apart_from_storage_it_cannot_see(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.services import cluster_worker

    class Models:
        loads = 0

        def punctuator(self, *_: Any, **__: Any) -> _Punctuator:
            return _Punctuator(PunctumError("model/weights.safetensors: weights are not finite"))

    here = cluster_worker.FileWorker(BatchSettings(model=str(tmp_path)))
    here.models = Models()  # type: ignore[assignment]
    with pytest.raises(cluster_worker.WorkerCannotReadError) as refused:
        here._punctuator()
    assert "weights are not finite" in str(refused.value) and "every node" not in str(refused.value)
    elsewhere = cluster_worker.FileWorker(BatchSettings(model=str(tmp_path / "not-on-this-node")))
    elsewhere.models = Models()  # type: ignore[assignment]
    with pytest.raises(cluster_worker.WorkerCannotReadError, match="every node sees"):
        elsewhere._punctuator()


def test_the_review_shows_what_cannot_be_done_and_lets_a_bug_through() -> None:
    pytest.importorskip("PySide6")
    from app.ui.review_controller import ReviewController

    class Window:
        cue_model = gap_model = session = current_id = None

        def __init__(self) -> None:
            self.shown: list[tuple[str, str]] = []

        def show_error(self, title: str, text: str) -> None:
            self.shown.append((title, text))

        def show_counts(self) -> None:
            pass

    window = Window()
    controller = ReviewController(window)  # type: ignore[arg-type]

    def refused() -> None:
        raise PunctumError("nothing to undo")

    def buggy() -> None:
        raise KeyError(7)

    controller._run(refused)
    assert window.shown == [("That cannot be done", "nothing to undo")]
    with pytest.raises(KeyError):
        controller._run(buggy)


# --- the scheduling loop, driven directly -------------------------------------------------------


class _Workers:
    """Fake workers: answer in the order handed out; the file named "broken" fails; the answer
    numbered ``interrupt_at`` is a Ctrl+C."""

    def __init__(self, capacity: int, interrupt_at: int | None = None) -> None:
        self.capacity = capacity
        self.out: list[tuple[int, str]] = []
        self.most_out = 0
        self.answers = 0
        self.interrupt_at = interrupt_at

    def submit(self, job: BatchJob, stem: str) -> None:
        self.out.append((job.file_id, stem))
        self.most_out = max(self.most_out, len(self.out))

    def next_finished(self) -> tuple[int, FileOutcome]:
        self.answers += 1
        if self.answers == self.interrupt_at:
            raise KeyboardInterrupt
        file_id, stem = self.out.pop(0)
        # A file's results as an analysis leaves them: its gaps' readings kept (none here).
        done = FileOutcome(FileResults([], {}, readings=[]))
        return file_id, FileOutcome(error="it is broken") if stem == "broken" else done


def _project(tmp_path: Path, stems: list[str]) -> Project:
    project = Project(tmp_path / "p.punctum", create=True)
    for stem in stems:
        captions = tmp_path / f"{stem}.srt"
        captions.write_text(CAPTIONS, encoding="utf-8")
        add_caption_file(project, FileGroup(stem, captions))
    return project


def _start(workers: _Workers) -> Any:
    from contextlib import nullcontext

    return lambda files: nullcontext(workers)


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.services import batch_scheduler

    monkeypatch.setattr(batch_scheduler, "prepare_model", lambda *_: None)


def test_the_loop_keeps_workers_at_capacity_and_commits_each_file_once(
    tmp_path: Path, no_model: None
) -> None:
    stems = ["a", "b", "broken", "c", "d"]
    project = _project(tmp_path, stems)
    committed: list[int] = []
    finish, fail = project.finish, project.fail
    project.finish = lambda file_id, *rest: (committed.append(file_id), finish(file_id, *rest))[1]  # type: ignore[method-assign]
    project.fail = lambda file_id, *rest: (committed.append(file_id), fail(file_id, *rest))[1]  # type: ignore[method-assign]
    workers, heard = _Workers(capacity=2), []
    summary = BatchSummary()
    run_pending(
        project, BatchSettings(), summary, _start(workers), lambda stem, state: heard.append((stem, state))
    )
    assert workers.most_out == 2
    assert sorted(committed) == sorted(e.id for e in project.files())  # each file once
    assert (summary.done, summary.failed, summary.failures) == (4, 1, {"broken": "it is broken"})
    assert {e.stem: e.state for e in project.files()} == {s: FAILED if s == "broken" else DONE for s in stems}
    assert [s for s, state in heard if state == "started"] == stems
    # A second run finds nothing to do and counts what the first did.
    again = BatchSummary()
    run_pending(project, BatchSettings(), again, _start(_Workers(capacity=2)))
    assert (again.done, again.skipped) == (0, 4)
    project.close()


def test_ctrl_c_in_the_loop_puts_the_files_still_out_back_to_pending(tmp_path: Path, no_model: None) -> None:
    project = _project(tmp_path, ["a", "b", "c", "d"])
    workers = _Workers(capacity=2, interrupt_at=2)
    with pytest.raises(KeyboardInterrupt):
        run_pending(project, BatchSettings(), BatchSummary(), _start(workers))
    states = {e.stem: e.state for e in project.files()}
    assert states == {"a": DONE, "b": PENDING, "c": PENDING, "d": PENDING}, states
    project.close()


# --- no audio evidence where there is no audio ----------------------------------------------------


def test_captions_running_past_the_media_get_one_warning_and_no_measures_there(tmp_path: Path) -> None:
    import soundfile

    from app.audio.decode import decode_audio
    from app.core.audio_format import SAMPLE_RATE
    from app.formats import read_document
    from app.services.gap_evidence import gap_evidence

    media = tmp_path / "short.wav"
    soundfile.write(media, decode_audio(SAMPLE / "sample.mp4")[: 4 * SAMPLE_RATE], SAMPLE_RATE)
    document = read_document(SAMPLE / "sample.srt")
    starts = [cue.start / 1000 for cue in document.cues for _ in cue.words]  # of each word's cue
    evidence = gap_evidence(document, media)
    assert len(evidence.warnings) == 1 and "past the end of the media" in evidence.warnings[0]
    assert evidence.measures is not None
    assert all(m.pitch_slope is None for m, start in zip(evidence.measures, starts, strict=True) if start > 4)
    assert any(m.pitch_slope is not None for m in evidence.measures)  # where there is audio, it is measured
    # The model reads the captions' own timings, with the media or without it.
    assert evidence.vectors == gap_evidence(document).vectors and set(evidence.kinds) <= {"text", "timing"}
    # Media as long as the captions: no warning.
    assert gap_evidence(document, SAMPLE / "sample.mp4").warnings == []


# --- status only reads ------------------------------------------------------------------------------


def test_status_leaves_nothing_beside_the_project(tmp_path: Path) -> None:
    _project(tmp_path, ["a"]).close()
    before = sorted(p.name for p in tmp_path.iterdir())
    result = punctum("status", str(tmp_path / "p.punctum"))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_media_under_a_second_is_said_to_last_what_it_lasts(tmp_path: Path) -> None:
    import soundfile

    from app.audio.decode import decode_audio
    from app.core.audio_format import SAMPLE_RATE
    from app.formats import read_document
    from app.services.gap_evidence import gap_evidence

    media = tmp_path / "half.wav"
    soundfile.write(media, decode_audio(SAMPLE / "sample.mp4")[: SAMPLE_RATE // 2], SAMPLE_RATE)
    evidence = gap_evidence(read_document(SAMPLE / "sample.srt"), media)
    assert len(evidence.warnings) == 1 and "past the end of the media (0.5 s)" in evidence.warnings[0]
