"""Review by exception: one row per gap, and the one rule that settles gaps by itself."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from app.core.commands import ApplyPolicy, accept_confident
from app.core.model import Casing, Source, Status, Suggestion
from app.core.triage import TriagePolicy, about_wrong, gaps_of, gaps_to_review, review_queue, triage


def _mark(sid: int, gap: int, mark: str, confidence: float, source: Source = Source.MODEL) -> Suggestion:
    return Suggestion(sid, gap, mark, confidence, source)


def _capital(sid: int, word: int, confidence: float = 0.95, source: Source = Source.REFERENCE) -> Suggestion:
    return Suggestion(sid, word, "", confidence, source, casing=Casing.CAPITALISED)


def test_a_gap_is_one_row_with_the_capital_its_sentence_mark_calls_for() -> None:
    suggestions = [
        _mark(1, 4, ".", 0.95, Source.REFERENCE),
        _capital(2, 5),
        _mark(3, 4, ".", 0.97),
        _capital(4, 9, 0.8, Source.MODEL),  # a name's capital, on its own row
    ]
    rows = gaps_of(suggestions)
    assert [(row.index, [s.id for s in row.marks], [s.id for s in row.capitals]) for row in rows] == [
        (4, [1, 3], [2]),
        (9, [], [4]),
    ]
    assert gaps_to_review(suggestions) == 2


def test_agreement_settles_a_gap_with_its_capital_and_disagreement_goes_first_in_the_queue() -> None:
    suggestions = [
        _mark(1, 4, ".", 0.95, Source.REFERENCE),
        _capital(2, 5),
        _mark(3, 4, ".", 0.97),  # agrees with the reference: settled, capital and all
        _mark(4, 10, ",", 0.95, Source.REFERENCE),
        _mark(5, 10, "?", 0.6),  # disagrees
        _mark(6, 20, ",", 0.99),  # the model alone, but the file has a reference: a person decides
        _mark(7, 30, ".", 0.75, Source.REFERENCE),  # the reference alone
    ]
    result = triage(suggestions, TriagePolicy(), has_reference=True)
    assert result.accepted == [1, 2]
    assert [gap.index for gap in result.queue] == [10, 30, 20]  # disagreement, then least sure


def test_decided_gaps_are_neither_settled_nor_queued_again() -> None:
    decided = Suggestion(1, 3, ",", 0.5, Source.MODEL, status=Status.REJECTED)
    result = triage([decided], TriagePolicy(), has_reference=False)
    assert result.accepted == [] and result.queue == []
    assert gaps_to_review([decided]) == 0


def test_apply_triage_is_the_same_rule_for_the_command_line_batch_and_editor() -> None:
    suggestions = [_mark(1, 4, ".", 0.95, Source.REFERENCE), _mark(2, 4, ".", 0.6), _mark(3, 8, ",", 0.99)]
    # With a reference in the file, the model's lone comma waits for a person, however sure.
    assert accept_confident(suggestions, ApplyPolicy("triage", precision_target=0.9)) == [1]
    assert accept_confident([suggestions[2]], ApplyPolicy("triage", precision_target=0.9)) == [3]


def test_one_capital_per_word_comes_with_a_settled_sentence_mark() -> None:
    suggestions = [
        _mark(1, 4, ".", 0.95, Source.REFERENCE),
        _mark(2, 4, ".", 0.97),
        _capital(3, 5, 0.95, Source.REFERENCE),
        _capital(4, 5, 0.99, Source.MODEL),
    ]
    assert triage(suggestions, TriagePolicy(), has_reference=True).accepted == [1, 3]
    assert accept_confident(suggestions, ApplyPolicy("triage", precision_target=0.98)) == [1, 3]


def _document_with_proposals():
    from app.core.model import Casing as _Casing
    from tests.test_commands import make_document

    document = make_document()  # "so what is this | it works"
    document.suggestions.clear()
    document.add_suggestions(
        [
            _mark(1, 3, "?", 0.95, Source.REFERENCE),
            Suggestion(2, 4, "", 0.95, Source.REFERENCE, casing=_Casing.CAPITALISED),
            _mark(3, 3, "?", 0.9),  # agrees with the reference
            _mark(4, 0, ",", 0.99),
            _mark(5, 5, ".", 0.7),
        ]
    )
    return document


def test_settle_is_one_undoable_step_and_a_new_policy_reopens_what_the_old_one_settled() -> None:
    from app.core import commands
    from app.core.history import History

    document = _document_with_proposals()
    history = History(document)
    first = triage(document.suggestions, TriagePolicy(precision_target=0.6), has_reference=False)
    assert sorted(first.accepted) == [1, 2, 4, 5]
    history.do(commands.settle(document, [], first.accepted))
    assert [w.rendered() for w in document.words()] == ["so,", "what", "is", "this?", "It", "works."]
    assert document.suggestion(3).status is Status.ACCEPTED  # the agreeing rival goes with it
    # The stricter policy: everything the first accepted goes back to pending, then it decides.
    reopen = [1, 2, 3, 4, 5]
    reopened = [replace(s, status=Status.PENDING) for s in document.suggestions]
    second = triage(reopened, TriagePolicy(precision_target=0.98), has_reference=False)
    history.do(commands.settle(document, reopen, second.accepted))
    assert [w.rendered() for w in document.words()] == ["so,", "what", "is", "this?", "It", "works"]
    assert document.suggestion(5).status is Status.PENDING
    history.undo()
    assert [w.rendered() for w in document.words()] == ["so,", "what", "is", "this?", "It", "works."]
    history.undo()
    assert [w.rendered() for w in document.words()] == ["so", "what", "is", "this", "it", "works"]
    assert all(s.status is Status.PENDING for s in document.suggestions)


def test_the_review_queue_leaves_out_what_the_rule_settled_but_keeps_what_a_person_decided() -> None:
    suggestions = [
        _mark(
            1,
            3,
            ".",
            0.95,
            Source.REFERENCE,
        ),
        _mark(2, 3, ".", 0.9),
        _mark(3, 7, ",", 0.6),
        replace(_mark(4, 9, "?", 0.5), status=Status.REJECTED),  # decided by a person
    ]
    suggestions[0] = replace(suggestions[0], status=Status.ACCEPTED)
    suggestions[1] = replace(suggestions[1], status=Status.ACCEPTED)
    queue = review_queue(suggestions, settled_by_rule={1, 2})
    assert [gap.index for gap in queue] == [9, 7]  # least sure first, the settled gap left out
    assert [gap.index for gap in review_queue(suggestions, settled_by_rule=set())] == [9, 7, 3]


def test_the_model_alone_settles_its_surest_while_the_expected_share_right_holds_the_target() -> None:
    # Confidence is the calibrated probability that a suggestion is right; the default target 0.97.
    suggestions = [
        _mark(1, 3, ".", 0.99),
        _capital(2, 4, 0.99, Source.MODEL),  # the sentence's capital, settled with its mark
        _mark(3, 7, ",", 0.975),
        _mark(4, 9, ".", 0.90),  # with it, the settled would be 95.5% right on average
        _mark(5, 12, ",", 0.5),
    ]
    result = triage(suggestions, TriagePolicy(), has_reference=False)
    assert sorted(result.accepted) == [1, 2, 3]
    assert [row.index for row in result.queue] == [12, 9]  # the least sure first
    assert about_wrong(suggestions, result.accepted) == pytest.approx(0.01 + 0.025)
    # A looser target takes the next one too, a stricter one less; with a reference for the file
    # the model alone settles nothing.
    assert sorted(triage(suggestions, TriagePolicy(precision_target=0.95), has_reference=False).accepted) == [
        1,
        2,
        3,
        4,
    ]
    assert sorted(
        triage(suggestions, TriagePolicy(precision_target=0.985), has_reference=False).accepted
    ) == [
        1,
        2,
    ]
    assert triage(suggestions, TriagePolicy(), has_reference=True).accepted == []


@pytest.mark.parametrize(
    ("reference_given", "from_reference"),
    [(True, False), (False, True)],
    ids=["a reference path that gives no suggestions", "reference suggestions without a path"],
)
def test_batch_and_the_editor_agree_whether_a_file_has_a_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference_given: bool, from_reference: bool
) -> None:
    """Whether a file has a reference is decided once (``commands.has_reference``): `batch --apply
    triage` settles what the editor's rule settles, with the reference's path set and none of
    its suggestions, or the reverse."""
    from contextlib import nullcontext

    from app.services import batch_scheduler
    from app.services.batch_job import BatchJob, FileOutcome
    from app.services.batch_scheduler import BatchSettings, BatchSummary, run_pending
    from app.services.folder_pairing import FileGroup
    from app.services.projects import add_caption_file
    from app.services.review import ReviewSession
    from app.store.project import FileResults, Project

    captions = tmp_path / "talk.srt"
    captions.write_text("1\n00:00:01,000 --> 00:00:04,000\nso what is this it works\n", encoding="utf-8")
    reference = tmp_path / "talk.ref.txt"
    reference.write_text("So what is this? It works.\n", encoding="utf-8")
    suggestions = [
        _mark(1, 0, ",", 0.99),  # the model alone, sure: settled only in a file with no reference
        _mark(2, 3, "?", 0.97),
        _mark(3, 5, ".", 0.98),
    ]
    if from_reference:
        suggestions.append(_mark(4, 3, "?", 0.95, Source.REFERENCE))  # agrees with 2: settled

    class Workers:
        capacity = 1

        def __init__(self) -> None:
            self.out: list[int] = []

        def submit(self, job: BatchJob, stem: str) -> None:
            self.out.append(job.file_id)

        def next_finished(self) -> tuple[int, FileOutcome]:
            return self.out.pop(0), FileOutcome(FileResults(list(suggestions), {"language": "en"}))

    monkeypatch.setattr(batch_scheduler, "prepare_model", lambda *_: None)
    with Project(tmp_path / "p.punctum", create=True) as project:
        group = FileGroup("talk", captions, "en", reference=reference if reference_given else None)
        add_caption_file(project, group)
        policy = ApplyPolicy("triage", precision_target=0.9)
        run_pending(project, BatchSettings(policy=policy), BatchSummary(), lambda _: nullcontext(Workers()))
    session = ReviewSession.open_project(tmp_path / "p.punctum")
    try:
        assert session.has_reference
        by_batch = session.settled_by_rule()
        assert by_batch == ({2, 4} if from_reference else set())  # the model alone settles nothing
        session.settle(TriagePolicy(precision_target=policy.precision_target))
        assert session.settled_by_rule() == by_batch
    finally:
        session.close()


def test_punctuate_gives_the_model_alone_nothing_to_settle_in_a_file_given_a_reference() -> None:
    """A reference that proposed no mark (its words and marks already the captions') still makes
    the file one with a reference, where triage lets the model alone settle nothing."""
    from app.core.history import History
    from app.formats import parse_document
    from app.services.punctuate import apply_suggestions

    captions = b"1\n00:00:01,000 --> 00:00:04,000\nso what is this it works\n"
    settled = {}
    for given in (True, False):
        document = parse_document(captions, "srt", Path("talk.srt"))
        document.add_suggestions([_mark(1, 0, ",", 0.99)])
        policy = ApplyPolicy("triage", precision_target=0.9)
        settled[given] = apply_suggestions(document, History(document), policy, reference_given=given)
    assert settled == {True: [], False: [1]}
