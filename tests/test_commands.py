"""Every editing command: do changes the document, undo restores it exactly, redo repeats it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace

import pytest

from app.core import commands
from app.core.history import History, Step
from app.core.model import Casing, Cue, Document, Slot, Source, Status, Suggestion, Word


def make_document() -> Document:
    words = [Word("so"), Word("what"), Word("is"), Word("this"), Word("it"), Word("works")]
    cues = [
        Cue(1, 0, 1000, words[:4], "so what is this", _layout(4)),
        Cue(2, 1000, 2000, words[4:], "it works", _layout(2)),
    ]
    document = Document(cues, "srt")
    document.add_suggestions(
        [
            Suggestion(1, 0, ",", 0.6, Source.MODEL, {"": 0.4, ",": 0.6}),
            Suggestion(2, 3, "?", 0.9, Source.MODEL, {"": 0.05, "?": 0.9, ".": 0.05}),
            Suggestion(3, 5, ".", 0.97, Source.REFERENCE),
        ]
    )
    return document


def _layout(count: int) -> list[str | tuple[Slot, int]]:
    layout: list[str | tuple[Slot, int]] = []
    for position in range(count):
        if position:
            layout.append(" ")
        layout += [(Slot.WORD, position), (Slot.MARK, position)]
    return layout


def check_reversible(build: Callable[[Document], Step], change: Callable[[Document], None]) -> Document:
    """Apply the step built by ``build``; ``change`` makes the expected result on a copy by hand."""
    document = make_document()
    original = copy.deepcopy(document)
    expected = copy.deepcopy(document)
    change(expected)
    history = History(document)
    assert history.do(build(document))
    assert document == expected
    assert document != original
    assert document.is_modified
    history.undo()
    assert document == original
    assert not document.is_modified
    history.redo()
    assert document == expected
    return document


def test_accept_writes_the_mark_and_marks_the_suggestion() -> None:
    def change(d: Document) -> None:
        d.put_word(3, Word("this", mark="?"))
        d.put_suggestion(replace(d.suggestion(2), status=Status.ACCEPTED))

    document = check_reversible(lambda d: commands.accept(d, 2), change)
    assert document.cues[0].text() == "so what is this?"


def test_reject_leaves_the_text() -> None:
    def change(d: Document) -> None:
        d.put_suggestion(replace(d.suggestion(1), status=Status.REJECTED))

    document = check_reversible(lambda d: commands.reject(d, 1), change)
    assert document.cues[0].text() == "so what is this"


def test_rejecting_an_accepted_suggestion_takes_its_mark_away() -> None:
    document = make_document()
    history = History(document)
    history.do(commands.accept(document, 1))
    assert document.word(0).mark == ","
    history.do(commands.reject(document, 1))
    assert document.word(0).mark == ""
    assert document.suggestion(1).status is Status.REJECTED
    history.undo()
    assert document.word(0).mark == ","
    assert document.suggestion(1).status is Status.ACCEPTED


def test_accept_many_is_one_step() -> None:
    def change(d: Document) -> None:
        for sid, gap, mark in ((1, 0, ","), (2, 3, "?"), (3, 5, ".")):
            d.put_word(gap, Word(d.word(gap).text, mark=mark))
            d.put_suggestion(replace(d.suggestion(sid), status=Status.ACCEPTED))

    document = check_reversible(lambda d: commands.accept_many(d, [1, 2, 3]), change)
    assert " ".join(c.text() for c in document.cues) == "so, what is this? it works."
    history = History(document)
    history.do(commands.reject(document, 1))
    assert history.undo_description == "Reject suggestion"


def test_accept_many_refuses_two_marks_for_one_gap() -> None:
    document = make_document()
    document.add_suggestions([Suggestion(9, 3, ".", 0.5, Source.REFERENCE)])
    with pytest.raises(commands.EditError):
        commands.accept_many(document, [2, 9])


def test_set_mark_records_the_editors_decision() -> None:
    def change(d: Document) -> None:
        d.put_word(1, Word("what", mark=":"))
        d.suggestions.append(Suggestion(4, 1, ":", 1.0, Source.EDITOR, {}, Status.ACCEPTED))

    document = check_reversible(lambda d: commands.set_mark(d, 1, ":"), change)
    assert document.suggestions[-1].source is Source.EDITOR


def test_edit_word_keeps_mark_and_timing() -> None:
    def change(d: Document) -> None:
        d.put_word(2, Word("was"))

    check_reversible(lambda d: commands.edit_word(d, 2, "was"), change)


@pytest.mark.parametrize("text", ["", "two words", " "])
def test_edit_word_refuses_what_is_not_one_word(text: str) -> None:
    with pytest.raises(commands.EditError):
        commands.edit_word(make_document(), 0, text)


def test_set_mark_refuses_letters() -> None:
    with pytest.raises(commands.EditError):
        commands.set_mark(make_document(), 0, "a.")


def test_change_counter_follows_undo_and_save() -> None:
    document = make_document()
    history = History(document)
    history.do(commands.accept(document, 1))
    document.mark_saved()
    assert not document.is_modified
    history.undo()
    assert document.is_modified  # the file still has the comma
    history.redo()
    assert not document.is_modified


def test_a_step_that_changes_nothing_is_not_recorded() -> None:
    document = make_document()
    history = History(document)
    history.do(commands.accept(document, 1))
    assert not history.do(commands.accept(document, 1))
    history.undo()
    assert not history.can_undo
    assert document.word(0).mark == ""


def test_new_step_clears_redo_and_listeners_hear_every_change() -> None:
    document = make_document()
    history = History(document)
    heard: list[tuple[str, bool]] = []
    history.listeners.append(lambda step, undone: heard.append((step.description, undone)))
    history.do(commands.accept(document, 1))
    history.undo()
    assert history.can_redo
    history.do(commands.accept(document, 2))
    assert not history.can_redo
    assert heard == [("Accept suggestion", False), ("Accept suggestion", True), ("Accept suggestion", False)]


def test_suggestions_must_point_at_a_word() -> None:
    with pytest.raises(IndexError):
        make_document().add_suggestions([Suggestion(7, 6, ".", 1.0, Source.MODEL)])


def test_change_mark_turns_the_suggestion_down_and_writes_the_editors_mark() -> None:
    def change(d: Document) -> None:
        d.put_word(3, Word("this", mark="."))
        d.put_suggestion(replace(d.suggestion(2), status=Status.REJECTED))
        d.suggestions.append(Suggestion(4, 3, ".", 1.0, Source.EDITOR, {}, Status.ACCEPTED))

    check_reversible(lambda d: commands.change_mark(d, 2, "."), change)


def test_change_mark_to_the_proposed_mark_accepts_it() -> None:
    document = make_document()
    step = commands.change_mark(document, 2, "?")
    History(document).do(step)
    assert document.suggestion(2).status is Status.ACCEPTED
    assert document.word(3).mark == "?"


def test_suggestion_lookup_follows_the_list_as_it_changes() -> None:
    document = make_document()
    assert document.suggestion(3).gap == 5
    document.suggestions.remove(document.suggestion(1))  # as undoing an added suggestion does
    assert document.suggestion(3).gap == 5
    with pytest.raises(KeyError):
        document.suggestion(1)


def test_accepting_a_mark_and_a_capital_on_one_word_keeps_both() -> None:
    document = make_document()
    document.add_suggestions([Suggestion(4, 0, "", 0.9, Source.REFERENCE, casing=Casing.CAPITALISED)])
    history = History(document)
    history.do(commands.accept_many(document, [1, 4]))
    assert document.word(0).rendered() == "So,"
    history.undo()
    assert document.word(0).rendered() == "so"


def test_accepting_one_proposal_decides_its_rivals_for_the_same_gap() -> None:
    document = make_document()
    document.add_suggestions(
        [
            Suggestion(4, 3, ".", 0.7, Source.REFERENCE),  # disagrees with the model's "?"
            Suggestion(5, 5, ".", 0.8, Source.MODEL),  # agrees with the reference's "."
        ]
    )
    history = History(document)
    history.do(commands.accept(document, 4))
    assert document.suggestion(2).status is Status.REJECTED
    history.do(commands.accept(document, 3))
    assert document.suggestion(5).status is Status.ACCEPTED
    history.undo()
    history.undo()
    assert {s.status for s in document.suggestions} == {Status.PENDING}


def test_one_rule_settles_suggestions_without_review() -> None:
    suggestions = [
        Suggestion(1, 0, ",", 0.95, Source.MODEL),
        Suggestion(2, 0, ".", 0.9, Source.REFERENCE),  # the same gap: the person's transcript wins
        Suggestion(3, 2, "?", 0.6, Source.MODEL),  # not sure enough for "confident"
        Suggestion(4, 3, "", 0.8, Source.MODEL, casing=Casing.CAPITALISED),  # a casing is its own slot
        Suggestion(5, 3, ".", 0.85, Source.MODEL),
        Suggestion(6, 4, ".", 0.99, Source.MODEL, status=Status.REJECTED),  # already decided
    ]
    assert commands.accept_confident(suggestions, commands.ApplyPolicy("confident", 0.7)) == [2, 4, 5]
    assert commands.accept_confident(suggestions, commands.ApplyPolicy("all")) == [2, 3, 4, 5]
    assert commands.accept_confident(suggestions, commands.ApplyPolicy("none")) == []
    with pytest.raises(commands.EditError, match="unknown apply policy"):
        commands.ApplyPolicy("most")
    with pytest.raises(commands.EditError, match="between 0 and 1"):
        commands.ApplyPolicy("confident", 1.5)


def test_every_decision_round_trips_through_its_project_row_and_unreadable_ones_are_refused() -> None:
    import json

    from app.core.decisions import (
        ACTIONS,
        Accept,
        AcceptMany,
        ChangeMark,
        DecisionError,
        EditWord,
        Recut,
        Redo,
        Reject,
        RejectMany,
        Restyle,
        SetMark,
        Settle,
        Undo,
        decode,
        encode,
    )

    restyled = Suggestion(
        9, 4, ".", 0.81, Source.MODEL, {"": 0.1, ".": 0.9}, evidence="heard",
        readings={"read": (",", 0.5), "heard": (".", 0.7)},
    )  # fmt: skip
    decisions = [
        Accept(3), Reject(4), AcceptMany((1, 2)), RejectMany((5,)), Settle((1,), (2, 3)),
        Restyle((1,), (restyled,), (6,), (9,)), Restyle((), (), (2,), (), joins=False),
        Restyle((), (), (), (3,), recalibrate=((3, 0.91), (4, 0.2))),
        SetMark(7, "."), ChangeMark(2, "?"), EditWord(1, "word"), Recut(((0, 480), None, (520, 900))),
        Undo(), Redo(),
    ]  # fmt: skip
    assert sorted({encode(d)[0] for d in decisions}) == sorted(ACTIONS)
    for decision in decisions:
        action, arguments = encode(decision)
        assert decode(action, json.loads(json.dumps(arguments))) == decision
    # A re-reading recorded by an earlier version lists its new confidences as pairs.
    earlier = {"reopen": [], "put": [], "drop": [], "accept": [3], "recalibrate": [[4, 0.2], [3, 0.91]]}
    assert decode("restyle", earlier) == Restyle((), (), (), (3,), recalibrate=((4, 0.2), (3, 0.91)))
    with pytest.raises(DecisionError, match="unknown action 'shrug'"):
        decode("shrug", {})
    with pytest.raises(DecisionError, match="accept: unreadable arguments"):
        decode("accept", {"suggestion": "three"})
